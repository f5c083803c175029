/**
 * drainguard in the real kube-apiserver's chain of mutating webhooks, beside webhooks of the test's own
 * (HTTPS servers on loopback with CAs of their own, registered by `url:`, in namespaces labelled for
 * them alone):
 *
 * - re-invocation: the API server calls drainguard again after its built-in plugins or a later webhook
 *   changed the pod (the chart's reinvocationPolicy IfNeeded), and drainguard restores what a later
 *   webhook undid; a copy of drainguard's configuration with reinvocationPolicy Never (the chart does
 *   not let it be set) shows the undone drain staying undone;
 * - timeoutSeconds: a webhook that never answers costs the API server its timeout, then failurePolicy
 *   decides: Ignore admits the pod (drainguard's rewrite and all), Fail refuses it.
 *
 * How often drainguard answered, and how, is read from its own /metrics (the webhook pod's port,
 * verified with the published caBundle for the Service's name, as the API server verifies it); the last
 * test checks that verification itself and the metrics.
 */
import { adminApi, createNamespace, deleteNamespace, eventually, installDrainguard, uninstallDrainguard, uniqueSuffix, type DrainguardRelease } from '../support/cluster/lane';
import { X509Certificate } from 'node:crypto';
import { Annotations } from '../../src/mutate';
import type { KubeObject } from '../support/cluster/api';
import { httpsRequest } from '../integration/server/webhook-test-kit';
import {
  admittedPod,
  createPod,
  envoyPod,
  envoyPreStop,
  getFromWebhookPod,
  isRewritten,
  plainPod,
  publishedCaBundle,
  registerWebhook,
  startTestWebhook,
  webhookConfiguration,
  webhookCounter,
  webhookPods,
  type StoredPod,
  type TestWebhook,
  type TestWebhookRegistration,
} from './admission-kit';

const CONFIGURATIONS = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';

let release: DrainguardRelease;
let podIP: string;
const namespaces: string[] = [];
const webhooks: TestWebhook[] = [];
const registrations: TestWebhookRegistration[] = [];

beforeAll(async () => {
  release = await installDrainguard('adm-chain');
  podIP = (await webhookPods(release))[0]!.status.podIP!;
}, 300_000);

afterAll(async () => {
  for (const registration of registrations) await registration.delete();
  for (const webhook of webhooks) await webhook.close();
  for (const namespace of namespaces) await deleteNamespace(namespace);
  if (release) await uninstallDrainguard(release);
}, 300_000);

async function namespaceWith(prefix: string, labels: Record<string, string>): Promise<string> {
  const namespace = await createNamespace(prefix, labels);
  namespaces.push(namespace);
  return namespace;
}

/** drainguard's answers so far, by result. */
async function answers(): Promise<{ mutated: number; unchanged: number }> {
  const count = (result: string) => webhookCounter(release, podIP, `drainguard_admission_requests_total{result="${result}"}`);
  return { mutated: await count('mutated'), unchanged: await count('unchanged') };
}

/** What creating `pod` cost drainguard: its answers during the create. */
async function answersFor(create: () => Promise<unknown>): Promise<{ mutated: number; unchanged: number }> {
  const before = await answers();
  await create();
  const after = await answers();
  return { mutated: after.mutated - before.mutated, unchanged: after.unchanged - before.unchanged };
}

/** Waits until the API server calls `webhook` for pods of `namespace` (its configuration is in effect). */
async function untilCalled(webhook: TestWebhook, namespace: string): Promise<void> {
  await eventually(`the API server calling the test webhook for ${namespace}`, async () => {
    const name = `probe-${uniqueSuffix()}`;
    await createPod(namespace, envoyPod(name), '?dryRun=All');
    return webhook.received.some((request) => request.object.metadata?.name === name) ? true : undefined;
  });
}

function expectDrainInstalled(pod: StoredPod): void {
  expect(isRewritten(pod)).toBe(true);
  expect(envoyPreStop(pod)?.slice(0, 2)).toEqual(['/config/drainguard/envoy-shutdown', 'drain']);
  expect(pod.spec.initContainers?.map((c) => c.name)).toEqual(['drainguard-install']);
}

