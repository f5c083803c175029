/**
 * What the kube lane's suites use to reach the test cluster that its globalSetup started
 * (test/global-setup-kube.ts): the cluster's description, an admin client, the real kubectl and helm
 * against it, namespaces of a suite's own, drainguard installed from the chart as a release of a suite's
 * own, and waiting for a condition of the cluster.
 *
 * Suites share one cluster and run in parallel, so everything a suite makes is named for it: its
 * namespaces carry a random suffix, and each drainguard release opts namespaces in by a label key of its
 * own, so one release's webhook never sees another suite's pods.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { CHART_DIR, helmBinary } from '../helm';
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { repoPath } from '../repo';
import { parse } from 'yaml';
import { KubeApi, type KubeObject } from './api';
import { DEFAULT_NODES, TestCluster, type ClusterInfo } from './cluster';
import { kubeconfigYaml } from './control-plane';
import { issueCertificate } from './pki';
import type { NodeSpec } from './kubelet';

export const CLUSTER_ENV = 'DRAINGUARD_TEST_CLUSTER';

export function clusterInfo(): ClusterInfo {
  const path = process.env[CLUSTER_ENV];
  if (!path) throw new Error(`${CLUSTER_ENV} is not set: run the suite through jest's kube project (its globalSetup starts the test cluster)`);
  return JSON.parse(readFileSync(path, 'utf8')) as ClusterInfo;
}

let admin: KubeApi | undefined;
/** A client as the cluster's admin (system:masters). */
export function adminApi(): KubeApi {
  admin ??= new KubeApi(clusterInfo().adminKubeconfig);
  return admin;
}

export interface CommandResult {
  status: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: readonly string[], input?: string): CommandResult {
  const result = spawnSync(command, args, { input, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.error) throw result.error;
  return { status: result.status ?? 1, stdout: result.stdout, stderr: result.stderr };
}

/** The real kubectl (/usr/bin/kubectl) against the test cluster, as its admin unless `kubeconfig` says otherwise. */
export function kubectl(args: readonly string[], options: { input?: string; kubeconfig?: string } = {}): CommandResult {
  return run('kubectl', ['--kubeconfig', options.kubeconfig ?? clusterInfo().adminKubeconfig, ...args], options.input);
}

/** The real helm against the test cluster, as its admin unless `kubeconfig` says otherwise. */
export function helm(args: readonly string[], options: { kubeconfig?: string } = {}): CommandResult {
  return run(helmBinary(), [...args, '--kubeconfig', options.kubeconfig ?? clusterInfo().adminKubeconfig]);
}

/**
 * A kubeconfig for a user of the shared cluster, authenticated by a client certificate of the cluster's
 * CA (CN = user, O = groups), as TestCluster.kubeconfigFor makes them for a private cluster.
 */
export function userKubeconfig(identity: { user: string; groups?: string[] }): string {
  const info = clusterInfo();
  const pki = join(info.dir, 'control-plane', 'pki');
  const ca = { cert: join(pki, 'ca.crt'), key: join(pki, 'ca.key'), pem: readFileSync(join(pki, 'ca.crt'), 'utf8') };
  // Beside the cluster's own credentials.
  const dir = mkdtempSync(join(info.dir, 'user-'));
  const client = issueCertificate(ca, dir, { name: 'user', commonName: identity.user, organizations: identity.groups ?? [], usage: 'client' });
  const path = join(dir, 'kubeconfig');
  writeFileSync(path, kubeconfigYaml({ server: info.server, caPem: ca.pem, client }, (file) => readFileSync(file, 'utf8')), { mode: 0o600 });
  return path;
}

/**
 * A kubeconfig that authenticates as ServiceAccount `namespace/name` with a token from the TokenRequest
 * API (`kubectl create token`), as a pod of that account would; the cluster's address and CA are those of
 * `adminKubeconfig` (the shared cluster's by default).
 */
export function serviceAccountKubeconfig(namespace: string, name: string, options: { adminKubeconfig?: string } = {}): string {
  const adminKubeconfig = options.adminKubeconfig ?? clusterInfo().adminKubeconfig;
  const token = kubectl(['create', 'token', name, '-n', namespace, '--duration', '1h'], { kubeconfig: adminKubeconfig });
  if (token.status !== 0) throw new Error(`kubectl create token ${namespace}/${name} failed:\n${token.stderr}`);
  const admin = parse(readFileSync(adminKubeconfig, 'utf8')) as { clusters: { cluster: { server: string; 'certificate-authority-data': string } }[] };
  const cluster = admin.clusters[0]!.cluster;
  const context = `${namespace}-${name}`;
  const path = join(mkdtempSync(join(dirname(adminKubeconfig), 'serviceaccount-')), 'kubeconfig');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'test-cluster', cluster: { server: cluster.server, 'certificate-authority-data': cluster['certificate-authority-data'] } }],
    users: [{ name: context, user: { token: token.stdout.trim() } }],
    contexts: [{ name: context, context: { cluster: 'test-cluster', user: context, namespace } }],
    'current-context': context,
  };
  writeFileSync(path, JSON.stringify(config), { mode: 0o600 });
  return path;
}

