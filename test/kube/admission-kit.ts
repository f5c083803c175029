/**
 * What the admission suites of the kube lane share: pods as the API server stores them, whether
 * drainguard rewrote one, pods that are admitted but never run (they stay Pending on no node, so the
 * kubelet stand-in starts nothing for them), the release's Service endpoints, and small HTTPS
 * admission webhooks of a test's own, registered by `url:` as envtest registers webhooks.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import { createCertificateAuthority, createServingCertificate } from '../../src/certs/pki';
import { Annotations, type Pod } from '../../src/mutate';
import { ApiError, type KubeObject } from '../support/cluster/api';
import { CHART_DIR } from '../support/helm';
import { adminApi, eventually, helm, uniqueSuffix, type DrainguardRelease } from '../support/cluster/lane';
import { httpsRequest, type HttpsResult } from '../integration/server/webhook-test-kit';

export interface StoredPod extends KubeObject {
  spec: Pod['spec'] & { nodeName?: string };
  status?: { phase?: string };
}

/** Whether drainguard rewrote the pod: its status annotation says what it did. */
export function isRewritten(pod: StoredPod): boolean {
  return pod.metadata.annotations?.[Annotations.status] !== undefined;
}

/** The Envoy container's preStop command, as stored. */
export function envoyPreStop(pod: StoredPod, envoyName = 'envoy'): string[] | undefined {
  return pod.spec.containers.find((c) => c.name === envoyName)?.lifecycle?.preStop?.exec?.command;
}

/** Pods only the scheduler would need: a node selector no node matches, so no node ever runs them. */
const NEVER_SCHEDULED = { 'test.drainguard.io/no-such-node': 'true' };

/** A bare Envoy pod (a container named `envoy` of Envoy's image, as Envoy Gateway and Contour name theirs). */
export function envoyPod(name: string, metadata: { labels?: Record<string, string>; annotations?: Record<string, string> } = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, ...metadata },
    spec: {
      nodeSelector: NEVER_SCHEDULED,
      containers: [
        {
          name: 'envoy',
          image: 'docker.io/envoyproxy/envoy:v1.35.3',
          args: ['--config-path', '/config/envoy.yaml', '--log-level', 'info'],
          ports: [{ name: 'http', containerPort: 8080 }],
          volumeMounts: [{ name: 'config', mountPath: '/config', readOnly: true }],
        },
      ],
      volumes: [{ name: 'config', emptyDir: {} }],
    },
  } as Pod;
}

/** A pod that cannot be Envoy: nothing in it matches the chart's matchConditions. */
export function plainPod(name: string, annotations?: Record<string, string>): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, ...(annotations ? { annotations } : {}) },
    spec: { nodeSelector: NEVER_SCHEDULED, containers: [{ name: 'web', image: 'docker.io/library/nginx:1.27' }] },
  } as Pod;
}

/** Creates a pod; the stored pod, or the API server's refusal (status and message). */
export async function createPod(namespace: string, pod: Pod, query = ''): Promise<{ stored?: StoredPod; refused?: { status: number; message: string } }> {
  const answer = await adminApi().raw('POST', `/api/v1/namespaces/${namespace}/pods${query}`, pod);
  if (answer.status === 201 || answer.status === 200) return { stored: answer.body as StoredPod };
  const body = answer.body as { message?: string } | string;
  return { refused: { status: answer.status, message: typeof body === 'string' ? body : (body.message ?? JSON.stringify(body)) } };
}

/** Like createPod, for a test that expects the pod to be admitted. */
export async function admittedPod(namespace: string, pod: Pod): Promise<StoredPod> {
  const { stored, refused } = await createPod(namespace, pod);
  if (!stored) throw new Error(`pod ${pod.metadata?.name} refused: ${refused!.status} ${refused!.message}`);
  return stored;
}