test("alone, drainguard is re-invoked once the ServiceAccount plugin's second run mounted its token into the installer, and finds its work whole", async () => {
  const namespace = await namespaceWith('adm-chain-alone', release.optIn);
  let pod: StoredPod | undefined;
  const cost = await answersFor(async () => (pod = await admittedPod(namespace, envoyPod('alone'))));
  expectDrainInstalled(pod!);
  const installer = pod!.spec.initContainers![0]!;
  expect(installer.volumeMounts?.map((m) => m.mountPath)).toEqual(['/config', '/var/run/secrets/kubernetes.io/serviceaccount']);
  expect(cost).toEqual({ mutated: 1, unchanged: 1 });
});

describe('a later webhook that removes Envoy\'s preStop', () => {
  const undoLabel = { [`test.drainguard.io/undo-${uniqueSuffix()}`]: 'yes' };
  let undo: TestWebhook;

  beforeAll(async () => {
    // It answers every pod after drainguard's with a patch removing the preStop drainguard wrote.
    undo = await startTestWebhook((request) => {
      const index = request.object.spec.containers.findIndex((c) => c.lifecycle?.preStop !== undefined);
      return index >= 0 ? { patch: [{ op: 'remove', path: `/spec/containers/${index}/lifecycle/preStop` }] } : {};
    });
    webhooks.push(undo);
    // The API server calls webhooks in the order of their configurations' names: this one comes after drainguard's.
    registrations.push(await registerWebhook(`zz-adm-chain-undo-${uniqueSuffix()}`, undoLabel, { url: undo.url, caBundle: undo.caBundle }, { failurePolicy: 'Fail', reinvocationPolicy: 'Never' }));
  });

  test('with the chart\'s reinvocationPolicy IfNeeded, drainguard is called again and the stored pod has its drain', async () => {
    const namespace = await namespaceWith('adm-chain-undo', { ...release.optIn, ...undoLabel });
    await untilCalled(undo, namespace);
    let pod: StoredPod | undefined;
    const cost = await answersFor(async () => (pod = await admittedPod(namespace, envoyPod('restored'))));
    // The later webhook saw drainguard's drain and removed it; drainguard, called again, put it back.
    const seen = undo.received.find((request) => request.object.metadata?.name === 'restored')!;
    expect(isRewritten(seen.object as StoredPod)).toBe(true);
    expect(envoyPreStop(seen.object as StoredPod)).toBeDefined();
    expect(undo.received.filter((request) => request.object.metadata?.name === 'restored')).toHaveLength(1);
    expectDrainInstalled(pod!);
    expect(cost).toEqual({ mutated: 2, unchanged: 0 });
  });

  test('with reinvocationPolicy Never (a copy of drainguard\'s configuration), the drain stays undone', async () => {
    const copyLabel = { [`test.drainguard.io/never-${uniqueSuffix()}`]: 'yes' };
    const original = await webhookConfiguration<{ webhooks: Record<string, unknown>[] }>(release);
    const name = `adm-chain-never-${uniqueSuffix()}`;
    await adminApi().create(CONFIGURATIONS, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name },
      webhooks: [{ ...original.webhooks[0], reinvocationPolicy: 'Never', namespaceSelector: { matchLabels: copyLabel } }],
    });
    registrations.push({ name, delete: () => adminApi().delete(`${CONFIGURATIONS}/${name}`) });
    const namespace = await namespaceWith('adm-chain-never', { ...copyLabel, ...undoLabel });
    await untilCalled(undo, namespace);
    await eventually('the copy of drainguard\'s configuration in effect', async () => {
      const { stored } = await createPod(namespace, envoyPod(`probe-${uniqueSuffix()}`), '?dryRun=All');
      return stored && isRewritten(stored) ? true : undefined;
    });
    let pod: StoredPod | undefined;
    const cost = await answersFor(async () => (pod = await admittedPod(namespace, envoyPod('undone'))));
    expect(isRewritten(pod!)).toBe(true);
    expect(pod!.spec.initContainers?.map((c) => c.name)).toEqual(['drainguard-install']);
    expect(envoyPreStop(pod!)).toBeUndefined();
    expect(cost).toEqual({ mutated: 1, unchanged: 0 });
  });
});

