/**
 * A kubelet stand-in for the test cluster. It speaks only the real API, as each node's kubelet (a client
 * certificate of `system:node:<name>` in `system:nodes`, so the Node authorizer and NodeRestriction judge
 * it as they judge a kubelet): it registers its Nodes and renews their Leases, watches the pods bound to
 * them, starts each (a pod IP from the node's podCIDR, init containers in order, then the containers,
 * readiness probes), and on deletion does what a kubelet does within the grace period: each
 * container's preStop hook, then SIGTERM and, at the deadline, SIGKILL, the terminated states with the
 * termination messages read as the kubelet reads them, the terminal phase, and the final delete.
 *
 * What runs is ./images' business: drainguard's own image runs for real (./container: a process in the
 * pod's network namespace, the pod's volumes mounted, its ServiceAccount token from the TokenRequest
 * API); an Envoy container is the admin simulator (./envoy-main) in the pod's network namespace, its
 * admin API where the pod's bootstrap puts it and a listener on each container port (so a test can hold
 * a connection to pod-IP:port), and drainguard's preStop runs the real static drain program against
 * it; other images are never executed. Probes run only for containers that run (readiness; liveness
 * is not run). A pod whose template says the test plays its kubelet (./played-pods) is left alone.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type Server } from 'node:https';
import { connect } from 'node:net';
import { basename, dirname, join } from 'node:path';
import { ApiError, KubeApi, type KubeObject } from './api';
import { expandReferences, launchCommand, type ContainerLaunch, type Mount } from './container';
import { envoyAdminAddress, envoyVersionOfImage, listenerPorts, type AdminAddress } from './envoy';
import { startKubeletServer, type KubeletServing, type LogLookup } from './kubelet-server';
import type { EnvoyContainerOptions } from './envoy-main';
import type { FileImage, ImageCatalog, ImageContent } from './images';
import type { ClusterNetwork, PodSandbox } from './network';
import { imageId, kubeMicroTime, kubeTime, newContainerId, type ContainerSpec, type ContainerStatus, type EnvVarSpec, type HandlerSpec, type Pod, type ProbeSpec, type TerminatedState, type VolumeSpec } from './pod-spec';
import { isPlayedByTest } from './played-pods';
import { logTail, startProcess, waitUntil, type ManagedProcess } from './processes';
import { readTerminationMessageFile, terminationMessage } from './termination-message';

export interface NodeSpec {
  name: string;
  labels?: Record<string, string>;
  /** status.nodeInfo.kubeletVersion; default the control plane's release. */
  kubeletVersion?: string;
  /** status.nodeInfo.containerRuntimeVersion; default containerd 2.1. */
  containerRuntimeVersion?: string;
}

export interface KubeletOptions {
  nodes: NodeSpec[];
  /** A kubeconfig for a client certificate of the cluster's CA. */
  kubeconfigFor: (identity: { user: string; groups?: string[] }, stem: string) => string;
  network: ClusterNetwork;
  /** Where pods' files (volumes, roots, logs) go. */
  dir: string;
  images: ImageCatalog;
  /** The bundled ./envoy-main, and the Node that runs it. */
  envoyMain: string;
  node: string;
  kubernetesVersion: string;
  apiServerPort: number;
  /** The kubelet API's certificate and who may call it (./kubelet-server). */
  serving: Omit<KubeletServing, 'host' | 'port'>;
  log: (line: string) => void;
}

const DEFAULT_RUNTIME = 'containerd://2.1.4';
/** The kubelet's port (its default, 10250): where kube-apiserver reaches ./kubelet-server. */
const KUBELET_PORT = 10250;
/** How often a Lease is renewed (the kubelet's default: a quarter of its 40 s duration). */
const LEASE_RENEW_MS = 10_000;
/** Restart backoff of a crashed container, capped as the kubelet's is (at 5 minutes there; short here). */
const MAX_RESTART_BACKOFF_MS = 10_000;

/** Resolves after `ms`, or at once when the signal fires. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });
}

interface ContainerRecord {
  spec: ContainerSpec;
  content: ImageContent;
  containerID: string;
  startedAt: string;
  imageID: string;
  process?: ManagedProcess;
  ready: boolean;
  restartCount: number;
  lastTerminated?: TerminatedState;
  terminated?: TerminatedState;
  /** The file bind-mounted at terminationMessagePath. */
  terminationLog: string;
  logFile: string;
  init: boolean;
  probeStop?: AbortController;
}

/** One pod on one node, from start to final delete. Operations on it are serialized. */
class PodWorker {
  private readonly dir: string;
  private readonly containers = new Map<string, ContainerRecord>();
  private readonly volumes = new Map<string, string>();
  private sandbox?: PodSandbox;
  private envoy?: { process: ManagedProcess; admin: AdminAddress | undefined };
  private podIP = '';
  private startTime = '';
  private state: 'new' | 'running' | 'terminating' | 'done' = 'new';
  private chain: Promise<void> = Promise.resolve();
  private readonly stopping = new AbortController();
  private initFailure?: string;

  constructor(
    private pod: Pod,
    private readonly node: NodeAgent,
  ) {
    this.dir = join(node.options.dir, 'pods', pod.metadata.uid!);
  }

  private get options(): KubeletOptions {
    return this.node.options;
  }

  private get api(): KubeApi {
    return this.node.api;
  }

  private get name(): string {
    return `${this.pod.metadata.namespace}/${this.pod.metadata.name}`;
  }

  /** Is this the pod `namespace/name`? */
  is(namespace: string, name: string): boolean {
    return this.pod.metadata.namespace === namespace && this.pod.metadata.name === name;
  }

  /** The log of container `name`, as the kubelet's /containerLogs finds it. */
  log(name: string): LogLookup {
    const record = this.containers.get(name);
    if (record) return { file: record.logFile };
    const declared = [...(this.pod.spec.initContainers ?? []), ...this.pod.spec.containers].some((c) => c.name === name);
    return declared
      ? { status: 400, message: `container "${name}" in pod "${this.pod.metadata.name}" is waiting to start: ContainerCreating` }
      : { status: 400, message: `container ${name} is not valid for pod ${this.pod.metadata.name}` };
  }

  private enqueue(step: () => Promise<void>): void {
    this.chain = this.chain.then(step).catch((error: unknown) => this.options.log(`pod ${this.name}: ${(error as Error).stack ?? String(error)}`));
  }

