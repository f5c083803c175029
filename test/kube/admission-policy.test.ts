/**
 * What the API server decides about calling drainguard, decided by the real kube-apiserver from the
 * chart's own MutatingWebhookConfiguration (installed and upgraded by the real helm): the namespace
 * label that opts a namespace in, the pod annotation that opts a pod out, the chart's objectSelector,
 * its matchConditions (CEL, evaluated by the API server), failurePolicy Ignore and Fail with the
 * webhook down (its Deployment scaled to 0 and its Service without a ready endpoint), and a
 * server-side dry run. The tests run in order: each leaves the release as the next expects it.
 *
 * The pods are admitted and stored but never scheduled (a node selector no node matches), so no node
 * runs them. Where the API server's view of a change (a scaled webhook, an upgraded configuration)
 * matters, the test waits for the API server's own answers to change, asking with dry runs that store
 * nothing, then asserts on pods it creates for real.
 */
import { Annotations } from '../../src/mutate';
import { adminApi, createNamespace, deleteNamespace, eventually, installDrainguard, kubectl, uninstallDrainguard, type DrainguardRelease } from '../support/cluster/lane';
import {
  admittedPod,
  createPod,
  envoyPod,
  envoyPreStop,
  isRewritten,
  plainPod,
  scaleWebhook,
  upgradeDrainguard,
  webhookConfiguration,
  type StoredPod,
} from './admission-kit';

let release: DrainguardRelease;
let optedIn: string;
const namespaces: string[] = [];

beforeAll(async () => {
  release = await installDrainguard('adm-policy');
  optedIn = await createNamespace('adm-policy-in', release.optIn);
  namespaces.push(optedIn);
}, 300_000);

afterAll(async () => {
  for (const namespace of namespaces) await deleteNamespace(namespace);
  if (release) await uninstallDrainguard(release);
}, 300_000);

/** Everything drainguard writes to the bare Envoy pod of admission-kit: nothing of it, when not rewritten. */
function expectRewritten(pod: StoredPod): void {
  expect(isRewritten(pod)).toBe(true);
  expect(pod.spec.initContainers?.map((c) => c.name)).toEqual(['drainguard-install']);
  expect(envoyPreStop(pod)?.slice(0, 2)).toEqual(['/config/drainguard/envoy-shutdown', 'drain']);
}

function expectAsSent(pod: StoredPod): void {
  expect(isRewritten(pod)).toBe(false);
  expect(pod.metadata.labels?.['drainguard.io/protected']).toBeUndefined();
  expect(pod.spec.initContainers).toBeUndefined();
  expect(pod.spec.containers.map((c) => c.lifecycle)).toEqual([undefined]);
}

/** A dry run of a bare Envoy pod in `namespace`: what the API server does with one now, nothing stored. */
async function probe(namespace: string, labels?: Record<string, string>): Promise<'rewritten' | 'as sent' | 'refused'> {
  const { stored } = await createPod(namespace, envoyPod('probe', labels ? { labels } : {}), '?dryRun=All');
  if (!stored) return 'refused';
  return isRewritten(stored) ? 'rewritten' : 'as sent';
}

async function until(namespace: string, outcome: 'rewritten' | 'as sent' | 'refused', labels?: Record<string, string>): Promise<void> {
  await eventually(`the API server's answer for an Envoy pod in ${namespace} to be '${outcome}'`, async () => ((await probe(namespace, labels)) === outcome ? true : undefined), 180_000);
}

test("a namespace opts in with the release's label; without it, or with another value, the API server never calls drainguard", async () => {
  const unlabelled = await createNamespace('adm-policy-plain');
  const key = Object.keys(release.optIn)[0]!;
  const otherValue = await createNamespace('adm-policy-off', { [key]: 'disabled' });
  namespaces.push(unlabelled, otherValue);

  expectRewritten(await admittedPod(optedIn, envoyPod('opted-in')));
  expectAsSent(await admittedPod(unlabelled, envoyPod('unlabelled')));
  expectAsSent(await admittedPod(otherValue, envoyPod('other-value')));
});

test('drainguard.io/inject: disabled opts one pod out of an opted-in namespace', async () => {
  const pod = await admittedPod(optedIn, envoyPod('opted-out', { annotations: { [Annotations.inject]: 'disabled' } }));
  expectAsSent(pod);
  expect(pod.metadata.annotations).toEqual({ [Annotations.inject]: 'disabled' });
});

