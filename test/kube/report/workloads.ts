/**
 * The reporter's kube-lane suites share these: the Envoy workloads as their projects ship them (Contour's
 * DaemonSet from test/fixtures/contour, Envoy Gateway's Deployment from test/fixtures/upstream) with
 * what they need to start (ServiceAccount, Secret, ConfigMap), `kubectl rollout restart` and its
 * status, the reporter's pods and their /metrics, and the drain Events as the API server stores them.
 * Every helper takes the cluster it works on: the shared one, or a suite's private one (whose kubelet
 * stand-in runs in the suite's own process, so nothing here blocks it: kubectl runs asynchronously).
 */
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { parseAllDocuments } from 'yaml';
import { DRAIN_EVENT_LABEL } from '../../../src/report/drain-event';
import { PROTECTED_LABEL } from '../../../src/mutate';
import { KubeApi, type KubeObject } from '../../support/cluster/api';
import { adminApi, clusterInfo, eventually, runAsync, type CommandResult } from '../../support/cluster/lane';
import type { TestCluster } from '../../support/cluster/cluster';
import { repoPath } from '../../support/repo';
import { NEVER_SCHEDULED, withoutHostPorts, type ContainersWithPorts } from '../check-workloads';

/** A cluster to work on: its admin client and admin kubeconfig. */
export interface ClusterHandle {
  api: KubeApi;
  kubeconfig: string;
}

export const sharedCluster = (): ClusterHandle => ({ api: adminApi(), kubeconfig: clusterInfo().adminKubeconfig });
export const privateCluster = (cluster: TestCluster): ClusterHandle => ({ api: new KubeApi(cluster.info.adminKubeconfig), kubeconfig: cluster.info.adminKubeconfig });

/** The real kubectl as the cluster's admin, without blocking this process. */
export function kubectl(cluster: ClusterHandle, args: readonly string[]): Promise<CommandResult> {
  return runAsync('kubectl', ['--kubeconfig', cluster.kubeconfig, ...args]);
}

