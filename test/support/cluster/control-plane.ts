/**
 * A real Kubernetes control plane for the tests: etcd, kube-apiserver, kube-controller-manager and
 * kube-scheduler, the executables built from their Go modules (./binaries), started with the flags a
 * cluster's installer gives them, in the manner of controller-runtime's envtest
 * (pkg/internal/testing/controlplane: secure port, RBAC, service-account issuer and keys, client
 * certificates as users) plus what envtest leaves out: the controller manager (Deployments, DaemonSets
 * and ReplicaSets make Pods; garbage collection; EndpointSlices; service-account tokens and the
 * `default` ServiceAccounts) and the scheduler (Pods get a node).
 *
 * kube-apiserver listens on the cluster network's host address (./network), where pods in their own
 * network namespaces reach it too; `--enable-aggregator-routing` makes it call a webhook's `service:`
 * through the Service's EndpointSlice, the pod's own address. etcd listens on a loopback address of the
 * cluster's own, over TLS with client certificates.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { requestJson } from './api';
import type { ControlPlaneBinaries } from './binaries';
import type { ClusterNetwork } from './network';
import { createCertificateAuthority, createServiceAccountKey, issueCertificate, type CertificateAuthority, type CertificateFiles } from './pki';
import { startProcess, waitUntil, type ManagedProcess } from './processes';

export const API_SERVER_PORT = 6443;
const ETCD_CLIENT_PORT = 2379;
const ETCD_PEER_PORT = 2380;
/** The cluster's DNS domain: service-account tokens' issuer and the API's Service name derive from it. */
export const CLUSTER_DOMAIN = 'cluster.local';
/** The user kube-apiserver calls the kubelets as (kubeadm's apiserver-kubelet-client certificate). */
const KUBELET_CLIENT_USER = 'kube-apiserver-kubelet-client';

export interface ControlPlaneOptions {
  /** An empty directory for certificates, kubeconfigs, etcd's data and the logs. */
  dir: string;
  network: ClusterNetwork;
  binaries: ControlPlaneBinaries;
  /** Extra kube-apiserver flags (e.g. `--feature-gates=…`). */
  apiServerArgs?: readonly string[];
  /**
   * Start kube-controller-manager and kube-scheduler (default true). Without them, etcd and
   * kube-apiserver alone: for a benchmark that writes what the controllers and the kubelet would
   * (bench/lib/report-real-cluster.ts), where a controller would delete or rewrite its objects.
   */
  controllers?: boolean;
  log?: (line: string) => void;
}

export interface ClientIdentity {
  user: string;
  groups?: readonly string[];
}

export interface KubeconfigParts {
  server: string;
  caPem: string;
  client: CertificateFiles;
}

/** A kubeconfig for `parts`, as kubectl and client-node read it (credentials inline: one file says it all). */
export function kubeconfigYaml(parts: KubeconfigParts, readFile: (path: string) => string, name = 'drainguard-test'): string {
  const b64 = (text: string) => Buffer.from(text).toString('base64');
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster: { server: parts.server, 'certificate-authority-data': b64(parts.caPem) } }],
    users: [{ name, user: { 'client-certificate-data': b64(readFile(parts.client.cert)), 'client-key-data': b64(readFile(parts.client.key)) } }],
    contexts: [{ name, context: { cluster: name, user: name } }],
    'current-context': name,
  });
}

export class ControlPlane {
  readonly server: string;
  readonly ca: CertificateAuthority;
  /** system:masters: what the tests and `kubectl` use to set the cluster up. */
  readonly adminKubeconfig: string;
  private readonly pki: string;
  private readonly processes = new Map<string, ManagedProcess>();
  private readonly certificates = new Map<string, CertificateFiles>();
  private users = 0;

  private constructor(private readonly options: ControlPlaneOptions) {
    const { dir, network } = options;
    this.pki = join(dir, 'pki');
    mkdirSync(this.pki, { recursive: true });
    mkdirSync(join(dir, 'logs'), { recursive: true });
    this.server = `https://${network.hostAddress}:${API_SERVER_PORT}`;
    this.ca = createCertificateAuthority(this.pki, `drainguard test cluster ${network.slot}`);
    this.adminKubeconfig = this.kubeconfigFor({ user: 'drainguard-test-admin', groups: ['system:masters'] }, 'admin');
  }