  /** A new version of the pod from the watch. */
  sync(pod: Pod): void {
    this.pod = pod;
    if (this.state === 'new' && !pod.metadata.deletionTimestamp && !['Succeeded', 'Failed'].includes(pod.status?.phase ?? '')) {
      this.state = 'running';
      this.enqueue(() => this.start());
    } else if (pod.metadata.deletionTimestamp && (this.state === 'running' || this.state === 'new')) {
      const wasStarted = this.state === 'running';
      this.state = 'terminating';
      this.enqueue(() => this.terminate(wasStarted));
    }
  }

  /** The pod is gone from the API (deleted by us, or forcibly): everything stops now. */
  gone(): void {
    this.stopping.abort();
    this.enqueue(() => this.cleanup(true));
  }

  private path(...parts: string[]): string {
    return join(this.dir, ...parts);
  }

  private async ensureSandbox(): Promise<PodSandbox | undefined> {
    if (this.pod.spec.hostNetwork) return undefined;
    this.sandbox ??= this.options.network.addSandbox(this.podIP);
    return this.sandbox;
  }

  // ---- volumes ---------------------------------------------------------------------------------

  private fieldValue(fieldPath: string): string {
    const meta = this.pod.metadata;
    const labelOrAnnotation = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
    if (labelOrAnnotation) return (meta[labelOrAnnotation[1] as 'labels' | 'annotations'] ?? {})[labelOrAnnotation[2]!] ?? '';
    switch (fieldPath) {
      case 'metadata.name':
        return meta.name;
      case 'metadata.namespace':
        return meta.namespace ?? '';
      case 'metadata.uid':
        return meta.uid ?? '';
      case 'spec.nodeName':
        return this.pod.spec.nodeName ?? '';
      case 'spec.serviceAccountName':
        return this.pod.spec.serviceAccountName ?? 'default';
      case 'status.podIP':
      case 'status.podIPs':
        return this.podIP;
      case 'status.hostIP':
      case 'status.hostIPs':
        return this.options.network.hostAddress;
      default:
        throw new Error(`the test kubelet cannot resolve fieldRef ${fieldPath}`);
    }
  }

  private async namespaced(kind: 'configmaps' | 'secrets', name: string, optional?: boolean): Promise<Record<string, string> | undefined> {
    const object = await this.api.find<{ data?: Record<string, string> }>(`/api/v1/namespaces/${this.pod.metadata.namespace}/${kind}/${name}`);
    if (!object) {
      if (optional) return undefined;
      throw new Error(`${kind} ${name} not found`);
    }
    const data = object.data ?? {};
    return kind === 'secrets' ? Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')])) : data;
  }

  private writeKeys(dir: string, data: Record<string, string>, items: { key: string; path: string; mode?: number }[] | undefined, mode: number): void {
    const entries = items ? items.map((item) => [item.path, data[item.key] ?? '', item.mode ?? mode] as const) : Object.entries(data).map(([k, v]) => [k, v, mode] as const);
    for (const [path, value, fileMode] of entries) {
      const file = join(dir, path);
      mkdirSync(dirname(file), { recursive: true, mode: 0o755 });
      writeFileSync(file, value, { mode: fileMode });
      chmodSync(file, fileMode);
    }
  }

