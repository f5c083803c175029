/**
 * The reporter benchmark's API server as a real kube-apiserver (v1.37, etcd 3.7: the test cluster's
 * own building blocks, test/support/cluster), holding the protected pods a `ReportBenchCluster` needs.
 *
 * Only etcd and kube-apiserver run: no controller manager, no scheduler, no kubelet stand-in. This
 * module writes what they would, each as its own identity: the pods are created as a DaemonSet's
 * (owned by a real DaemonSet object, bound to a registered Node, as the admin), and their status is
 * written as the node's kubelet writes it (system:node:<node>, judged by the Node authorizer and
 * NodeRestriction): containers running, then on a drain Envoy terminated with a drain record and the
 * pod Succeeded, then the kubelet's final delete. A controller manager would delete or rewrite them
 * (the DaemonSet controller keeps one pod per node, the node lifecycle controller evicts pods of a node
 * no kubelet renews), and a kubelet stand-in would run 10,000 sandboxes.
 *
 * The reporter runs as the chart deploys it: its ServiceAccount, ClusterRole and binding rendered
 * from charts/drainguard (helm template), a TokenRequest token; the chart's MutatingWebhookConfiguration
 * is created too, its namespaceSelector selecting the pods' namespaces (labelled as a user opts them
 * in). No webhook server runs, so its objectSelector is narrowed to a label no pod carries: kube-apiserver
 * never calls it, and the pods are created already as drainguard rewrites them (the Contour pod
 * through `mutate`, as the stub's).
 *
 * `drain()` is one pod's rollout: the delete with a grace period (deletionTimestamp), the kubelet's
 * status write (Envoy terminated with its drain record), the kubelet's final delete, and the DaemonSet's
 * replacement (created, then its status written running): five watch events. The pod Events the
 * reporter creates are watched (involvedObject.kind=Pod) for `eventsCreated` and the latency, measured
 * from kube-apiserver's answer to the termination's status write (the write applied) to the Event's
 * arrival on that watch; an Event that arrives before the answer is read counts as 0.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parse } from 'yaml';
import type { Pod } from '../../src/mutate';
import { findOne, renderChart, reporterObjects, type K8sObject } from '../../test/support/helm';
import { repoPath } from '../../test/support/repo';
import { KubeApi, type KubeObject } from '../../test/support/cluster/api';
import { ensureControlPlaneBinaries, kubernetesVersion } from '../../test/support/cluster/binaries';
import { ControlPlane } from '../../test/support/cluster/control-plane';
import { createClusterNetwork, type ClusterNetwork } from '../../test/support/cluster/network';
import type { ReportBenchCluster, ReportBenchClusterFactory } from '../report';
import { benchDrainRecord, protectedTemplate } from './report-api-stub';

const RELEASE = 'drainguard-bench';
const NODE_NAME = 'bench-node';
const NAMESPACES = 50;
/** Pods made at once (each its create, then the kubelet's status write; each client keeps at most 16 connections). */
const CREATE_CONCURRENCY = 32;
/** Spread over namespaces as the stub's pods are. */
const namespaceOf = (index: number) => `bench-${index % NAMESPACES}`;

interface Slot {
  namespace: string;
  name: string;
  uid: string;
  /** The container statuses the kubelet last wrote (running). */
  containerStatuses: Record<string, unknown>[];
}

export interface RealReportCluster {
  /** The admin's kubeconfig file (system:masters): what `drainguard check -A` is run with. */
  adminKubeconfig: string;
  /** `drainguard check`'s flags naming the installation whose objects were made (the chart's release). */
  installationFlags: string[];
  pods: number;
  /** Seconds to create the pods and write their status. */
  podsCreatedSeconds: number;
  kubernetesVersion: string;
  /** A `ReportBenchClusterFactory` over these pods: each session watches the Events anew; `close()` leaves the cluster running. */
  factory: ReportBenchClusterFactory;
  stop(): Promise<void>;
}

/** Runs `work(i)` for i in [0, count) with at most `concurrency` at once; rejects on the first failure. */
async function pooled(count: number, concurrency: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) await work(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}

