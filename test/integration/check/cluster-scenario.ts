/**
 * drainguard installed in the Kubernetes API double, from real parts: drainguard's objects are what
 * `helm template` renders from the chart, the Secret and caBundle are written by drainguard's own
 * self-mode code running against the double. Only the reporter's double-based suites still use it
 * (test/integration/report/acceptance.test.ts, test/e2e/report/rollout.test.ts); `drainguard check`'s
 * suites run against the real API server (test/kube/check*.test.ts) and take their pods from
 * test/support/check-pods.ts.
 */
import { randomUUID } from 'node:crypto';
import { defaultConfig, type Config } from '../../../src/config';
import { mutate, type Pod } from '../../../src/mutate';
import { startWebhook } from '../../../src/server/start';
import { VERSION } from '../../../src/version';
import { renderChart, type RenderOptions } from '../../support/helm';
import { applyIndependently, jsonCopy } from '../../support/independent-patch';
import type { KubeApiDouble, KubeObject } from '../../support/kube-api-double';
import { fixturePods, silentLogger } from '../server/webhook-test-kit';

export const DRAINGUARD_NAMESPACE = 'drainguard-system';
export const WEBHOOK_CONFIGURATION = 'drainguard-drainguard-system';
export const SECRET = 'drainguard-tls';
const SERVED_KINDS = new Set(['Deployment', 'Service', 'ConfigMap', 'MutatingWebhookConfiguration']);

/**
 * Installs drainguard as `helm install drainguard charts/drainguard -n drainguard-system` would, with
 * the Deployment's replicas available and the Service's endpoints ready, then runs the self-mode
 * certificate code once so the Secret and caBundle are drainguard's own.
 */
export async function installDrainguard(double: KubeApiDouble, render: RenderOptions = {}): Promise<void> {
  double.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: DRAINGUARD_NAMESPACE } });
  const key = JSON.stringify(render);
  let objects = renders.get(key);
  if (!objects) renders.set(key, (objects = renderChart({ namespace: DRAINGUARD_NAMESPACE, ...render })));
  for (const object of objects) {
    if (!SERVED_KINDS.has(object.kind)) continue;
    const stored: KubeObject = { ...object, metadata: { ...object.metadata } };
    if (object.kind === 'Deployment') {
      const replicas = (object.spec as { replicas: number }).replicas;
      stored.status = { observedGeneration: 1, replicas, updatedReplicas: replicas, readyReplicas: replicas, availableReplicas: replicas };
    }
    double.put(stored);
  }
  double.put(endpointSlice(['10.0.0.11', '10.0.0.12'].map((ip) => ({ ip, ready: true }))));

  if (selfMode) {
    // What drainguard wrote the first time: generating keys again for every test only costs time.
    double.put(selfMode.secret);
    setCaBundle(double, selfMode.caBundle);
    return;
  }
  const webhook = await startWebhook({
    host: '127.0.0.1',
    port: 0,
    config: defaultConfig(),
    logger: silentLogger(),
    shutdownDelayMs: 0,
    tls: {
      mode: 'self',
      namespace: DRAINGUARD_NAMESPACE,
      secretName: SECRET,
      webhookConfigName: WEBHOOK_CONFIGURATION,
      serviceName: 'drainguard',
      kube: { kubeConfig: await double.kubeConfig() },
    },
  });
  try {
    await webhook.certificateLoaded;
  } finally {
    await webhook.close();
  }
  const secret = double.secret(DRAINGUARD_NAMESPACE, SECRET)!;
  const { resourceVersion: _rv, uid: _uid, creationTimestamp: _ct, ...metadata } = secret.metadata;
  selfMode = { secret: { ...secret, apiVersion: 'v1', kind: 'Secret', metadata }, caBundle: caBundleOf(double) };
}

/** `helm template` output per set of options, and the Secret and caBundle self mode produced. */
const renders = new Map<string, ReturnType<typeof renderChart>>();
let selfMode: { secret: KubeObject; caBundle: string } | undefined;

type StoredConfiguration = { metadata: KubeObject['metadata']; webhooks: { clientConfig: { caBundle?: string } }[] };

function caBundleOf(double: KubeApiDouble): string {
  return double.webhookConfiguration<StoredConfiguration>(WEBHOOK_CONFIGURATION).webhooks[0]!.clientConfig.caBundle ?? '';
}

function setCaBundle(double: KubeApiDouble, caBundle: string): void {
  const configuration = double.webhookConfiguration<StoredConfiguration>(WEBHOOK_CONFIGURATION);
  for (const webhook of configuration.webhooks) webhook.clientConfig.caBundle = caBundle;
  double.put({ ...configuration, apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration' });
}

/** The EndpointSlice the endpointslice controller keeps for drainguard's Service. */
function endpointSlice(endpoints: { ip: string; ready: boolean }[]): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: 'drainguard-x7k2p',
      namespace: DRAINGUARD_NAMESPACE,
      generateName: 'drainguard-',
      labels: { 'kubernetes.io/service-name': 'drainguard', 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' },
    },
    addressType: 'IPv4',
    endpoints: endpoints.map(({ ip, ready }, index) => ({
      addresses: [ip],
      conditions: { ready, serving: ready, terminating: false },
      targetRef: { kind: 'Pod', namespace: DRAINGUARD_NAMESPACE, name: `drainguard-6d8f7b9c4-${index}`, uid: randomUUID() },
    })),
    ports: [{ name: 'https', port: 8443, protocol: 'TCP' }],
  };
}