  private async serviceAccountToken(expirationSeconds?: number, audience?: string): Promise<string> {
    const account = this.pod.spec.serviceAccountName ?? 'default';
    const answer = await this.api.create<{ status: { token: string } }>(`/api/v1/namespaces/${this.pod.metadata.namespace}/serviceaccounts/${account}/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        audiences: audience ? [audience] : [],
        expirationSeconds: expirationSeconds ?? 3607,
        boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: this.pod.metadata.name, uid: this.pod.metadata.uid },
      },
    });
    return answer.status.token;
  }

  /** The directory of this machine that holds volume `name`, made when first needed. */
  private async volume(name: string): Promise<string> {
    const existing = this.volumes.get(name);
    if (existing) return existing;
    const spec = (this.pod.spec.volumes ?? []).find((v) => v.name === name);
    if (!spec) throw new Error(`no volume ${name}`);
    const dir = this.path('volumes', name);
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, spec.emptyDir ? 0o777 : 0o755);
    await this.fillVolume(spec, dir);
    this.volumes.set(name, dir);
    return dir;
  }

  private async fillVolume(spec: VolumeSpec, dir: string): Promise<void> {
    if (spec.emptyDir) return;
    if (spec.image) {
      // An image volume: the image's files, unpacked as a runtime unpacks them (and always mounted
      // read-only, below). Only images this machine can play have files to give.
      const content = this.options.images(spec.image.reference);
      if (content.kind !== 'files' || content.hostUsr) throw new Error(`the test kubelet cannot unpack image ${spec.image.reference} into volume ${spec.name}`);
      for (const [path, source] of Object.entries(content.files)) {
        const target = join(dir, path);
        mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
        copyFileSync(source, target);
        chmodSync(target, statSync(source).mode & 0o777);
      }
      return;
    }
    if (spec.configMap) {
      const data = await this.namespaced('configmaps', spec.configMap.name, spec.configMap.optional);
      this.writeKeys(dir, data ?? {}, spec.configMap.items, spec.configMap.defaultMode ?? 0o644);
      return;
    }
    if (spec.secret) {
      const data = await this.namespaced('secrets', spec.secret.secretName, spec.secret.optional);
      this.writeKeys(dir, data ?? {}, spec.secret.items, spec.secret.defaultMode ?? 0o644);
      return;
    }
    if (spec.downwardAPI) {
      const data = Object.fromEntries(spec.downwardAPI.items.map((item) => [item.path, this.fieldValue(item.fieldRef!.fieldPath)]));
      this.writeKeys(dir, data, undefined, spec.downwardAPI.defaultMode ?? 0o644);
      return;
    }
    if (spec.projected) {
      const mode = spec.projected.defaultMode ?? 0o644;
      for (const source of spec.projected.sources) {
        if (source.serviceAccountToken) {
          const token = await this.serviceAccountToken(source.serviceAccountToken.expirationSeconds, source.serviceAccountToken.audience);
          this.writeKeys(dir, { [source.serviceAccountToken.path]: token }, undefined, mode);
        } else if (source.configMap) {
          this.writeKeys(dir, (await this.namespaced('configmaps', source.configMap.name, source.configMap.optional)) ?? {}, source.configMap.items, mode);
        } else if (source.secret) {
          this.writeKeys(dir, (await this.namespaced('secrets', source.secret.name, source.secret.optional)) ?? {}, source.secret.items, mode);
        } else if (source.downwardAPI) {
          this.writeKeys(dir, Object.fromEntries(source.downwardAPI.items.map((item) => [item.path, this.fieldValue(item.fieldRef!.fieldPath)])), undefined, mode);
        }
      }
      return;
    }
    throw new Error(`the test kubelet cannot provide volume ${spec.name} (${Object.keys(spec).filter((k) => k !== 'name').join(', ')})`);
  }

  private async mountsOf(container: ContainerSpec, record: ContainerRecord): Promise<Mount[]> {
    const mounts: Mount[] = [];
    for (const mount of container.volumeMounts ?? []) {
      const dir = await this.volume(mount.name);
      const source = mount.subPath ? join(dir, mount.subPath) : dir;
      if (mount.subPath && !existsSync(source)) mkdirSync(source, { recursive: true, mode: 0o777 });
      // The kubelet mounts an image volume read-only whatever the mount says (pkg/kubelet/kubelet_pods.go makeMounts).
      const imageVolume = (this.pod.spec.volumes ?? []).some((v) => v.name === mount.name && v.image !== undefined);
      mounts.push({ target: mount.mountPath, source, readOnly: mount.readOnly === true || imageVolume, file: mount.subPath ? !isDirectory(source) : false });
    }
    mounts.push({ target: container.terminationMessagePath ?? '/dev/termination-log', source: record.terminationLog, readOnly: false, file: true });
    const hosts = this.path('etc-hosts');
    if (!existsSync(hosts)) writeFileSync(hosts, `127.0.0.1\tlocalhost\n::1\tlocalhost\n${this.podIP}\t${this.pod.metadata.name}\n`, { mode: 0o644 });
    mounts.push({ target: '/etc/hosts', source: hosts, readOnly: true, file: true });
    return mounts;
  }

  // ---- environment -----------------------------------------------------------------------------

  private async environment(container: ContainerSpec, image: FileImage | undefined): Promise<Record<string, string>> {
    const env: Record<string, string> = { ...(image?.env ?? {}), HOSTNAME: this.pod.metadata.name };
    // What client-go's in-cluster configuration reads. The kubelet gives the `kubernetes` Service's
    // ClusterIP; with no kube-proxy here nothing routes that address, so (as clusters without kube-proxy
    // configure it) the API server's own address.
    env.KUBERNETES_SERVICE_HOST = this.options.network.hostAddress;
    env.KUBERNETES_SERVICE_PORT = String(this.options.apiServerPort);
    for (const from of container.envFrom ?? []) {
      const data = from.configMapRef
        ? await this.namespaced('configmaps', from.configMapRef.name, from.configMapRef.optional)
        : from.secretRef
          ? await this.namespaced('secrets', from.secretRef.name, from.secretRef.optional)
          : undefined;
      for (const [key, value] of Object.entries(data ?? {})) env[`${from.prefix ?? ''}${key}`] = value;
    }
    for (const variable of container.env ?? []) env[variable.name] = await this.envValue(variable, env);
    // The runtime's (runc's setupUser): without a HOME from the image or the pod, the user's home
    // directory from the image's /etc/passwd, else `/`.
    env.HOME ??= image?.homes[this.userOf(container, image).uid] ?? '/';
    return env;
  }

  private async envValue(variable: EnvVarSpec, env: Record<string, string>): Promise<string> {
    if (variable.value !== undefined) return expandReferences(variable.value, env);
    const from = variable.valueFrom;
    if (from?.fieldRef) return this.fieldValue(from.fieldRef.fieldPath);
    if (from?.configMapKeyRef) return (await this.namespaced('configmaps', from.configMapKeyRef.name, from.configMapKeyRef.optional))?.[from.configMapKeyRef.key] ?? '';
    if (from?.secretKeyRef) return (await this.namespaced('secrets', from.secretKeyRef.name, from.secretKeyRef.optional))?.[from.secretKeyRef.key] ?? '';
    if (from?.resourceFieldRef) return '0';
    return '';
  }

  private userOf(container: ContainerSpec, image: FileImage | undefined): { uid: number; gid: number } {
    const pod = this.pod.spec.securityContext ?? {};
    const own = container.securityContext ?? {};
    const uid = own.runAsUser ?? pod.runAsUser ?? image?.user.uid ?? 0;
    const gid = own.runAsGroup ?? pod.runAsGroup ?? (own.runAsUser ?? pod.runAsUser) ?? image?.user.gid ?? 0;
    return { uid, gid };
  }

  private async launchFor(record: ContainerRecord, argv: string[], purpose: string): Promise<{ command: string; args: string[]; env: NodeJS.ProcessEnv }> {
    const { spec, content } = record;
    const image = content.kind === 'files' ? content : undefined;
    const env = await this.environment(spec, image);
    const launch: ContainerLaunch = {
      root: this.path('containers', spec.name, `${purpose}-root`),
      netns: (await this.ensureSandbox())?.namespace,
      image: image ?? { files: {}, hostUsr: false },
      mounts: await this.mountsOf(spec, record),
      readOnlyRoot: spec.securityContext?.readOnlyRootFilesystem === true,
      user: this.userOf(spec, image),
      argv: argv.map((arg) => expandReferences(arg, env)),
      env,
      workingDir: spec.workingDir ?? image?.workingDir,
    };
    rmSync(launch.root, { recursive: true, force: true });
    return launchCommand(launch, this.path('containers', spec.name, `${purpose}.sh`));
  }

  // ---- start -----------------------------------------------------------------------------------

  private newRecord(spec: ContainerSpec, init: boolean): ContainerRecord {
    const dir = this.path('containers', spec.name);
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    const terminationLog = join(dir, `termination-log-${randomBytes(4).toString('hex')}`);
    writeFileSync(terminationLog, '');
    // The kubelet makes the file writable by any user (kuberuntime makeMounts: chmod 0666).
    chmodSync(terminationLog, 0o666);
    return {
      spec,
      content: this.options.images(spec.image),
      containerID: newContainerId(),
      startedAt: kubeTime(),
      imageID: imageId(spec.image),
      ready: false,
      restartCount: 0,
      terminationLog,
      logFile: join(dir, 'log'),
      init,
    };
  }

  private argvOf(record: ContainerRecord): string[] {
    const image = record.content.kind === 'files' ? record.content : undefined;
    const command = record.spec.command ?? image?.entrypoint ?? [];
    const args = record.spec.args ?? (record.spec.command ? [] : image?.cmd ?? []);
    return [...command, ...args];
  }

  private async startProcessOf(record: ContainerRecord): Promise<ManagedProcess> {
    const { command, args, env } = await this.launchFor(record, this.argvOf(record), 'main');
    const process = startProcess(`${this.name}/${record.spec.name}`, command, args, record.logFile, { env });
    record.process = process;
    return process;
  }

  /**
   * Every volume, before any container starts, as the kubelet mounts them; while one cannot be made (a
   * Secret that does not exist yet) the pod waits in ContainerCreating, with a FailedMount Event, and the
   * kubelet tries again.
   */
  private async mountVolumes(): Promise<boolean> {
    let reported = false;
    for (;;) {
      try {
        for (const volume of this.pod.spec.volumes ?? []) await this.volume(volume.name);
        return true;
      } catch (error) {
        if (!reported) {
          reported = true;
          const message = `MountVolume.SetUp failed: ${(error as Error).message}`;
          await this.node.event(this.pod, 'Warning', 'FailedMount', message);
          await this.patchStatus({ phase: 'Pending', containerStatuses: this.pod.spec.containers.map((c) => ({ name: c.name, state: { waiting: { reason: 'ContainerCreating' } }, ready: false, restartCount: 0, image: c.image, imageID: '' })) });
        }
        await pause(2000, this.stopping.signal);
        if (this.stopping.signal.aborted || this.state !== 'running') return false;
      }
    }
  }

  private async start(): Promise<void> {
    this.podIP = this.pod.spec.hostNetwork ? this.options.network.hostAddress : this.node.allocateIp();
    this.startTime = kubeTime();
    mkdirSync(this.dir, { recursive: true, mode: 0o755 });
    if (!(await this.mountVolumes())) return;
    for (const spec of this.pod.spec.initContainers ?? []) this.containers.set(spec.name, this.newRecord(spec, true));
    await this.writeStatus();
    for (const record of [...this.containers.values()]) {
      if (this.stopping.signal.aborted || this.state !== 'running') return;
      if (record.spec.restartPolicy === 'Always') {
        await this.runLongLived(record);
        continue;
      }
      const exit = await this.runToCompletion(record);
      if (exit.exitCode !== 0) {
        this.initFailure = `init container ${record.spec.name} failed: exit ${exit.exitCode}`;
        this.options.log(`pod ${this.name}: ${this.initFailure}; log:\n${existsSync(record.logFile) ? readFileSync(record.logFile, 'utf8').slice(-2000) : ''}`);
        await this.writeStatus();
        return;
      }
      await this.writeStatus();
    }
    for (const spec of this.pod.spec.containers) {
      const record = this.newRecord(spec, false);
      this.containers.set(spec.name, record);
      await this.runLongLived(record);
    }
    await this.writeStatus();
  }

  /** An init container: run until it exits (an image not run here completes at once). */
  private async runToCompletion(record: ContainerRecord): Promise<{ exitCode: number }> {
    record.startedAt = kubeTime();
    if (record.content.kind !== 'files') {
      record.terminated = { exitCode: 0, reason: 'Completed', startedAt: record.startedAt, finishedAt: kubeTime(), containerID: record.containerID };
      return { exitCode: 0 };
    }
    const process = await this.startProcessOf(record);
    const { code, signal } = await process.exited;
    const exitCode = code ?? 128 + (signal ? signalNumber(signal) : 9);
    record.terminated = this.terminatedState(record, exitCode);
    return { exitCode };
  }

  /** A container that runs until the pod ends (restarted by restartPolicy Always when it crashes). */
  private async runLongLived(record: ContainerRecord): Promise<void> {
    record.startedAt = kubeTime();
    if (record.content.kind === 'envoy') await this.startEnvoy(record);
    if (record.content.kind !== 'files') {
      record.ready = true;
      return;
    }
    const process = await this.startProcessOf(record);
    void process.exited.then(() => this.onExit(record, process));
    this.startProbes(record);
  }

  private onExit(record: ContainerRecord, process: ManagedProcess): void {
    if (this.state !== 'running' || record.process !== process) return;
    record.probeStop?.abort();
    const code = process.child.exitCode ?? 128 + signalNumber(process.child.signalCode ?? 'SIGKILL');
    const policy = this.pod.spec.restartPolicy ?? 'Always';
    if (policy === 'Never' || (policy === 'OnFailure' && code === 0)) {
      // Done for good: the pod ends when its last container does.
      record.terminated = this.terminatedState(record, code);
      record.ready = false;
      const main = [...this.containers.values()].filter((r) => !r.init);
      const ended = main.every((r) => r.terminated);
      const phase = ended ? (main.every((r) => r.terminated!.exitCode === 0) ? 'Succeeded' : 'Failed') : undefined;
      this.enqueue(() => this.writeStatus(undefined, undefined, phase));
      return;
    }
    this.options.log(`pod ${this.name}: container ${record.spec.name} exited ${code}; log ends:\n${logTail(process)}`);
    record.lastTerminated = this.terminatedState(record, code);
    record.ready = false;
    record.process = undefined;
    const backoff = Math.min(1000 * 2 ** record.restartCount, MAX_RESTART_BACKOFF_MS);
    this.enqueue(async () => {
      await this.writeStatus(record.spec.name, { waiting: { reason: 'CrashLoopBackOff', message: `back-off restarting failed container ${record.spec.name}` } });
      await pause(backoff, this.stopping.signal);
      if (this.state !== 'running') return;
      record.restartCount++;
      record.containerID = newContainerId();
      await this.runLongLived(record);
      await this.writeStatus();
    });
  }

  private terminatedState(record: ContainerRecord, exitCode: number, runtimeMessage?: string): TerminatedState {
    const containers = this.pod.spec.containers.length + (this.pod.spec.initContainers ?? []).length;
    const message = terminationMessage(
      {
        exitCode,
        fileText: readTerminationMessageFile(record.terminationLog),
        policy: record.spec.terminationMessagePolicy,
        log: existsSync(record.logFile) ? readFileSync(record.logFile, 'utf8') : '',
        runtimeMessage,
      },
      containers,
    );
    return {
      exitCode,
      ...(exitCode > 128 ? { signal: exitCode - 128 } : {}),
      reason: exitCode === 0 ? 'Completed' : 'Error',
      ...(message !== '' ? { message } : {}),
      startedAt: record.startedAt,
      finishedAt: kubeTime(),
      containerID: record.containerID,
    };
  }

  // ---- probes ----------------------------------------------------------------------------------

  private portOf(spec: ContainerSpec, port: number | string): number {
    if (typeof port === 'number') return port;
    const named = (spec.ports ?? []).find((p) => p.name === port);
    if (!named) throw new Error(`container ${spec.name} has no port named ${port}`);
    return named.containerPort;
  }

  private probeOnce(spec: ContainerSpec, probe: ProbeSpec): Promise<boolean> {
    const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
    if (probe.httpGet) {
      const get = probe.httpGet;
      const request = get.scheme === 'HTTPS' ? httpsRequest : httpRequest;
      return new Promise((resolve) => {
        // The kubelet's probes do not verify the certificate.
        const req = request(
          { host: get.host ?? this.podIP, port: this.portOf(spec, get.port), path: get.path ?? '/', method: 'GET', rejectUnauthorized: false, timeout: timeoutMs, headers: { 'user-agent': 'kube-probe/1.37' } },
          (res) => {
            res.resume();
            resolve((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 400);
          },
        );
        req.on('timeout', () => req.destroy());
        req.on('error', () => resolve(false));
        req.end();
      });
    }
    if (probe.tcpSocket) {
      const port = this.portOf(spec, probe.tcpSocket.port);
      return new Promise((resolve) => {
        const socket = connect({ host: probe.tcpSocket!.host ?? this.podIP, port, timeout: timeoutMs });
        socket.once('connect', () => {
          socket.destroy();
          resolve(true);
        });
        socket.once('error', () => resolve(false));
        socket.once('timeout', () => {
          socket.destroy();
          resolve(false);
        });
      });
    }
    // exec probes are not run by the stand-in: taken as passing.
    return Promise.resolve(true);
  }

  private startProbes(record: ContainerRecord): void {
    const probe = record.spec.readinessProbe;
    if (!probe) {
      record.ready = true;
      return;
    }
    const stop = new AbortController();
    record.probeStop = stop;
    const signal = AbortSignal.any([stop.signal, this.stopping.signal]);
    void (async () => {
      await pause((probe.initialDelaySeconds ?? 0) * 1000, signal);
      let failures = 0;
      let successes = 0;
      while (!signal.aborted) {
        const ok = await this.probeOnce(record.spec, probe);
        if (signal.aborted) return;
        successes = ok ? successes + 1 : 0;
        failures = ok ? 0 : failures + 1;
        const ready = record.ready ? failures < (probe.failureThreshold ?? 3) : successes >= (probe.successThreshold ?? 1);
        if (ready !== record.ready && this.state === 'running') {
          record.ready = ready;
          this.enqueue(() => this.writeStatus());
        }
        // Until the first success the kubelet probes at the period too; a short first interval keeps start-up quick.
        await pause(record.ready ? (probe.periodSeconds ?? 10) * 1000 : Math.min((probe.periodSeconds ?? 10) * 1000, 500), signal);
      }
    })();
  }

  // ---- status ----------------------------------------------------------------------------------

  private statusOf(record: ContainerRecord, override?: ContainerStatus['state']): ContainerStatus {
    const running = !record.terminated && (record.process?.running() ?? record.content.kind !== 'files');
    const state: ContainerStatus['state'] =
      override ?? (record.terminated ? { terminated: record.terminated } : running ? { running: { startedAt: record.startedAt } } : { waiting: { reason: 'PodInitializing' } });
    return {
      name: record.spec.name,
      state,
      lastState: record.lastTerminated ? { terminated: record.lastTerminated } : {},
      ready: !record.terminated && record.ready && running,
      started: running,
      restartCount: record.restartCount,
      image: record.spec.image,
      imageID: record.imageID,
      ...(record.terminated || running ? { containerID: record.containerID } : {}),
    };
  }

  private async writeStatus(overrideFor?: string, override?: ContainerStatus['state'], phase?: string): Promise<void> {
    const records = [...this.containers.values()];
    const init = records.filter((r) => r.init);
    const main = records.filter((r) => !r.init);
    const pending = (spec: ContainerSpec): ContainerStatus => ({
      name: spec.name,
      state: { waiting: { reason: 'PodInitializing' } },
      lastState: {},
      ready: false,
      started: false,
      restartCount: 0,
      image: spec.image,
      imageID: '',
    });
    const mainStatuses = this.pod.spec.containers.map((spec) => {
      const record = this.containers.get(spec.name);
      return record && !record.init ? this.statusOf(record, spec.name === overrideFor ? override : undefined) : pending(spec);
    });
    const initialized = init.every((r) => r.terminated?.exitCode === 0 || r.spec.restartPolicy === 'Always') && main.length > 0;
    const containersReady = mainStatuses.every((s) => s.ready);
    const now = kubeTime();
    const condition = (type: string, status: boolean) => ({ type, status: status ? 'True' : 'False', lastProbeTime: null, lastTransitionTime: now });
    const status = {
      phase: phase ?? (this.initFailure ? 'Pending' : 'Running'),
      hostIP: this.options.network.hostAddress,
      hostIPs: [{ ip: this.options.network.hostAddress }],
      podIP: this.podIP,
      podIPs: [{ ip: this.podIP }],
      startTime: this.startTime,
      conditions: [
        condition('PodReadyToStartContainers', true),
        condition('Initialized', initialized),
        condition('Ready', containersReady && initialized),
        condition('ContainersReady', containersReady),
        condition('PodScheduled', true),
      ],
      ...(init.length > 0 || (this.pod.spec.initContainers ?? []).length > 0 ? { initContainerStatuses: init.map((r) => this.statusOf(r)) } : {}),
      containerStatuses: mainStatuses,
    };
    await this.patchStatus(status);
  }

  private async patchStatus(status: unknown): Promise<void> {
    const { namespace, name } = this.pod.metadata;
    try {
      await this.api.patch(`/api/v1/namespaces/${namespace}/pods/${name}/status`, { status }, 'merge');
    } catch (error) {
      // Gone meanwhile (a forced delete): nothing to report any more.
      if (error instanceof ApiError && error.status === 404) return;
      throw error;
    }
  }

  // ---- termination -----------------------------------------------------------------------------

  private async startEnvoy(record: ContainerRecord): Promise<void> {
    if (this.envoy) return;
    const sandbox = await this.ensureSandbox();
    const admin = await envoyAdminAddress(record.spec, this.pod.spec.initContainers ?? [], async (path) => {
      for (const mount of record.spec.volumeMounts ?? []) {
        if (!path.startsWith(`${mount.mountPath}/`)) continue;
        const volume = (this.pod.spec.volumes ?? []).find((v) => v.name === mount.name);
        if (!volume?.configMap) continue;
        const file = join(await this.volume(mount.name), path.slice(mount.mountPath.length + 1));
        return existsSync(file) ? readFileSync(file, 'utf8') : undefined;
      }
      return undefined;
    });
    const hostPathOf = async (containerPath: string): Promise<string | undefined> => {
      for (const mount of record.spec.volumeMounts ?? []) {
        if (containerPath.startsWith(`${mount.mountPath}/`)) return join(await this.volume(mount.name), containerPath.slice(mount.mountPath.length + 1));
      }
      return undefined;
    };
    const socketHostPath = admin && 'unixPath' in admin ? await hostPathOf(admin.unixPath) : undefined;
    const options: EnvoyContainerOptions = {
      user: this.userOf(record.spec, undefined),
      version: envoyVersionOfImage(record.spec.image) ?? '1.31.2',
      // A socket's path may have 107 bytes (sun_path), which a pod's volume on this host can exceed: the
      // simulator binds the socket relative to its working directory, the volume's.
      ...(socketHostPath ? { unixSocketPath: basename(socketHostPath) } : {}),
      ...(admin && 'port' in admin ? { tcpAddress: { host: admin.host, port: admin.port } } : {}),
      listeners: listenerPorts(record.spec, admin).map((port) => ({ statName: `0.0.0.0_${port}`, address: { host: '0.0.0.0', port } })),
    };
    if (admin && 'unixPath' in admin && !socketHostPath) {
      this.options.log(`pod ${this.name}: Envoy's admin socket ${admin.unixPath} is in no volume; no admin API`);
    }
    const envoyLog = this.path('containers', record.spec.name, 'envoy.log');
    const argv = [this.options.node, this.options.envoyMain, JSON.stringify(options)];
    const process = startProcess(
      `${this.name}/${record.spec.name} (Envoy simulator)`,
      sandbox ? 'ip' : argv[0]!,
      sandbox ? ['netns', 'exec', sandbox.namespace, ...argv] : argv.slice(1),
      envoyLog,
      socketHostPath ? { cwd: dirname(socketHostPath) } : {},
    );
    this.envoy = { process, admin };
    await waitUntil(`the Envoy simulator of ${this.name}`, async () => readFileSync(envoyLog, 'utf8').includes('ready '), { process, intervalMs: 20 });
  }