/** kubectl that must succeed. */
export async function kubectlOk(cluster: ClusterHandle, args: readonly string[]): Promise<string> {
  const result = await kubectl(cluster, args);
  if (result.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${result.status}): ${result.stderr}`);
  return result.stdout;
}

export interface PodObject extends KubeObject {
  spec: { nodeName?: string; terminationGracePeriodSeconds?: number; containers: { name: string }[] };
  status: {
    phase?: string;
    podIP?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: { name: string; state: { terminated?: { finishedAt?: string; containerID?: string; message?: string } } }[];
  };
}

/** The objects of a fixture file (its header comments skipped), in the namespace given. */
function fixtureObjects(path: string, namespace: string): KubeObject[] {
  return parseAllDocuments(readFileSync(repoPath(path), 'utf8'))
    .map((document) => document.toJSON() as KubeObject | null)
    .filter((object): object is KubeObject => object !== null)
    .map((object) => ({ ...object, metadata: { ...object.metadata, namespace } }));
}

async function createIn(cluster: ClusterHandle, namespace: string, object: KubeObject): Promise<KubeObject> {
  const kind = object.kind!;
  const plural = `${kind.toLowerCase()}${kind.endsWith('s') ? 'es' : 's'}`;
  const base = object.apiVersion!.includes('/') ? `/apis/${object.apiVersion}` : `/api/${object.apiVersion}`;
  return cluster.api.create(`${base}/namespaces/${namespace}/${plural}`, object);
}

const opaqueSecret = (name: string, keys: string[]): KubeObject =>
  ({ apiVersion: 'v1', kind: 'Secret', metadata: { name }, type: 'Opaque', stringData: Object.fromEntries(keys.map((key) => [key, `${key} of the test`])) }) as KubeObject;

export interface EnvoyWorkload {
  kind: 'DaemonSet' | 'Deployment';
  name: string;
  namespace: string;
  uid: string;
  /** The pods' label selector, for lists. */
  selector: string;
  /** The workload as created (the fixture's, with the changes the options asked for). */
  manifest: KubeObject;
}

/** Options both fixtures' workloads take. */
interface FixtureOptions {
  /** Sets drainguard.io/min-drain on the pods (the release's own default otherwise). */
  minDrain?: string;
  /** Holds the pods back from the scheduler (NEVER_SCHEDULED): they are admitted and stored, never run. */
  gated?: boolean;
}

type FixtureTemplate = { metadata: { annotations?: Record<string, string> }; spec: ContainersWithPorts & { schedulingGates?: { name: string }[] } };

function applyOptions(template: FixtureTemplate, options: FixtureOptions): void {
  // Suites running at once share the two nodes: a host port would keep one suite's pods Pending.
  withoutHostPorts(template.spec);
  if (options.minDrain) template.metadata.annotations = { ...template.metadata.annotations, 'drainguard.io/min-drain': options.minDrain };
  if (options.gated) template.spec.schedulingGates = [{ name: NEVER_SCHEDULED }];
}

/**
 * Contour's Envoy DaemonSet (examples/contour/03-envoy.yaml at v1.33.6) with its ServiceAccount `envoy`
 * and Secret `envoycert`, and the grace period given (Contour's is 300 s; drainguard derives the drain's
 * deadline from it: 10 s less), and a minimum drain time when given (Contour's own is 0 s: a drain with
 * no connections ends at once). One pod per node (none runs when gated).
 */
export async function contourEnvoy(cluster: ClusterHandle, namespace: string, options: FixtureOptions & { gracePeriodSeconds: number }): Promise<EnvoyWorkload> {
  await createIn(cluster, namespace, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'envoy' } });
  await createIn(cluster, namespace, opaqueSecret('envoycert', ['ca.crt', 'tls.crt', 'tls.key']));
  const [daemonSet] = fixtureObjects('test/fixtures/contour/03-envoy-v1.33.6.yaml', namespace);
  const spec = daemonSet!.spec as { template: FixtureTemplate & { spec: { terminationGracePeriodSeconds: number } } };
  spec.template.spec.terminationGracePeriodSeconds = options.gracePeriodSeconds;
  applyOptions(spec.template, options);
  const created = await createIn(cluster, namespace, daemonSet!);
  return { kind: 'DaemonSet', name: created.metadata.name, namespace, uid: created.metadata.uid!, selector: 'app=envoy', manifest: daemonSet! };
}

/**
 * Envoy Gateway's proxy Deployment as Envoy Gateway v1.5.3 creates it (its test data, in
 * test/fixtures/upstream), with the ServiceAccount, Secret and ConfigMap it mounts, `replicas` pods. The
 * owner reference to its GatewayClass goes (no GatewayClass here: the garbage collector would delete it).
 */
export async function envoyGateway(cluster: ClusterHandle, namespace: string, options: FixtureOptions & { replicas: number }): Promise<EnvoyWorkload> {
  const [deployment] = fixtureObjects('test/fixtures/upstream/envoy-gateway-v1.5.3-deployment-default.yaml', namespace);
  const { ownerReferences: _owners, creationTimestamp: _created, ...metadata } = deployment!.metadata as KubeObject['metadata'] & { ownerReferences?: unknown; creationTimestamp?: unknown };
  const { status: _status, ...rest } = deployment as KubeObject & { status?: unknown };
  const spec = rest.spec as { replicas?: number; selector: { matchLabels: Record<string, string> }; template: FixtureTemplate & { spec: { serviceAccountName: string } } };
  spec.replicas = options.replicas;
  applyOptions(spec.template, options);
  await createIn(cluster, namespace, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: spec.template.spec.serviceAccountName } });
  await createIn(cluster, namespace, opaqueSecret('envoy', ['ca.crt', 'tls.crt', 'tls.key']));
  await createIn(cluster, namespace, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: metadata.name },
    data: { 'xds-trusted-ca.json': '{}', 'xds-certificate.json': '{}' },
  } as KubeObject);
  const manifest = { ...rest, metadata } as KubeObject;
  const created = await createIn(cluster, namespace, manifest);
  const selector = Object.entries(spec.selector.matchLabels).map(([key, value]) => `${key}=${value}`).join(',');
  return { kind: 'Deployment', name: created.metadata.name, namespace, uid: created.metadata.uid!, selector, manifest };
}

const isReady = (pod: PodObject) => pod.metadata.deletionTimestamp === undefined && pod.status.phase === 'Running' && (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

/** The workload's pods once `count` of them run, ready and protected by drainguard (and no other is left). */
export async function readyPods(cluster: ClusterHandle, workload: EnvoyWorkload, count: number): Promise<PodObject[]> {
  return eventually(`${count} ready, protected pods of ${workload.kind} ${workload.namespace}/${workload.name}`, async () => {
    const pods = (await cluster.api.list<PodObject>(`/api/v1/namespaces/${workload.namespace}/pods?labelSelector=${encodeURIComponent(workload.selector)}`)).items;
    const ready = pods.filter(isReady);
    if (ready.length !== count || pods.length !== count) return undefined;
    if (!ready.every((pod) => pod.metadata.labels?.[PROTECTED_LABEL] === 'true')) throw new Error(`a pod of ${workload.name} was not protected by drainguard`);
    return ready;
  });
}

/** `kubectl rollout restart`, then `kubectl rollout status` until the new pods are all available. */
export async function rolloutRestart(cluster: ClusterHandle, workload: EnvoyWorkload): Promise<void> {
  const target = `${workload.kind.toLowerCase()}/${workload.name}`;
  await kubectlOk(cluster, ['-n', workload.namespace, 'rollout', 'restart', target]);
  await kubectlOk(cluster, ['-n', workload.namespace, 'rollout', 'status', target, '--timeout=5m']);
}

/** The release's reporter pods once `count` run and are ready (their /readyz: listed and watching). */
export async function reporterPods(cluster: ClusterHandle, release: { release: string; namespace: string }, count = 2): Promise<PodObject[]> {
  const selector = encodeURIComponent(`app.kubernetes.io/instance=${release.release},app.kubernetes.io/component=reporter`);
  return eventually(`${count} ready reporter pods`, async () => {
    const pods = (await cluster.api.list<PodObject>(`/api/v1/namespaces/${release.namespace}/pods?labelSelector=${selector}`)).items;
    const ready = pods.filter(isReady);
    return ready.length === count && pods.length === count ? ready : undefined;
  });
}

/** GET http://ADDRESS:PORT/metrics, as Prometheus scrapes a reporter pod. */
export function scrape(host: string, port = 8080): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path: '/metrics', timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(new Error(`GET /metrics on ${host}:${port}: ${res.statusCode}`))));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET /metrics on ${host}:${port}: no answer`)));
    req.on('error', reject);
    req.end();
  });
}