describe('a webhook that never answers', () => {
  const stallLabel = { [`test.drainguard.io/stall-${uniqueSuffix()}`]: 'yes' };
  let stalled: TestWebhook;
  let registration: TestWebhookRegistration;
  let namespace: string;

  beforeAll(async () => {
    stalled = await startTestWebhook(() => 'stall');
    webhooks.push(stalled);
    registration = await registerWebhook(`adm-chain-stall-${uniqueSuffix()}`, stallLabel, { url: stalled.url, caBundle: stalled.caBundle }, { failurePolicy: 'Ignore', timeoutSeconds: 1 });
    registrations.push(registration);
    namespace = await namespaceWith('adm-chain-stall', { ...release.optIn, ...stallLabel });
    await untilCalled(stalled, namespace);
  });

  test('failurePolicy Ignore: after its timeoutSeconds the pod is admitted, rewritten by drainguard and by nothing else', async () => {
    const pod = await admittedPod(namespace, envoyPod('past-the-stall'));
    expect(stalled.received.some((request) => request.object.metadata?.name === 'past-the-stall')).toBe(true);
    expectDrainInstalled(pod);
  });

  test('failurePolicy Fail: the API server refuses the pod once the timeout passes', async () => {
    await adminApi().patch(`${CONFIGURATIONS}/${registration.name}`, [{ op: 'replace', path: '/webhooks/0/failurePolicy', value: 'Fail' }], 'json');
    await eventually('failurePolicy Fail in effect', async () => ((await createPod(namespace, envoyPod(`probe-${uniqueSuffix()}`), '?dryRun=All')).refused ? true : undefined));
    const { stored, refused } = await createPod(namespace, envoyPod('stopped-by-the-stall'));
    expect(stored).toBeUndefined();
    expect(stalled.received.some((request) => request.object.metadata?.name === 'stopped-by-the-stall')).toBe(true);
    expect(refused!.message).toMatch(/failed calling webhook "pods\.test\.drainguard\.io": failed to call webhook: Post "https:\/\/127\.0\.0\.1:\d+\/[^"]+\?timeout=1s": context deadline exceeded/);
    expect(await adminApi().find(`/api/v1/namespaces/${namespace}/pods/stopped-by-the-stall`)).toBeUndefined();
  });
});

test("the webhook as the API server reaches it: the published caBundle verifies its certificate for the Service's name and no other; its metrics count what it answered", async () => {
  // A pod the CEL sends (a drainguard.io/ annotation) that is not Envoy: drainguard skips it.
  const namespace = await namespaceWith('adm-chain-metrics', release.optIn);
  expectDrainInstalled(await admittedPod(namespace, envoyPod('counted')));
  expect(isRewritten(await admittedPod(namespace, plainPod('web', { [Annotations.inject]: 'enabled' })))).toBe(false);

  const caBundle = await publishedCaBundle(release);
  const secret = await adminApi().list<KubeObject & { data: Record<string, string> }>(`/api/v1/namespaces/${release.namespace}/secrets?labelSelector=app.kubernetes.io%2Fmanaged-by%3Ddrainguard`);
  expect(secret.items).toHaveLength(1);
  expect(caBundle).toBe(Buffer.from(secret.items[0]!.data['ca.crt']!, 'base64').toString('utf8'));
  const ready = await getFromWebhookPod(release, podIP, '/readyz');
  expect(ready.status).toBe(200);
  await expect(httpsRequest({ host: podIP, port: 8443, method: 'GET', path: '/healthz', ca: caBundle, servername: 'other.example.com' })).rejects.toThrow(/altnames|does not match/i);

  const metrics = (await getFromWebhookPod(release, podIP, '/metrics')).text;
  expect(metrics).toMatch(/^drainguard_admission_requests_total\{result="mutated"\} [1-9]/m);
  expect(metrics).toMatch(/^drainguard_admission_requests_total\{result="unchanged"\} [1-9]/m);
  expect(metrics).toMatch(/^drainguard_mutations_total\{action="prestop"\} [1-9]/m);
  expect(metrics).toMatch(/^drainguard_skipped_pods_total\{reason="not-envoy"\} [1-9]/m);
  expect(metrics).toMatch(/^drainguard_admission_duration_seconds_bucket\{le="0.0001",result="mutated"\}/m);
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1]);
  expect(value('drainguard_certificate_expiry_timestamp_seconds')).toBe(new X509Certificate(ready.peerCertificate).validToDate.getTime() / 1000);
  // Self mode is its own CA: that CA's expiry is exported too, and never before the serving certificate's.
  expect(value('drainguard_ca_certificate_expiry_timestamp_seconds')).toBeGreaterThanOrEqual(value('drainguard_certificate_expiry_timestamp_seconds'));
  expect(metrics).toMatch(/^drainguard_ready 1$/m);
});