  /** Runs a preStop handler within the deadline; a failure is reported as the kubelet reports it. */
  private async runHook(record: ContainerRecord, hook: HandlerSpec, deadline: number): Promise<void> {
    const remainingMs = Math.max(deadline - Date.now(), 0);
    if (hook.sleep) {
      await pause(Math.min(hook.sleep.seconds * 1000, remainingMs), new AbortController().signal);
      return;
    }
    if (hook.httpGet) {
      const ok = await this.probeOnce(record.spec, { httpGet: hook.httpGet, timeoutSeconds: Math.max(remainingMs / 1000, 0.001) });
      if (!ok) await this.hookFailed(record, `Http lifecycle hook (${hook.httpGet.path ?? '/'}) for Container "${record.spec.name}" in Pod "${this.pod.metadata.name}" failed`);
      return;
    }
    if (!hook.exec) return;
    if (record.content.kind === 'opaque') {
      this.options.log(`pod ${this.name}: preStop of ${record.spec.name} not run (the test kubelet cannot run ${record.spec.image})`);
      return;
    }
    if (record.content.kind === 'envoy') await this.startEnvoy(record);
    const { command, args, env } = await this.launchFor(record, hook.exec.command, 'prestop');
    const output: Buffer[] = [];
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), remainingMs);
    const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
    clearTimeout(timer);
    const text = Buffer.concat(output).toString('utf8');
    writeFileSync(this.path('containers', record.spec.name, 'prestop.log'), text);
    if (code !== 0) {
      await this.hookFailed(
        record,
        `Exec lifecycle hook (${JSON.stringify(hook.exec.command)}) for Container "${record.spec.name}" in Pod "${this.pod.metadata.name}" failed - error: command '${hook.exec.command.join(' ')}' exited with ${code ?? 137}: , message: ${JSON.stringify(text.slice(-1024))}`,
      );
    }
  }

  private async hookFailed(record: ContainerRecord, message: string): Promise<void> {
    this.options.log(`pod ${this.name}: ${message}`);
    await this.node.event(this.pod, 'Warning', 'FailedPreStopHook', message, record.spec.name);
  }

  /** Stops one container: its preStop, then SIGTERM, SIGKILL at the deadline; records how it ended. */
  private async stopContainer(record: ContainerRecord, deadline: number, runHook: boolean): Promise<void> {
    if (record.terminated) return;
    record.probeStop?.abort();
    const hook = record.spec.lifecycle?.preStop;
    if (hook && runHook) {
      try {
        await this.runHook(record, hook, deadline);
      } catch (error) {
        await this.hookFailed(record, `PreStopHook for Container "${record.spec.name}" in Pod "${this.pod.metadata.name}" failed: ${(error as Error).message}`);
      }
    }
    let exitCode = 0;
    if (record.content.kind === 'envoy' && this.envoy) {
      await this.envoy.process.stop(Math.max(deadline - Date.now(), 0));
      exitCode = this.envoy.process.child.exitCode ?? 137;
    } else if (record.process) {
      const process = record.process;
      await process.stop(Math.max(deadline - Date.now(), 0));
      exitCode = process.child.exitCode ?? 128 + signalNumber(process.child.signalCode ?? 'SIGKILL');
    }
    record.terminated = this.terminatedState(record, exitCode);
  }

  private async terminate(started: boolean): Promise<void> {
    const grace = this.pod.metadata.deletionGracePeriodSeconds ?? this.pod.spec.terminationGracePeriodSeconds ?? 30;
    const deadline = Date.now() + grace * 1000;
    if (started) {
      const main = [...this.containers.values()].filter((r) => !r.init);
      // Every container's preStop and stop run at once; native sidecars stop after them, last first.
      await Promise.all(main.map((record) => this.stopContainer(record, deadline, true)));
      const sidecars = [...this.containers.values()].filter((r) => r.init && r.spec.restartPolicy === 'Always').reverse();
      for (const record of sidecars) await this.stopContainer(record, deadline, true);
      const ended = [...this.containers.values()].filter((r) => !r.init).map((r) => r.terminated?.exitCode ?? 0);
      const phase = ended.every((code) => code === 0) ? 'Succeeded' : 'Failed';
      await this.whileUnreachable('final status', () => this.writeStatus(undefined, undefined, phase)).catch((error: unknown) =>
        this.options.log(`pod ${this.name}: final status: ${(error as Error).message}`),
      );
    }
    const { namespace, name, uid } = this.pod.metadata;
    await this.whileUnreachable('final delete', () => this.api.delete(`/api/v1/namespaces/${namespace}/pods/${name}`, { gracePeriodSeconds: 0, uid }));
    await this.cleanup(false);
  }

  /**
   * An API call retried while kube-apiserver cannot be reached (it restarts), as the kubelet's status
   * manager keeps syncing a pod's status, and deletes a terminated pod, until the API server answers.
   * An answer (an ApiError) is final.
   */
  private async whileUnreachable<T>(what: string, call: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (error) {
        if (error instanceof ApiError || this.stopping.signal.aborted) throw error;
        if (attempt === 1) this.options.log(`pod ${this.name}: ${what}: ${(error as Error).message}; retrying until kube-apiserver answers`);
        await pause(Math.min(250 * attempt, 2000), this.stopping.signal);
      }
    }
  }

  private async cleanup(kill: boolean): Promise<void> {
    if (this.state === 'done') return;
    this.state = 'done';
    for (const record of this.containers.values()) {
      record.probeStop?.abort();
      if (record.process) await record.process.stop(kill ? 0 : 1000);
    }
    if (this.envoy) await this.envoy.process.stop(kill ? 0 : 1000);
    if (this.sandbox) this.options.network.removeSandbox(this.sandbox);
    if (this.podIP && !this.pod.spec.hostNetwork) this.node.releaseIp(this.podIP);
    removePodDir(this.dir);
    this.node.forget(this.pod.metadata.uid!);
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.cleanup(true);
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return true;
  }
}