export interface StoredEvent extends KubeObject {
  involvedObject: { apiVersion: string; kind: string; name: string; namespace: string; uid: string; fieldPath?: string };
  reason: string;
  message: string;
  type: string;
  count: number;
  source: { component?: string };
  reportingComponent: string;
  reportingInstance: string;
  firstTimestamp: string;
  lastTimestamp: string;
  eventTime: string | null;
}

/** The reporter's Events in a namespace, `pod` or `workload` ones (its own label says which). */
export async function drainEvents(cluster: ClusterHandle, namespace: string, scope: 'pod' | 'workload'): Promise<StoredEvent[]> {
  const selector = encodeURIComponent(`${DRAIN_EVENT_LABEL}=${scope}`);
  return (await cluster.api.list<StoredEvent>(`/api/v1/namespaces/${namespace}/events?labelSelector=${selector}`)).items;
}

/** The reporter's pod Events in `namespace` once there are `count` (one per Envoy termination; more is named when it gives up). */
export async function podEventsOnce(cluster: ClusterHandle, namespace: string, count: number): Promise<StoredEvent[]> {
  return eventually(`${count} drain Events in ${namespace}`, async () => {
    const events = await drainEvents(cluster, namespace, 'pod');
    if (events.length > count) throw new Error(`${events.length} drain Events in ${namespace}, expected ${count}`);
    return events.length === count ? events : undefined;
  });
}
