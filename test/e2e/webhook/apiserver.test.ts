/**
 * drainguard seen from kube-apiserver. The server runs in self mode against the API
 * double; the test behaves like the API server: it trusts only the caBundle of the webhook configuration,
 * verifies the serving certificate for the Service DNS name, posts AdmissionReview v1 for every fixture
 * pod (with and without dryRun), applies the returned JSONPatch with an independent RFC 6902
 * implementation, validates the result, and admits the patched pod again expecting zero operations.
 */
import { randomUUID } from 'node:crypto';
import { applyIndependently } from '../../support/independent-patch';
import { defaultConfig } from '../../../src/config';
import { validatePod } from '../../../src/mutate';
import type { Pod } from '../../../src/k8s';
import { startWebhook, type RunningWebhook } from '../../../src/server/start';
import { KubeApiDouble } from '../../support/kube-api-double';
import { admissionReview, fixturePods, httpsRequest, silentLogger } from '../../integration/server/webhook-test-kit';

const NAMESPACE = 'drainguard-system';
const SERVICE = 'drainguard';
const SERVICE_DNS = `${SERVICE}.${NAMESPACE}.svc`;

let double: KubeApiDouble;
let webhook: RunningWebhook;
let caBundle: string;

beforeAll(async () => {
  double = await KubeApiDouble.start();
  double.putWebhookConfiguration({
    metadata: { name: 'drainguard' },
    webhooks: [
      {
        name: 'pods.drainguard.io',
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        clientConfig: { service: { name: SERVICE, namespace: NAMESPACE, path: '/mutate' } },
      },
    ],
  });
  webhook = await startWebhook({
    host: '127.0.0.1',
    port: 0,
    config: defaultConfig(),
    logger: silentLogger(),
    shutdownDelayMs: 0,
    tls: {
      mode: 'self',
      namespace: NAMESPACE,
      secretName: 'drainguard-tls',
      webhookConfigName: 'drainguard',
      serviceName: SERVICE,
      kube: { kubeConfig: await double.kubeConfig() },
    },
  });
  await webhook.certificateLoaded;
  const stored = double.webhookConfiguration<{ webhooks: { clientConfig: { caBundle: string } }[] }>('drainguard');
  caBundle = Buffer.from(stored.webhooks[0]!.clientConfig.caBundle, 'base64').toString('utf8');
});
afterAll(async () => {
  await webhook.close();
  await double.close();
});

interface ReviewResponse {
  apiVersion: string;
  kind: string;
  response: { uid: string; allowed: boolean; patchType?: string; patch?: string; warnings?: string[]; status?: { message: string } };
}

/** What the API server does for one webhook call. */
async function callWebhook(pod: Pod, dryRun: boolean): Promise<{ uid: string; review: ReviewResponse }> {
  const uid = randomUUID();
  const result = await httpsRequest({
    port: webhook.server.address().port,
    ca: caBundle,
    servername: SERVICE_DNS,
    path: '/mutate?timeout=10s',
    body: JSON.stringify(admissionReview(pod, { uid, dryRun })),
  });
  expect(result.status).toBe(200);
  return { uid, review: result.json as ReviewResponse };
}

function decodePatch(patch: string): unknown[] {
  return JSON.parse(Buffer.from(patch, 'base64').toString('utf8')) as unknown[];
}

const pods = fixturePods();

test('the fixtures include every kind of pod', () => {
  expect(pods.length).toBeGreaterThanOrEqual(8);
  expect(pods.some(({ name }) => name.startsWith('contour/'))).toBe(true);
  expect(pods.some(({ name }) => name.startsWith('not-envoy'))).toBe(true);
});

describe.each(pods.map(({ name, pod }) => [name, pod] as const))('%s', (name, pod) => {
  const isEnvoy = !name.startsWith('not-envoy');

  it.each([false, true])('dryRun=%s: answers like the API server expects, and the patched pod is final', async (dryRun) => {
    const { uid, review } = await callWebhook(pod, dryRun);
    expect(review.apiVersion).toBe('admission.k8s.io/v1');
    expect(review.kind).toBe('AdmissionReview');
    expect(review.response.uid).toBe(uid);
    expect(review.response.allowed).toBe(true);

    if (!isEnvoy) {
      expect(review.response.patchType).toBeUndefined();
      expect(review.response.patch).toBeUndefined();
      return;
    }
    expect(review.response.patchType).toBe('JSONPatch');
    const operations = decodePatch(review.response.patch!);
    expect(operations.length).toBeGreaterThan(0);

    const patched = applyIndependently(pod, operations);
    expect(validatePod(patched)).toEqual([]);

    const again = await callWebhook(patched, dryRun);
    expect(again.review.response.allowed).toBe(true);
    expect(again.review.response.patch).toBeUndefined();
    expect(again.review.response.patchType).toBeUndefined();
  });

  it('answers dryRun exactly like a real request', async () => {
    const [wet, dry] = await Promise.all([callWebhook(pod, false), callWebhook(pod, true)]);
    const { uid: _w, ...wetResponse } = wet.review.response;
    const { uid: _d, ...dryResponse } = dry.review.response;
    expect(dryResponse).toEqual(wetResponse);
  });
});

test('the serving certificate is refused for a name it does not carry', async () => {
  await expect(
    httpsRequest({ port: webhook.server.address().port, ca: caBundle, servername: 'other.example.com', method: 'GET', path: '/healthz' }),
  ).rejects.toThrow(/altnames|does not match/i);
});

test('metrics count the requests, mutations and skips, with sub-millisecond latency buckets', async () => {
  const metrics = await httpsRequest({ port: webhook.server.address().port, ca: caBundle, servername: SERVICE_DNS, method: 'GET', path: '/metrics' });
  expect(metrics.status).toBe(200);
  expect(metrics.text).toMatch(/drainguard_admission_requests_total\{result="mutated"\} [1-9]/);
  expect(metrics.text).toMatch(/drainguard_admission_requests_total\{result="unchanged"\} [1-9]/);
  expect(metrics.text).toMatch(/drainguard_mutations_total\{action="prestop"\} [1-9]/);
  expect(metrics.text).toMatch(/drainguard_skipped_pods_total\{reason="not-envoy"\} [1-9]/);
  expect(metrics.text).toMatch(/drainguard_admission_duration_seconds_bucket\{le="0.0001",result="mutated"\}/);
  expect(metrics.text).toMatch(/drainguard_certificate_expiry_timestamp_seconds \d{10}/);
  // Self mode is its own CA: that CA's expiry is exported too, and never before the serving certificate's.
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics.text)?.[1]);
  expect(value('drainguard_ca_certificate_expiry_timestamp_seconds')).toBeGreaterThanOrEqual(value('drainguard_certificate_expiry_timestamp_seconds'));
  expect(metrics.text).toMatch(/^drainguard_ready 1$/m);
});