const SIGNALS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGTERM: 15 };
function signalNumber(signal: string): number {
  return SIGNALS[signal] ?? 9;
}

/** Deletes a pod's files; refuses when anything is still mounted under them in this mount namespace. */
function removePodDir(dir: string): void {
  const mounted = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point) => point !== undefined && (point === dir || point.startsWith(`${dir}/`)));
  if (mounted.length > 0) throw new Error(`still mounted under ${dir}: ${mounted.join(', ')}; not deleting it`);
  rmSync(dir, { recursive: true, force: true });
}

/** One node: its registration, Lease, pod watch and pod workers. */
class NodeAgent {
  readonly api: KubeApi;
  private readonly workers = new Map<string, PodWorker>();
  private readonly usedIps = new Set<string>();
  /** The host part of the last pod IP given (254: the first is .2). */
  private lastHost = 254;
  private podCidrBase = '';
  private readonly stopping = new AbortController();
  private watching?: Promise<void>;

  constructor(
    readonly spec: NodeSpec,
    readonly options: KubeletOptions,
  ) {
    this.api = new KubeApi(options.kubeconfigFor({ user: `system:node:${spec.name}`, groups: ['system:nodes'] }, `kubelet-${spec.name}`));
  }

  private get name(): string {
    return this.spec.name;
  }