/** A short random suffix for the names a suite makes. */
export function uniqueSuffix(): string {
  return randomBytes(3).toString('hex');
}

/**
 * Polls `probe` until it returns a value other than undefined (an API condition, not a timer: the bound
 * is only there so that a condition that never comes fails the test with `what` instead of hanging).
 */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, limitMs = 120_000): Promise<T> {
  const deadline = Date.now() + limitMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** A namespace of the suite's own, once the controller manager gave it its `default` ServiceAccount (pods need it). */
export async function createNamespace(prefix: string, labels: Record<string, string> = {}): Promise<string> {
  const api = adminApi();
  const name = `${prefix}-${uniqueSuffix()}`;
  await api.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
  await eventually(`the default ServiceAccount of ${name}`, () => api.find(`/api/v1/namespaces/${name}/serviceaccounts/default`));
  return name;
}

/**
 * Removes a namespace without running its pods' preStop hooks (each would drain an Envoy simulator for
 * its grace period): workloads first, so nothing makes new pods, then every pod deleted at once (grace
 * 0, as `kubectl delete --force`), then the namespace.
 */
export async function deleteNamespace(name: string): Promise<void> {
  const api = adminApi();
  for (const plural of ['deployments', 'daemonsets', 'replicasets', 'statefulsets']) {
    await api.raw('DELETE', `/apis/apps/v1/namespaces/${name}/${plural}`, { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Orphan' });
  }
  await api.raw('DELETE', `/api/v1/namespaces/${name}/pods`, { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0 });
  await api.delete(`/api/v1/namespaces/${name}`);
}

export interface DrainguardRelease {
  release: string;
  namespace: string;
  /** The namespace label that opts a namespace in to this release's webhook. */
  optIn: Record<string, string>;
  webhookConfigName: string;
}

/**
 * drainguard installed from charts/drainguard by `helm install --wait` (the webhook ready behind its
 * Service), as a release of the suite's own: one replica, the reporter off unless `values` turn it on,
 * namespaces opted in by a label key of the release's own.
 */
export async function installDrainguard(prefix: string, values: Record<string, string> = {}): Promise<DrainguardRelease> {
  const release = `${prefix}-${uniqueSuffix()}`;
  const namespace = await createNamespace(release);
  const labelKey = `test.drainguard.io/${release}`;
  const settings: Record<string, string> = {
    replicaCount: '1',
    'report.enabled': 'false',
    'webhook.namespaceLabel.key': labelKey,
    'webhook.namespaceLabel.value': 'enabled',
    ...values,
  };
  const args = ['install', release, CHART_DIR, '--namespace', namespace, '--wait', '--timeout', '3m', ...Object.entries(settings).flatMap(([k, v]) => ['--set', `${k}=${v}`])];
  const result = helm(args);
  if (result.status !== 0) throw new Error(`helm install ${release} failed:\n${result.stderr}`);
  const configs = await adminApi().list('/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations');
  const config = configs.items.find((c: KubeObject) => c.metadata.labels?.['app.kubernetes.io/instance'] === release);
  if (!config) throw new Error(`release ${release} made no MutatingWebhookConfiguration`);
  return { release, namespace, optIn: { [labelKey]: 'enabled' }, webhookConfigName: config.metadata.name };
}

/** `helm uninstall`, then the release's namespace. */
export async function uninstallDrainguard(release: DrainguardRelease): Promise<void> {
  helm(['uninstall', release.release, '--namespace', release.namespace, '--wait']);
  await deleteNamespace(release.namespace);
}

/**
 * A cluster of the suite's own, run in the suite's process, for what would disturb the shared one:
 * stopping kube-apiserver, compacting etcd, nodes of unusual kubelets or runtimes, API server flags.
 * The suite must `stop()` it in afterAll (its processes die with the jest worker regardless).
 */
export async function startPrivateCluster(options: { nodes?: NodeSpec[]; apiServerArgs?: string[]; installDrainguard?: boolean } = {}): Promise<TestCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'drainguard-private-cluster-'));
  return TestCluster.start({
    dir,
    nodes: options.nodes ?? DEFAULT_NODES,
    installDrainguard: options.installDrainguard,
    apiServerArgs: options.apiServerArgs,
    // Bundled by the kube lane's globalSetup (test/support/cluster/cli.mjs bundle).
    envoyMain: repoPath('node_modules/.cache/drainguard-cluster/envoy.js'),
    log: (line) => appendFileSync(join(dir, 'cluster.log'), `${line}\n`),
  });
}