  static async start(options: ControlPlaneOptions): Promise<ControlPlane> {
    const plane = new ControlPlane(options);
    try {
      await plane.startEtcd();
      await plane.startApiServer();
      if (options.controllers !== false) {
        plane.startControllerManager();
        plane.startScheduler();
        await plane.waitForControllers();
      }
    } catch (error) {
      await plane.stop();
      throw error;
    }
    return plane;
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  private certificate(name: string, make: () => CertificateFiles): CertificateFiles {
    let files = this.certificates.get(name);
    if (!files) {
      files = make();
      this.certificates.set(name, files);
    }
    return files;
  }

  /** A kubeconfig file authenticating as `identity` by a client certificate of the cluster's CA. */
  kubeconfigFor(identity: ClientIdentity, fileStem = `user-${++this.users}`): string {
    const client = issueCertificate(this.ca, this.pki, {
      name: fileStem,
      commonName: identity.user,
      organizations: [...(identity.groups ?? [])],
      usage: 'client',
    });
    const path = join(this.options.dir, `${fileStem}.kubeconfig`);
    this.certificates.set(fileStem, client);
    writeFileSync(path, kubeconfigYaml({ server: this.server, caPem: this.ca.pem, client }, readFileSyncUtf8), { mode: 0o600 });
    return path;
  }

  private logFile(name: string): string {
    return join(this.options.dir, 'logs', `${name}.log`);
  }

  private get etcdUrl(): string {
    return `https://${this.options.network.loopbackAddress}:${ETCD_CLIENT_PORT}`;
  }

  private etcdClient(): CertificateFiles {
    return this.certificate('etcd-client', () => issueCertificate(this.ca, this.pki, { name: 'etcd-client', commonName: 'kube-apiserver-etcd-client', usage: 'client' }));
  }

  private async startEtcd(): Promise<void> {
    const { network, binaries, dir } = this.options;
    const address = network.loopbackAddress;
    const serving = issueCertificate(this.ca, this.pki, { name: 'etcd', commonName: 'etcd', ipAddresses: [address], usage: 'server-and-client' });
    const peer = `http://${address}:${ETCD_PEER_PORT}`;
    const etcd = startProcess(
      'etcd',
      binaries.etcd,
      [
        '--name=default',
        `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=${this.etcdUrl}`,
        `--advertise-client-urls=${this.etcdUrl}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=default=${peer}`,
        `--cert-file=${serving.cert}`,
        `--key-file=${serving.key}`,
        `--trusted-ca-file=${this.ca.cert}`,
        '--client-cert-auth=true',
        // As envtest: a test cluster's data need not survive a power cut.
        '--unsafe-no-fsync=true',
        '--log-level=warn',
      ],
      this.logFile('etcd'),
    );
    this.processes.set('etcd', etcd);
    const client = this.etcdClient();
    await waitUntil('etcd to be healthy', async () => (await this.etcdRequest('GET', '/health', undefined, client)).status === 200, { process: etcd });
    this.log(`etcd is serving on ${this.etcdUrl}`);
  }

  private etcdRequest(method: string, path: string, body: unknown, client = this.etcdClient()): Promise<{ status: number; body: unknown }> {
    return requestJson(`${this.etcdUrl}${path}`, { method, body, tls: this.tlsOf(client), timeoutMs: 10_000 });
  }

  private tlsOf(client: CertificateFiles): { ca: string; cert: string; key: string } {
    return { ca: this.ca.pem, cert: readFileSyncUtf8(client.cert), key: readFileSyncUtf8(client.key) };
  }

  /**
   * Compacts etcd's history up to a new revision: every resourceVersion a client holds is then "too old"
   * (410 Gone) to watch from. The revision is made new by a write of a key outside kube-apiserver's
   * prefix (/registry), so that even a client whose last event or bookmark carried etcd's latest
   * revision holds an older one.
   */
  async compactEtcd(): Promise<number> {
    const written = (await this.etcdRequest('POST', '/v3/kv/put', { key: Buffer.from('/drainguard-test/compaction').toString('base64'), value: Buffer.from(String(Date.now())).toString('base64') }))
      .body as { header: { revision: string } };
    const revision = Number(written.header.revision);
    const compaction = await this.etcdRequest('POST', '/v3/kv/compaction', { revision, physical: true });
    if (compaction.status !== 200) throw new Error(`etcd refused the compaction at ${revision}: ${JSON.stringify(compaction.body)}`);
    return revision;
  }

  private apiServerArgs(): string[] {
    const { network, dir } = this.options;
    const serving = this.certificate('apiserver', () =>
      issueCertificate(this.ca, this.pki, {
        name: 'apiserver',
        commonName: 'kube-apiserver',
        dnsNames: ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc', `kubernetes.default.svc.${CLUSTER_DOMAIN}`, 'localhost'],
        // The first address of the Service range is the `kubernetes` Service's ClusterIP.
        ipAddresses: [network.hostAddress, '127.0.0.1', network.serviceCidr.replace(/\.0\/\d+$/, '.1')],
        usage: 'server',
      }),
    );
    const serviceAccount = this.serviceAccountKey();
    const etcdClient = this.etcdClient();
    const kubeletClient = this.kubeletClientCertificate();
    return [
      `--etcd-servers=${this.etcdUrl}`,
      `--etcd-cafile=${this.ca.cert}`,
      `--etcd-certfile=${etcdClient.cert}`,
      `--etcd-keyfile=${etcdClient.key}`,
      `--bind-address=${network.hostAddress}`,
      `--advertise-address=${network.hostAddress}`,
      `--secure-port=${API_SERVER_PORT}`,
      `--tls-cert-file=${serving.cert}`,
      `--tls-private-key-file=${serving.key}`,
      `--client-ca-file=${this.ca.cert}`,
      `--cert-dir=${join(dir, 'apiserver-certs')}`,
      // The Node authorizer and NodeRestriction: the kubelet stand-in, as a kubelet, may only touch its own node and pods.
      '--authorization-mode=Node,RBAC',
      '--enable-admission-plugins=NodeRestriction',
      `--service-account-issuer=https://kubernetes.default.svc.${CLUSTER_DOMAIN}`,
      `--service-account-key-file=${serviceAccount.publicKey}`,
      `--service-account-signing-key-file=${serviceAccount.privateKey}`,
      `--service-cluster-ip-range=${network.serviceCidr}`,
      '--allow-privileged=true',
      // Webhooks' `service:` references go to the Service's endpoints (the pod IP) rather than its
      // ClusterIP, which nothing routes here (no kube-proxy).
      '--enable-aggregator-routing=true',
      '--profiling=false',
      // The kubelet's API (pods' logs), as kubeadm configures it: the node's InternalIP (no DNS knows
      // the nodes' names here), the kubelet's certificate verified, kube-apiserver's own client certificate.
      '--kubelet-preferred-address-types=InternalIP',
      `--kubelet-certificate-authority=${this.ca.cert}`,
      `--kubelet-client-certificate=${kubeletClient.cert}`,
      `--kubelet-client-key=${kubeletClient.key}`,
      ...(this.options.apiServerArgs ?? []),
    ];
  }

  /** kube-apiserver's client certificate for calling the kubelets. */
  private kubeletClientCertificate(): CertificateFiles {
    return this.certificate('apiserver-kubelet-client', () =>
      issueCertificate(this.ca, this.pki, { name: 'apiserver-kubelet-client', commonName: KUBELET_CLIENT_USER, usage: 'client' }),
    );
  }

  /** What the kubelet stand-in serves its API with (./kubelet-server): its certificate, and who may call it. */
  kubeletServing(): { cert: string; key: string; clientCa: string; apiServerUser: string } {
    const files = this.certificate('kubelet-serving', () =>
      issueCertificate(this.ca, this.pki, { name: 'kubelet-serving', commonName: 'kubelet', ipAddresses: [this.options.network.hostAddress], usage: 'server' }),
    );
    return { cert: readFileSyncUtf8(files.cert), key: readFileSyncUtf8(files.key), clientCa: this.ca.pem, apiServerUser: KUBELET_CLIENT_USER };
  }

  private serviceAccountKey(): { privateKey: string; publicKey: string } {
    const files = this.certificate('sa', () => {
      const key = createServiceAccountKey(this.pki);
      return { cert: key.publicKey, key: key.privateKey };
    });
    return { privateKey: files.key, publicKey: files.cert };
  }

  /** Starts kube-apiserver (again, after `stopApiServer`) and waits until /readyz answers ok. */
  async startApiServer(): Promise<void> {
    const previous = this.processes.get('kube-apiserver');
    if (previous?.running()) throw new Error('kube-apiserver is already running');
    const apiserver = startProcess('kube-apiserver', this.options.binaries['kube-apiserver'], this.apiServerArgs(), this.logFile('kube-apiserver'));
    this.processes.set('kube-apiserver', apiserver);
    await waitUntil('kube-apiserver to be ready', async () => (await this.get('/readyz')).status === 200, { process: apiserver });
    this.log(`kube-apiserver is serving on ${this.server}`);
  }

  /** Stops kube-apiserver as a node's shutdown does (SIGTERM, its own graceful termination); etcd keeps the data. */
  async stopApiServer(): Promise<void> {
    await this.processes.get('kube-apiserver')?.stop();
  }

  private componentKubeconfig(user: string, stem: string): string {
    return this.kubeconfigFor({ user }, stem);
  }

  private startControllerManager(): void {
    const { binaries, network } = this.options;
    const kubeconfig = this.componentKubeconfig('system:kube-controller-manager', 'kube-controller-manager');
    const process = startProcess(
      'kube-controller-manager',
      binaries['kube-controller-manager'],
      [
        `--kubeconfig=${kubeconfig}`,
        `--authentication-kubeconfig=${kubeconfig}`,
        `--authorization-kubeconfig=${kubeconfig}`,
        // No metrics or health endpoint: nothing scrapes it, and a fixed port would collide between clusters.
        '--secure-port=0',
        '--leader-elect=false',
        // Each controller as its own ServiceAccount, so RBAC judges them as in a cluster.
        '--use-service-account-credentials=true',
        `--service-account-private-key-file=${this.serviceAccountKey().privateKey}`,
        `--root-ca-file=${this.ca.cert}`,
        `--cluster-signing-cert-file=${this.ca.cert}`,
        `--cluster-signing-key-file=${this.ca.key}`,
        '--allocate-node-cidrs=true',
        `--cluster-cidr=${network.clusterCidr}`,
        '--node-cidr-mask-size=24',
        `--service-cluster-ip-range=${network.serviceCidr}`,
      ],
      this.logFile('kube-controller-manager'),
    );
    this.processes.set('kube-controller-manager', process);
  }

  private startScheduler(): void {
    const kubeconfig = this.componentKubeconfig('system:kube-scheduler', 'kube-scheduler');
    const process = startProcess(
      'kube-scheduler',
      this.options.binaries['kube-scheduler'],
      [`--kubeconfig=${kubeconfig}`, `--authentication-kubeconfig=${kubeconfig}`, `--authorization-kubeconfig=${kubeconfig}`, '--secure-port=0', '--leader-elect=false'],
      this.logFile('kube-scheduler'),
    );
    this.processes.set('kube-scheduler', process);
  }

  /** The controller manager is working once it made the `default` ServiceAccount of `default`. */
  private async waitForControllers(): Promise<void> {
    await waitUntil('kube-controller-manager to create the default ServiceAccount', async () => (await this.get('/api/v1/namespaces/default/serviceaccounts/default')).status === 200, {
      process: this.processes.get('kube-controller-manager'),
    });
    this.log('kube-controller-manager and kube-scheduler are running');
  }

  /** A GET as the admin user (client certificate). */
  async get(path: string): Promise<{ status: number; body: unknown }> {
    return requestJson(`${this.server}${path}`, { method: 'GET', tls: this.tlsOf(this.certificates.get('admin')!), timeoutMs: 10_000 });
  }

  /** Every process, for a report of where each one logs. */
  logFiles(): Record<string, string> {
    return Object.fromEntries([...this.processes].map(([name, process]) => [name, process.logFile]));
  }

  /** Stops the components in the reverse of their start, then etcd. */
  async stop(): Promise<void> {
    for (const name of ['kube-scheduler', 'kube-controller-manager', 'kube-apiserver', 'etcd']) {
      await this.processes.get(name)?.stop();
    }
  }
}

function readFileSyncUtf8(path: string): string {
  return readFileSync(path, 'utf8');
}