export function namespace(name: string, labels: Record<string, string> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } };
}

export const OPT_IN = { 'drainguard.io/inject': 'enabled' };

let fixtures: ReturnType<typeof fixturePods> | undefined;

function fixture(name: string): Pod {
  fixtures ??= fixturePods();
  const found = fixtures.find((entry) => entry.name === name);
  if (!found) throw new Error(`no fixture pod ${name}`);
  return jsonCopy(found.pod);
}

/** The pod templates the scenarios use. */
export const templates = {
  /** Contour's Envoy DaemonSet (v1.33.6): envoy plus the shutdown-manager sidecar. */
  contour: () => fixture('contour/03-envoy-v1.33.6.yaml'),
  /** Envoy Gateway's proxy Deployment pod. */
  envoyGateway: () => fixture('envoy-gateway-envoy.yaml'),
  /** Plain Envoy, recognised by its image. */
  plainEnvoy: () => fixture('plain-envoy.yaml'),
  /** nginx: not an Envoy pod. */
  notEnvoy: () => fixture('not-envoy.yaml'),
};

export type Owner = { kind: 'DaemonSet' | 'ReplicaSet' | 'StatefulSet'; name: string } | undefined;
export type PodState = 'unprotected' | 'protected' | { rewrittenBy: string };

/**
 * A pod as the API server would store it: named, owned, running. `protected` is the template rewritten
 * by this drainguard; `{ rewrittenBy }` the same rewrite recorded by another version.
 */
export function pod(
  template: Pod,
  options: { name: string; namespace: string; owner?: Owner; state?: PodState; config?: Config; nodeName?: string },
): KubeObject {
  const { name, namespace, owner, state = 'unprotected', config = defaultConfig(), nodeName } = options;
  let spec = jsonCopy(template);
  if (state !== 'unprotected') {
    const result = mutate(spec, config);
    if (result.status !== 'mutated') throw new Error(`${name}: expected mutate to rewrite the template, got ${result.status}`);
    spec = applyIndependently(spec, result.patch);
    if (typeof state === 'object') {
      const annotations = spec.metadata!.annotations!;
      const status = JSON.parse(annotations['drainguard.io/status']!) as { version: string };
      annotations['drainguard.io/status'] = JSON.stringify({ ...status, version: state.rewrittenBy });
    }
  }
  const { generateName: _generateName, ...metadata } = spec.metadata ?? {};
  const containers = [...spec.spec.containers.map((c) => ({ c, init: false })), ...(spec.spec.initContainers ?? []).map((c) => ({ c, init: true }))];
  const running = (c: { name: string }) => ({ name: c.name, ready: true, restartCount: 0, state: { running: { startedAt: '2026-01-01T00:00:00Z' } } });
  if (nodeName !== undefined) spec.spec = { ...spec.spec, nodeName };
  return {
    ...spec,
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...metadata,
      name,
      namespace,
      ...(owner ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: owner.kind, name: owner.name, uid: randomUUID(), controller: true, blockOwnerDeletion: true }] } : {}),
    },
    status: {
      phase: 'Running',
      containerStatuses: containers.filter((entry) => !entry.init).map((entry) => running(entry.c)),
      initContainerStatuses: containers
        .filter((entry) => entry.init)
        .map((entry) => (entry.c.restartPolicy === 'Always' ? running(entry.c) : { name: entry.c.name, state: { terminated: { exitCode: 0 } } })),
    },
  } as KubeObject;
}

/** A Node as its kubelet reports itself (`status.nodeInfo`, abridged to what check reads and a little more). */
export function node(name: string, kubeletVersion: string, containerRuntimeVersion: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' } },
    status: {
      nodeInfo: { kubeletVersion, containerRuntimeVersion, kubeProxyVersion: '', operatingSystem: 'linux', architecture: 'amd64', osImage: 'Debian GNU/Linux 13 (trixie)' },
    },
  };
}

/** A ReplicaSet a Deployment controls, as the Deployment controller names and owns it. */
export function replicaSet(namespace: string, deployment: string, hash: string): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: {
      name: `${deployment}-${hash}`,
      namespace,
      labels: { 'pod-template-hash': hash },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment, uid: randomUUID(), controller: true, blockOwnerDeletion: true }],
    },
    spec: { replicas: 2, selector: { matchLabels: { 'pod-template-hash': hash } } },
  };
}

export { VERSION };