const kubeTime = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The chart's reporter RBAC and MutatingWebhookConfiguration, as `helm install` with the reporter on would make them. */
function chartObjects(): { reporter: K8sObject[]; webhookConfiguration: K8sObject; optIn: Record<string, string>; serviceAccount: K8sObject } {
  const objects = renderChart({ releaseName: RELEASE, namespace: RELEASE, set: { 'report.enabled': true } });
  const reporter = reporterObjects(objects).filter((o) => ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind));
  const webhookConfiguration = findOne(objects, 'MutatingWebhookConfiguration');
  const values = parse(readFileSync(repoPath('charts', 'drainguard', 'values.yaml'), 'utf8')) as { webhook: { namespaceLabel: { key: string; value: string } } };
  const webhooks = (webhookConfiguration.webhooks as Record<string, unknown>[]).map((webhook) => ({
    ...webhook,
    // No webhook server runs: kube-apiserver must never call it. The reporter reads only namespaceSelector.
    objectSelector: { matchLabels: { 'bench.drainguard.io/no-webhook-server': 'true' } },
  }));
  return {
    reporter,
    webhookConfiguration: { ...webhookConfiguration, webhooks },
    optIn: { [values.webhook.namespaceLabel.key]: values.webhook.namespaceLabel.value },
    serviceAccount: findOne(reporter, 'ServiceAccount'),
  };
}

/** The running container statuses (and completed init containers) the kubelet writes for `pod`. */
function runningStatus(pod: Pod, index: number, startedAt: string): Record<string, unknown> {
  const status = (container: { name: string; image?: string }, state: Record<string, unknown>, ready: boolean) => ({
    name: container.name,
    state,
    lastState: {},
    ready,
    started: ready,
    restartCount: 0,
    image: container.image,
    imageID: `${(container.image ?? '').split(':')[0]}@sha256:${'0'.repeat(64)}`,
    containerID: `containerd://${randomBytes(32).toString('hex')}`,
  });
  const init = (pod.spec.initContainers ?? []).map((container) =>
    status(container, { terminated: { exitCode: 0, reason: 'Completed', startedAt, finishedAt: startedAt } }, false),
  );
  const condition = (type: string) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: startedAt });
  return {
    phase: 'Running',
    hostIP: '10.0.0.1',
    podIP: `10.1.${Math.floor(index / 250) % 250}.${(index % 250) + 1}`,
    startTime: startedAt,
    conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map(condition),
    ...(init.length > 0 ? { initContainerStatuses: init } : {}),
    containerStatuses: pod.spec.containers.map((container) => status(container, { running: { startedAt } }, true)),
  };
}

/**
 * Starts etcd and kube-apiserver, the chart's reporter RBAC and webhook configuration, `pods` protected
 * pods running on one registered node. `stop()` must be called (in a finally): it stops the processes
 * and removes the network slot; a run killed before it leaves nothing running (the processes die with
 * this one, the slot is reclaimed by the next cluster).
 */