/** The release's webhook Deployment (the chart's fullname). */
async function webhookDeployment(release: DrainguardRelease): Promise<string> {
  const list = await adminApi().list(`/apis/apps/v1/namespaces/${release.namespace}/deployments?labelSelector=app.kubernetes.io%2Finstance%3D${release.release}`);
  const names = list.items.map((d) => d.metadata.name).filter((name) => !name.endsWith('-reporter'));
  if (names.length !== 1) throw new Error(`release ${release.release}: expected one webhook Deployment, found ${names.join(', ')}`);
  return names[0]!;
}

interface EndpointSlice extends KubeObject {
  endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[];
}

/** The addresses the API server would call for the release's Service: ready endpoints of its EndpointSlices. */
async function readyEndpoints(release: DrainguardRelease): Promise<string[]> {
  const service = await webhookDeployment(release);
  const slices = await adminApi().list<EndpointSlice>(
    `/apis/discovery.k8s.io/v1/namespaces/${release.namespace}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3D${service}`,
  );
  return slices.items.flatMap((slice) => slice.endpoints ?? []).filter((e) => e.conditions?.ready === true).flatMap((e) => e.addresses);
}

/** Scales the webhook to `replicas` and waits until its Service has that many ready endpoints. */
export async function scaleWebhook(release: DrainguardRelease, replicas: number): Promise<void> {
  const name = await webhookDeployment(release);
  await adminApi().patch(`/apis/apps/v1/namespaces/${release.namespace}/deployments/${name}/scale`, { spec: { replicas } });
  await eventually(`${replicas} ready endpoints of ${name}`, async () => ((await readyEndpoints(release)).length === replicas ? true : undefined), 180_000);
}

/**
 * `helm upgrade --reuse-values` of the release with `values` changed, waiting for its Deployment. The
 * chart's replica count applies again (a `kubectl scale` is undone, as helm undoes any change to a
 * field it renders).
 */
export function upgradeDrainguard(release: DrainguardRelease, values: Record<string, string>): void {
  const settings = Object.entries(values).flatMap(([key, value]) => ['--set', `${key}=${value}`]);
  const result = helm(['upgrade', release.release, CHART_DIR, '--namespace', release.namespace, '--reuse-values', '--wait', '--timeout', '3m', ...settings]);
  if (result.status !== 0) throw new Error(`helm upgrade ${release.release} failed:\n${result.stderr}`);
}