  async register(): Promise<void> {
    const { name } = this;
    const arch = process.arch === 'arm64' ? 'arm64' : 'amd64';
    const existing = await this.api.find(`/api/v1/nodes/${name}`);
    if (!existing) {
      await this.api.create('/api/v1/nodes', {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: {
          name,
          labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': arch, 'beta.kubernetes.io/os': 'linux', 'beta.kubernetes.io/arch': arch, ...this.spec.labels },
        },
        spec: {},
      });
    }
    await this.reportStatus();
    await this.renewLease();
    // kube-controller-manager's node IPAM gives the node its pod range.
    await waitUntil(`a podCIDR for node ${name}`, async () => {
      const node = await this.api.get<{ spec: { podCIDR?: string } }>(`/api/v1/nodes/${name}`);
      if (!node.spec.podCIDR) return false;
      this.podCidrBase = node.spec.podCIDR.replace(/\.0\/24$/, '');
      return true;
    });
    void this.leaseLoop();
    this.watching = this.watchPods();
  }

  private async reportStatus(): Promise<void> {
    const now = kubeTime();
    const condition = (type: string, status: string, reason: string, message: string) => ({ type, status, reason, message, lastHeartbeatTime: now, lastTransitionTime: now });
    const resources = { cpu: '8', memory: '32Gi', pods: '110', 'ephemeral-storage': '100Gi' };
    await this.api.patch(
      `/api/v1/nodes/${this.name}/status`,
      {
        status: {
          capacity: resources,
          allocatable: resources,
          conditions: [
            condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
            condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
            condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
            condition('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
          ],
          addresses: [
            { type: 'InternalIP', address: this.options.network.hostAddress },
            { type: 'Hostname', address: this.name },
          ],
          daemonEndpoints: { kubeletEndpoint: { Port: KUBELET_PORT } },
          nodeInfo: {
            machineID: randomBytes(16).toString('hex'),
            systemUUID: randomBytes(16).toString('hex'),
            bootID: randomBytes(16).toString('hex'),
            kernelVersion: readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim(),
            osImage: 'drainguard test node',
            containerRuntimeVersion: this.spec.containerRuntimeVersion ?? DEFAULT_RUNTIME,
            kubeletVersion: this.spec.kubeletVersion ?? this.options.kubernetesVersion,
            kubeProxyVersion: '',
            operatingSystem: 'linux',
            architecture: process.arch === 'arm64' ? 'arm64' : 'amd64',
          },
        },
      },
      'merge',
    );
  }

  private async renewLease(): Promise<void> {
    const path = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${this.name}`;
    const lease = await this.api.find<KubeObject & { spec: Record<string, unknown> }>(path);
    const spec = { holderIdentity: this.name, leaseDurationSeconds: 40, renewTime: kubeMicroTime() };
    if (!lease) {
      const node = await this.api.get(`/api/v1/nodes/${this.name}`);
      await this.api.create('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: this.name, namespace: 'kube-node-lease', ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: this.name, uid: node.metadata.uid }] },
        spec,
      });
      return;
    }
    await this.api.put(path, { ...lease, spec: { ...lease.spec, ...spec } });
  }

  private async leaseLoop(): Promise<void> {
    let beats = 0;
    while (!this.stopping.signal.aborted) {
      await pause(LEASE_RENEW_MS, this.stopping.signal);
      if (this.stopping.signal.aborted) return;
      try {
        await this.renewLease();
        // The node's status is posted every minute besides (the kubelet's nodeStatusReportFrequency is 5 min).
        if (++beats % 6 === 0) await this.reportStatus();
      } catch (error) {
        this.options.log(`node ${this.name}: lease renewal failed: ${(error as Error).message}`);
      }
    }
  }

  /** List, then watch from the list's resourceVersion; on any end or error, list again. */
  private async watchPods(): Promise<void> {
    const path = `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${this.name}`)}`;
    while (!this.stopping.signal.aborted) {
      try {
        const list = await this.api.list<Pod>(path);
        const seen = new Set<string>();
        for (const pod of list.items) {
          seen.add(pod.metadata.uid!);
          this.onPod(pod);
        }
        for (const [uid, worker] of this.workers) if (!seen.has(uid)) worker.gone();
        let resourceVersion = list.metadata.resourceVersion;
        for (;;) {
          let expired = false;
          await this.api.watch<Pod>(
            path,
            resourceVersion,
            (event) => {
              if (event.type === 'ERROR') {
                expired = true;
                return;
              }
              resourceVersion = event.object.metadata.resourceVersion ?? resourceVersion;
              if (event.type === 'BOOKMARK') return;
              if (event.type === 'DELETED') this.workers.get(event.object.metadata.uid!)?.gone();
              else this.onPod(event.object);
            },
            this.stopping.signal,
          );
          if (expired || this.stopping.signal.aborted) break;
        }
      } catch (error) {
        if (this.stopping.signal.aborted) return;
        this.options.log(`node ${this.name}: pod watch: ${(error as Error).message}; listing again`);
        await pause(500, this.stopping.signal);
      }
    }
  }

  private onPod(pod: Pod): void {
    // The test plays this pod's kubelet (./played-pods): nothing of it is ours, not even its final delete.
    if (isPlayedByTest(pod)) return;
    const uid = pod.metadata.uid!;
    let worker = this.workers.get(uid);
    if (!worker) {
      if (pod.metadata.deletionTimestamp && !pod.status?.podIP) {
        // Never started here: only the final delete is ours to do.
        void this.api.delete(`/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`, { gracePeriodSeconds: 0, uid }).catch(() => undefined);
        return;
      }
      worker = new PodWorker(pod, this);
      this.workers.set(uid, worker);
    }
    worker.sync(pod);
  }

  forget(uid: string): void {
    this.workers.delete(uid);
  }

  /** The worker of pod `namespace/name`, if it runs on this node. */
  worker(namespace: string, name: string): PodWorker | undefined {
    return [...this.workers.values()].find((worker) => worker.is(namespace, name));
  }

  /**
   * The next free pod IP after the last one given, round-robin over the node's range, as CNI's
   * host-local IPAM allocates (containernetworking/plugins, plugins/ipam/host-local/backend/allocator:
   * "allocate from the last reserved IP + 1"): an IP just released is not handed out again at once,
   * while the host may still know the ended pod's interface for it (a client connecting to the new
   * pod would otherwise reach the old one's MAC address and time out).
   */
  allocateIp(): string {
    for (let step = 1; step <= 253; step++) {
      const host = ((this.lastHost - 2 + step) % 253) + 2;
      const ip = `${this.podCidrBase}.${host}`;
      if (this.usedIps.has(ip)) continue;
      this.usedIps.add(ip);
      this.lastHost = host;
      return ip;
    }
    throw new Error(`node ${this.name}: no pod IP left in ${this.podCidrBase}.0/24`);
  }

  releaseIp(ip: string): void {
    this.usedIps.delete(ip);
  }

  /** A core/v1 Event about `pod`, from this node's kubelet. */
  async event(pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string, container?: string): Promise<void> {
    const now = kubeTime();
    await this.api
      .create(`/api/v1/namespaces/${pod.metadata.namespace}/events`, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: `${pod.metadata.name}.${randomBytes(8).toString('hex')}`, namespace: pod.metadata.namespace },
        involvedObject: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid, ...(container ? { fieldPath: `spec.containers{${container}}` } : {}) },
        reason,
        message,
        type,
        source: { component: 'kubelet', host: this.name },
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
        reportingComponent: 'kubelet',
        reportingInstance: this.name,
      })
      .catch((error: unknown) => this.options.log(`node ${this.name}: event ${reason}: ${(error as Error).message}`));
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.watching?.catch(() => undefined);
    await Promise.all([...this.workers.values()].map((worker) => worker.stop()));
    this.api.close();
  }
}

export class KubeletStandIn {
  private server?: Server;

  private constructor(private readonly agents: NodeAgent[]) {}

  static async start(options: KubeletOptions): Promise<KubeletStandIn> {
    const agents = options.nodes.map((spec) => new NodeAgent(spec, options));
    const standIn = new KubeletStandIn(agents);
    try {
      standIn.server = await startKubeletServer({ ...options.serving, host: options.network.hostAddress, port: KUBELET_PORT }, (namespace, pod, container) => {
        const worker = agents.map((agent) => agent.worker(namespace, pod)).find((found) => found !== undefined);
        return worker ? worker.log(container) : { status: 404, message: `pod ${namespace}/${pod} not found` };
      });
      await Promise.all(agents.map((agent) => agent.register()));
    } catch (error) {
      await standIn.stop();
      throw error;
    }
    return standIn;
  }

  get nodeNames(): string[] {
    return this.agents.map((agent) => agent.spec.name);
  }

  async stop(): Promise<void> {
    this.server?.close();
    this.server?.closeAllConnections();
    await Promise.all(this.agents.map((agent) => agent.stop()));
  }
}