export async function startRealReportCluster(pods: number, progress: (line: string) => void): Promise<RealReportCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'drainguard-bench-kube-'));
  const log = (line: string) => progress(`kube: ${line}`);
  let network: ClusterNetwork | undefined;
  let plane: ControlPlane | undefined;
  const clients: KubeApi[] = [];
  const stop = async () => {
    for (const client of clients) client.close();
    await plane?.stop();
    network?.remove();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const binaries = ensureControlPlaneBinaries(log);
    network = createClusterNetwork();
    mkdirSync(join(dir, 'control-plane'));
    plane = await ControlPlane.start({ dir: join(dir, 'control-plane'), network, binaries, controllers: false, log });
    const admin = new KubeApi(plane.adminKubeconfig);
    const kubelet = new KubeApi(plane.kubeconfigFor({ user: `system:node:${NODE_NAME}`, groups: ['system:nodes'] }, 'kubelet'));
    clients.push(admin, kubelet);
    const server = plane.server;
    const ca = plane.ca.pem;

    // The reporter as the chart deploys it.
    const chart = chartObjects();
    await admin.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: RELEASE } });
    for (const object of chart.reporter) {
      const path = object.kind === 'ServiceAccount' ? `/api/v1/namespaces/${RELEASE}/serviceaccounts` : `/apis/rbac.authorization.k8s.io/v1/${object.kind === 'ClusterRole' ? 'clusterroles' : 'clusterrolebindings'}`;
      await admin.create(path, object);
    }
    await admin.create('/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', chart.webhookConfiguration);
    const token = await admin.create<{ status: { token: string } }>(`/api/v1/namespaces/${RELEASE}/serviceaccounts/${chart.serviceAccount.metadata.name}/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 3600 },
    });
    const reporterKubeconfig = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'bench', cluster: { server, 'certificate-authority-data': Buffer.from(ca).toString('base64') } }],
      users: [{ name: 'reporter', user: { token: token.status.token } }],
      contexts: [{ name: 'bench', context: { cluster: 'bench', user: 'reporter' } }],
      'current-context': 'bench',
    });

    // The node registers itself, as a kubelet does.
    await kubelet.create('/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: NODE_NAME, labels: { 'kubernetes.io/hostname': NODE_NAME, 'kubernetes.io/os': 'linux' } } });
    const now = kubeTime();
    await kubelet.patch(`/api/v1/nodes/${NODE_NAME}/status`, {
      status: {
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status', lastHeartbeatTime: now, lastTransitionTime: now }],
        addresses: [{ type: 'InternalIP', address: '10.0.0.1' }],
      },
    });

    // The namespaces, opted in as a user opts them in; the pods' ServiceAccount; a DaemonSet owning them.
    const template = protectedTemplate();
    const daemonSet = parse(readFileSync(repoPath('test', 'fixtures', 'contour', '03-envoy-main.yaml'), 'utf8')) as KubeObject;
    const owners: { name: string; uid: string }[] = [];
    for (let index = 0; index < NAMESPACES; index++) {
      const namespace = namespaceOf(index);
      await admin.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels: chart.optIn } });
      await admin.create(`/api/v1/namespaces/${namespace}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: template.spec.serviceAccountName ?? 'default' } });
      const owner = await admin.create(`/apis/apps/v1/namespaces/${namespace}/daemonsets`, { ...daemonSet, metadata: { ...daemonSet.metadata, namespace } });
      owners.push({ name: owner.metadata.name, uid: owner.metadata.uid! });
    }

    const slots: Slot[] = [];
    let generation = 0;
    /** A new pod of slot `index`'s DaemonSet, running: created, then its status written by the kubelet. */
    const runPod = async (index: number) => {
      const namespace = namespaceOf(index);
      const owner = owners[index % NAMESPACES]!;
      const name = `envoy-${index}-${(generation++).toString(36)}`;
      const created = await admin.create<Pod & KubeObject>(`/api/v1/namespaces/${namespace}/pods`, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          ...structuredClone(template.metadata ?? {}),
          name,
          namespace,
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: owner.name, uid: owner.uid, controller: true, blockOwnerDeletion: true }],
        },
        spec: { ...structuredClone(template.spec), nodeName: NODE_NAME },
      });
      const status = runningStatus(created, index, kubeTime());
      await kubelet.patch(`/api/v1/namespaces/${namespace}/pods/${name}/status`, { status });
      slots[index] = { namespace, name, uid: created.metadata.uid!, containerStatuses: status.containerStatuses as Record<string, unknown>[] };
    };
    const createStarted = performance.now();
    await pooled(pods, CREATE_CONCURRENCY, async (index) => {
      await runPod(index);
      if ((index + 1) % 2000 === 0) progress(`kube: ${index + 1} pods running`);
    });
    const podsCreatedSeconds = Math.round((performance.now() - createStarted) / 100) / 10;
    progress(`kube: ${pods} protected pods running in ${podsCreatedSeconds} s`);

    let next = 0;
    const factory: ReportBenchClusterFactory = async (count) => {
      if (count !== pods) throw new Error(`this cluster holds ${pods} pods, not ${count}`);
      // The termination's write answered, and its pod Event seen, in whichever order they come.
      const writtenAt = new Map<string, number>();
      const eventAt = new Map<string, number>();
      const latencies: number[] = [];
      const written = (key: string) => {
        const now = performance.now();
        const seen = eventAt.get(key);
        if (seen === undefined) return void writtenAt.set(key, now);
        // The Event came before this process read the write's answer: reported within the write's answer.
        latencies.push(0);
        eventAt.delete(key);
      };
      const inFlight = new Set<Promise<void>>();
      let eventsCreated = 0;
      let failure: Error | undefined;
      // Pod Events from now on: the reporter creates them, nothing else here does.
      const stopWatch = new AbortController();
      let resourceVersion = (await admin.list('/api/v1/events?limit=1')).metadata.resourceVersion;
      const onEvent = (event: { type: string; object: KubeObject }) => {
        if (event.object.metadata.resourceVersion) resourceVersion = event.object.metadata.resourceVersion;
        if (event.type !== 'ADDED') return;
        const involved = event.object.involvedObject as { namespace: string; name: string };
        eventsCreated++;
        const key = `${involved.namespace}/${involved.name}`;
        const at = writtenAt.get(key);
        if (at === undefined) return void eventAt.set(key, performance.now());
        latencies.push(performance.now() - at);
        writtenAt.delete(key);
      };
      const watching = (async () => {
        while (!stopWatch.signal.aborted) {
          // Resumed from the last resourceVersion whenever kube-apiserver ends the watch (its timeout).
          await admin.watch('/api/v1/events?fieldSelector=involvedObject.kind%3DPod', resourceVersion, onEvent, stopWatch.signal);
        }
      })().catch((error: unknown) => {
        failure ??= error as Error;
      });

      const drain = async (index: number) => {
        const pod = slots[index]!;
        const path = `/api/v1/namespaces/${pod.namespace}/pods/${pod.name}`;
        // The rollout deletes the pod with its grace period: kube-apiserver sets deletionTimestamp.
        await admin.delete(path, { gracePeriodSeconds: 300, uid: pod.uid });
        const finishedAt = kubeTime();
        const containerStatuses = pod.containerStatuses.map((status) => ({
          ...status,
          state: {
            terminated: {
              exitCode: 0,
              reason: 'Completed',
              ...(status.name === 'envoy' ? { message: benchDrainRecord(12_000 + (index % 5000)) } : {}),
              startedAt: (status.state as { running?: { startedAt: string } }).running?.startedAt,
              finishedAt,
              containerID: status.containerID,
            },
          },
          ready: false,
          started: false,
        }));
        await kubelet.patch(`${path}/status`, { status: { phase: 'Succeeded', containerStatuses } });
        written(`${pod.namespace}/${pod.name}`);
        // The kubelet's final delete once every container has ended.
        await kubelet.delete(path, { gracePeriodSeconds: 0, uid: pod.uid });
        await runPod(index);
      };

      const session: ReportBenchCluster = {
        kubeconfig: reporterKubeconfig,
        webhookConfigName: chart.webhookConfiguration.metadata.name,
        get eventsCreated() {
          return eventsCreated;
        },
        get reportLatenciesMs() {
          return latencies;
        },
        get failure() {
          return failure;
        },
        drain() {
          const done = drain(next++ % pods)
            .catch((error: unknown) => {
              failure ??= error as Error;
            })
            .finally(() => inFlight.delete(done));
          inFlight.add(done);
        },
        async close() {
          await Promise.all(inFlight);
          stopWatch.abort();
          await watching;
        },
      };
      return session;
    };

    return { adminKubeconfig: plane.adminKubeconfig, installationFlags: ['--release', RELEASE, '--drainguard-namespace', RELEASE], pods, podsCreatedSeconds, kubernetesVersion: kubernetesVersion(), factory, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