/** The release's webhook pods that are ready, with their IPs. */
export async function webhookPods(release: DrainguardRelease): Promise<(StoredPod & { status: { podIP?: string } })[]> {
  const name = await webhookDeployment(release);
  const pods = await adminApi().list<StoredPod & { status: { podIP?: string; conditions?: { type: string; status: string }[] } }>(
    `/api/v1/namespaces/${release.namespace}/pods?labelSelector=app.kubernetes.io%2Finstance%3D${release.release}`,
  );
  return pods.items.filter((pod) => pod.metadata.name.startsWith(`${name}-`) && !pod.metadata.deletionTimestamp && pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
}

/** The name kube-apiserver verifies the webhook's certificate for: `<service>.<namespace>.svc`. */
async function serviceDnsName(release: DrainguardRelease): Promise<string> {
  return `${await webhookDeployment(release)}.${release.namespace}.svc`;
}

/** The CA bundle the API server trusts for the release's webhook (PEM). */
export async function publishedCaBundle(release: DrainguardRelease): Promise<string> {
  const stored = await webhookConfiguration<{ webhooks: { clientConfig: { caBundle?: string } }[] }>(release);
  return Buffer.from(stored.webhooks[0]!.clientConfig.caBundle ?? '', 'base64').toString('utf8');
}

/**
 * A GET of a webhook pod's HTTPS port (pod IP, port 8443 as the chart runs it), verified as the API
 * server verifies it: the published caBundle and the Service's DNS name.
 */
export async function getFromWebhookPod(release: DrainguardRelease, podIP: string, path: string): Promise<HttpsResult> {
  return httpsRequest({ host: podIP, port: 8443, method: 'GET', path, ca: await publishedCaBundle(release), servername: await serviceDnsName(release) });
}

/** One counter of a webhook pod's /metrics (0 when the series has not appeared yet). */
export async function webhookCounter(release: DrainguardRelease, podIP: string, series: string): Promise<number> {
  const metrics = await getFromWebhookPod(release, podIP, '/metrics');
  const line = metrics.text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

/** The release's webhook configuration as stored. */
export function webhookConfiguration<T = KubeObject>(release: DrainguardRelease): Promise<T> {
  return adminApi().get<T>(`/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${release.webhookConfigName}`);
}

// ---- webhooks of a test's own ------------------------------------------------------------------

export interface AdmissionRequest {
  uid: string;
  object: Pod;
  dryRun?: boolean;
}

/** A webhook's answer to one review: allowed with a JSON Patch, or no answer at all (stalled). */
export type Answer = { patch?: unknown[] } | 'stall';

export interface TestWebhook {
  /** `url:` of the webhook, on loopback (kube-apiserver runs on this machine). */
  url: string;
  caBundle: string;
  /** Every review the webhook received, in order. */
  received: AdmissionRequest[];
  close(): Promise<void>;
}

/**
 * An HTTPS admission webhook on 127.0.0.1 with a CA of its own: `answer` decides each review. A stalled
 * review is held open, never answered, until the webhook closes.
 */
export async function startTestWebhook(answer: (request: AdmissionRequest) => Answer): Promise<TestWebhook> {
  const now = new Date();
  const ca = createCertificateAuthority(`test webhook CA ${uniqueSuffix()}`, { now, validityDays: 1 });
  const serving = createServingCertificate(ca, ['127.0.0.1'], { now, validityDays: 1 });
  const received: AdmissionRequest[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { request: AdmissionRequest };
      received.push(review.request);
      const decided = answer(review.request);
      if (decided === 'stall') return;
      const response = {
        uid: review.request.uid,
        allowed: true,
        ...(decided.patch ? { patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(decided.patch)).toString('base64') } : {}),
      };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response }));
    });
  });
  server.on('secureConnection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  return {
    url: `https://127.0.0.1:${port}/${randomUUID()}`,
    caBundle: Buffer.from(ca.cert).toString('base64'),
    received,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}

export interface TestWebhookRegistration {
  name: string;
  delete(): Promise<void>;
}

/**
 * A MutatingWebhookConfiguration of the test's own: one webhook on pod CREATE in the namespaces
 * labelled `namespaceLabels` (labels no other suite uses), at `clientConfig`. Its name decides where it
 * runs among the webhooks (the API server calls them in the order of their configurations' names).
 */
export async function registerWebhook(
  name: string,
  namespaceLabels: Record<string, string>,
  clientConfig: Record<string, unknown>,
  settings: { failurePolicy: 'Ignore' | 'Fail'; timeoutSeconds?: number; reinvocationPolicy?: 'Never' | 'IfNeeded'; matchConditions?: unknown[] },
): Promise<TestWebhookRegistration> {
  const api = adminApi();
  const path = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';
  await api.create(path, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name },
    webhooks: [
      {
        name: 'pods.test.drainguard.io',
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        clientConfig,
        rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'], scope: 'Namespaced' }],
        namespaceSelector: { matchLabels: namespaceLabels },
        failurePolicy: settings.failurePolicy,
        timeoutSeconds: settings.timeoutSeconds ?? 2,
        reinvocationPolicy: settings.reinvocationPolicy ?? 'Never',
        ...(settings.matchConditions ? { matchConditions: settings.matchConditions } : {}),
      },
    ],
  });
  return {
    name,
    delete: async () => {
      try {
        await api.delete(`${path}/${name}`);
      } catch (error) {
        if (!(error instanceof ApiError && error.status === 404)) throw error;
      }
    },
  };
}