test("kubectl apply --dry-run=server shows the pod as drainguard rewrites it, with drainguard's warnings, and nothing is stored", () => {
  const manifest = JSON.stringify({ ...envoyPod('dry-run'), metadata: { name: 'dry-run', namespace: optedIn } });
  const applied = kubectl(['apply', '--dry-run=server', '-o', 'json', '-f', '-'], { input: manifest });
  expect(applied.status).toBe(0);
  // The webhook's warnings, relayed by the API server as Warning headers and printed by kubectl.
  expect(applied.stderr).toMatch(/^Warning: container envoy: the drain's admin address http:\/\/127\.0\.0\.1:9901 is a guess/m);
  expectRewritten(JSON.parse(applied.stdout) as StoredPod);
  const get = kubectl(['get', 'pod', 'dry-run', '-n', optedIn]);
  expect(get.status).not.toBe(0);
  expect(get.stderr).toContain('pods "dry-run" not found');
});

test('failurePolicy Ignore with the webhook down: an Envoy pod is admitted as sent', async () => {
  expect((await webhookConfiguration<{ webhooks: { failurePolicy: string }[] }>(release)).webhooks[0]!.failurePolicy).toBe('Ignore');
  await scaleWebhook(release, 0);
  await until(optedIn, 'as sent');
  expectAsSent(await admittedPod(optedIn, envoyPod('while-down')));
}, 300_000);

test('helm upgrade to failurePolicy Fail keeps the caBundle drainguard wrote, and pods are rewritten again', async () => {
  const before = await webhookConfiguration<{ webhooks: { clientConfig: { caBundle?: string } }[] }>(release);
  expect(before.webhooks[0]!.clientConfig.caBundle).toBeTruthy();
  // The chart's replicaCount (1) applies again: the upgrade brings the webhook back.
  upgradeDrainguard(release, { 'webhook.failurePolicy': 'Fail' });
  const after = await webhookConfiguration<{ webhooks: { failurePolicy: string; clientConfig: { caBundle?: string } }[] }>(release);
  expect(after.webhooks[0]!.failurePolicy).toBe('Fail');
  expect(after.webhooks[0]!.clientConfig.caBundle).toBe(before.webhooks[0]!.clientConfig.caBundle);
  await until(optedIn, 'rewritten');
  expectRewritten(await admittedPod(optedIn, envoyPod('after-upgrade')));
}, 300_000);

test('failurePolicy Fail with the webhook down: an Envoy pod is refused; matchConditions keep every other pod from ever reaching drainguard, so it is admitted', async () => {
  await scaleWebhook(release, 0);
  await until(optedIn, 'refused');
  const refused = await createPod(optedIn, envoyPod('refused'));
  expect(refused.stored).toBeUndefined();
  expect(refused.refused!.status).toBe(500);
  expect(refused.refused!.message).toMatch(/^Internal error occurred: failed calling webhook "pods\.drainguard\.io": failed to call webhook: Post "https:\/\/[^"]+\/mutate\?timeout=3s": /);
  expect(await adminApi().find(`/api/v1/namespaces/${optedIn}/pods/refused`)).toBeUndefined();

  // Not Envoy: the API server's CEL says so and never calls the webhook; failurePolicy never applies.
  const plain = await admittedPod(optedIn, plainPod('web'));
  expect(isRewritten(plain)).toBe(false);
  // The same pod with a drainguard.io/ annotation matches (it may name the Envoy container): it is
  // sent, so with the webhook down it is refused. The CEL is the API server's, not drainguard's.
  const annotated = await createPod(optedIn, plainPod('web-annotated', { [Annotations.inject]: 'enabled' }));
  expect(annotated.refused?.message).toContain('failed calling webhook "pods.drainguard.io"');
}, 300_000);

test("objectSelector (webhook.objectSelector): an Envoy pod without the selected label is never sent to drainguard", async () => {
  // The upgrade brings the webhook back (replicaCount 1); failurePolicy stays Fail.
  upgradeDrainguard(release, { 'webhook.objectSelector.matchLabels.app\\.kubernetes\\.io/name': 'envoy' });
  const stored = await webhookConfiguration<{ webhooks: { objectSelector?: unknown }[] }>(release);
  expect(stored.webhooks[0]!.objectSelector).toEqual({ matchLabels: { 'app.kubernetes.io/name': 'envoy' } });
  const selected = { 'app.kubernetes.io/name': 'envoy' };
  await until(optedIn, 'rewritten', selected);
  await until(optedIn, 'as sent');
  expectRewritten(await admittedPod(optedIn, envoyPod('selected', { labels: selected })));
  expectAsSent(await admittedPod(optedIn, envoyPod('not-selected', { labels: { 'app.kubernetes.io/name': 'proxy' } })));
}, 300_000);
