/**
 * The API double's watches and Events behave as kube-apiserver's do (test/support/kube/watch-cache.ts
 * names the upstream code each rule follows), seen through client-node's own Watch and typed client:
 * the reporter's tests are only as good as this stand-in.
 */
import type * as k8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { loadKubernetesClient } from '../../../src/kube-api/load';
import { KubeApiDouble, type KubeObject } from '../../support/kube-api-double';
import { KubeletSimulator } from '../../support/kube/kubelet';

interface Seen {
  type: string;
  name?: string;
  resourceVersion?: string;
  code?: number;
  message?: string;
}

let double: KubeApiDouble;
let client: Awaited<ReturnType<typeof loadKubernetesClient>>;
let kubeConfig: k8s.KubeConfig;
const controllers: AbortController[] = [];

beforeEach(async () => {
  double = await KubeApiDouble.start();
  client = await loadKubernetesClient();
  kubeConfig = await double.kubeConfig();
});
afterEach(async () => {
  controllers.splice(0).forEach((controller) => controller.abort());
  await double.close();
});

const pod = (name: string, labels: Record<string, string> = { app: 'envoy' }): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'projectcontour', labels },
  spec: { containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.31.2' }] },
});

/** Opens a watch with client-node's Watch and collects what arrives; `ended` resolves when the server ends it. */
async function watch(query: Record<string, string | boolean>, path = '/api/v1/pods') {
  const seen: Seen[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  let end!: (error: unknown) => void;
  const ended = new Promise<unknown>((resolve) => (end = resolve));
  const before = double.openWatches;
  const controller = await new client.Watch(kubeConfig).watch(
    path,
    query,
    (type, object: { metadata?: { name?: string; resourceVersion?: string }; code?: number; message?: string }) => {
      seen.push({
        type,
        ...(object.metadata?.name ? { name: object.metadata.name } : {}),
        ...(object.metadata?.resourceVersion ? { resourceVersion: object.metadata.resourceVersion } : {}),
        ...(object.code !== undefined ? { code: object.code, message: object.message! } : {}),
      });
      for (const waiter of waiters.filter((w) => seen.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    },
    (error) => end(error),
  );
  controllers.push(controller);
  return {
    seen,
    ended,
    opened: () => double.until(() => double.openWatches > before),
    /** Resolves once `count` events have arrived. */
    received: (count: number) => (seen.length >= count ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ count, resolve }))),
  };
}

test('a watch from a resourceVersion gets every later change of the selected objects in order, then live ones', async () => {
  const first = double.put(pod('envoy-a'));
  double.put(pod('web', { app: 'web' }));
  const second = double.update('pods', 'projectcontour', 'envoy-a', (object) => ({ ...object, status: { phase: 'Running' } }));
  const stream = await watch({ resourceVersion: first.metadata.resourceVersion!, labelSelector: 'app=envoy' });
  await stream.opened();
  const removed = double.remove('pods', 'projectcontour', 'envoy-a');
  await stream.received(2);
  expect(stream.seen).toEqual([
    { type: 'MODIFIED', name: 'envoy-a', resourceVersion: second.metadata.resourceVersion },
    { type: 'DELETED', name: 'envoy-a', resourceVersion: removed.metadata.resourceVersion },
  ]);
  expect(Number(removed.metadata.resourceVersion)).toBeGreaterThan(Number(second.metadata.resourceVersion));
});

test('an object that starts or stops matching the selector arrives as ADDED or DELETED (the cacher\'s convertToWatchEvent)', async () => {
  const stored = double.put(pod('envoy-a', { app: 'envoy' }));
  const stream = await watch({ resourceVersion: stored.metadata.resourceVersion!, labelSelector: 'drainguard.io/protected=true' });
  await stream.opened();
  const labelled = double.update('pods', 'projectcontour', 'envoy-a', (object) => ({
    ...object,
    metadata: { ...object.metadata, labels: { app: 'envoy', 'drainguard.io/protected': 'true' } },
  }));
  const unlabelled = double.update('pods', 'projectcontour', 'envoy-a', (object) => ({ ...object, metadata: { ...object.metadata, labels: { app: 'envoy' } } }));
  await stream.received(2);
  expect(stream.seen).toEqual([
    { type: 'ADDED', name: 'envoy-a', resourceVersion: labelled.metadata.resourceVersion },
    { type: 'DELETED', name: 'envoy-a', resourceVersion: unlabelled.metadata.resourceVersion },
  ]);
});

test('a watch without a resourceVersion starts with an ADDED per current object', async () => {
  double.put(pod('envoy-a'));
  double.put(pod('envoy-b'));
  const stream = await watch({ labelSelector: 'app=envoy' });
  await stream.received(2);
  expect(stream.seen.map((event) => [event.type, event.name])).toEqual([
    ['ADDED', 'envoy-a'],
    ['ADDED', 'envoy-b'],
  ]);
});

test('bookmarks only when allowed, carrying the current resourceVersion and nothing else', async () => {
  const stored = double.put(pod('envoy-a'));
  const allowed = await watch({ resourceVersion: stored.metadata.resourceVersion!, allowWatchBookmarks: true });
  await allowed.opened();
  const plain = await watch({ resourceVersion: stored.metadata.resourceVersion! });
  await plain.opened();
  // Something else moves the resourceVersion on: the bookmark tells the watcher it may resume from there.
  const other = double.put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'projectcontour' } });
  double.bookmark();
  await allowed.received(1);
  expect(allowed.seen).toEqual([{ type: 'BOOKMARK', resourceVersion: other.metadata.resourceVersion }]);
  // The plain watch gets nothing: a live change it does get proves it was listening all along.
  const changed = double.update('pods', 'projectcontour', 'envoy-a', (object) => object);
  await plain.received(1);
  expect(plain.seen).toEqual([{ type: 'MODIFIED', name: 'envoy-a', resourceVersion: changed.metadata.resourceVersion }]);
});

test('a resourceVersion older than the history is answered 200 with one ERROR event, 410 Expired, then the end', async () => {
  const stored = double.put(pod('envoy-a'));
  double.update('pods', 'projectcontour', 'envoy-a', (object) => object);
  double.forgetWatchHistory();
  const stream = await watch({ resourceVersion: stored.metadata.resourceVersion! });
  expect(await stream.ended).toBeNull();
  expect(stream.seen).toEqual([{ type: 'ERROR', code: 410, message: expect.stringMatching(/^too old resource version: \d+ \(\d+\)$/) }]);
  expect(double.requests.find((request) => request.query?.includes('watch=true'))?.status).toBe(200);
});

test('after a restart the watch history starts again: an older resourceVersion gets 410, the current one resumes', async () => {
  const stored = double.put(pod('envoy-a'));
  const current = double.put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'projectcontour' } });
  const open = await watch({ resourceVersion: stored.metadata.resourceVersion! });
  await open.opened();
  await double.restart();
  expect(await open.ended).not.toBeUndefined();
  const stale = await watch({ resourceVersion: stored.metadata.resourceVersion! });
  await stale.ended;
  expect(stale.seen.map((event) => event.code)).toEqual([410]);
  const fresh = await watch({ resourceVersion: current.metadata.resourceVersion! });
  await fresh.opened();
  const changed = double.update('pods', 'projectcontour', 'envoy-a', (object) => object);
  await fresh.received(1);
  expect(fresh.seen).toEqual([{ type: 'MODIFIED', name: 'envoy-a', resourceVersion: changed.metadata.resourceVersion }]);
});

test('timeoutSeconds ends the watch normally, with a last bookmark where bookmarks are allowed', async () => {
  const stored = double.put(pod('envoy-a'));
  const stream = await watch({ resourceVersion: stored.metadata.resourceVersion!, allowWatchBookmarks: true, timeoutSeconds: '1' });
  expect(await stream.ended).toBeNull();
  expect(stream.seen).toEqual([{ type: 'BOOKMARK', resourceVersion: stored.metadata.resourceVersion }]);
});

test('watch is its own RBAC verb: denying it leaves list allowed', async () => {
  double.put(pod('envoy-a'));
  double.deny({ verb: 'watch', resource: 'pods' });
  const core = kubeConfig.makeApiClient(client.CoreV1Api);
  expect((await core.listPodForAllNamespaces()).items).toHaveLength(1);
  const stream = await watch({ resourceVersion: '1' });
  expect(await stream.ended).toMatchObject({ statusCode: 403 });
});

describe('Events', () => {
  const event = (name: string, namespace: string, involvedNamespace: string) => ({
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name, namespace },
    involvedObject: { apiVersion: 'v1', kind: 'Pod', name: 'envoy-a', namespace: involvedNamespace, uid: 'u' },
    reason: 'Drained',
    message: 'drained',
    type: 'Normal',
  });

  test('a second create of the same name is 409 AlreadyExists, worded as the API server words it', async () => {
    const core = kubeConfig.makeApiClient(client.CoreV1Api);
    await core.createNamespacedEvent({ namespace: 'projectcontour', body: event('envoy-a.1', 'projectcontour', 'projectcontour') as k8s.CoreV1Event });
    const second = await core.createNamespacedEvent({ namespace: 'projectcontour', body: event('envoy-a.1', 'projectcontour', 'projectcontour') as k8s.CoreV1Event }).catch((error: unknown) => error);
    expect(second).toBeInstanceOf(client.ApiException);
    expect((second as { code: number }).code).toBe(409);
    expect(JSON.parse((second as { body: string }).body)).toMatchObject({ reason: 'AlreadyExists', message: 'events "envoy-a.1" already exists' });
  });

  test('an Event whose involvedObject is in another namespace is refused 422, as legacyValidateEvent refuses it', async () => {
    const core = kubeConfig.makeApiClient(client.CoreV1Api);
    const refused = await core.createNamespacedEvent({ namespace: 'projectcontour', body: event('envoy-a.2', 'projectcontour', 'default') as k8s.CoreV1Event }).catch((error: unknown) => error);
    expect((refused as { code: number }).code).toBe(422);
    expect(JSON.parse((refused as { body: string }).body).message).toBe(
      'Event "envoy-a.2" is invalid: involvedObject.namespace: Invalid value: "default": does not match event.namespace',
    );
  });

  test('expired Events are gone, as the --event-ttl lease removes them', async () => {
    const core = kubeConfig.makeApiClient(client.CoreV1Api);
    await core.createNamespacedEvent({ namespace: 'projectcontour', body: event('envoy-a.3', 'projectcontour', 'projectcontour') as k8s.CoreV1Event });
    expect(double.expireEvents()).toBe(1);
    expect((await core.listNamespacedEvent({ namespace: 'projectcontour' })).items).toEqual([]);
  });
});

describe('the kubelet simulator', () => {
  test('a deletion as the kubelet writes it: deletionTimestamp, the terminated state with the message, the final DELETED', async () => {
    const kubelet = new KubeletSimulator(double);
    const running = kubelet.run(pod('envoy-a'));
    const stream = await watch({ resourceVersion: running.metadata.resourceVersion!, labelSelector: 'app=envoy' });
    await stream.opened();
    kubelet.deletePod('projectcontour', 'envoy-a', { envoy: { exitCode: 0, message: 'x'.repeat(5000) } });
    await stream.received(4);
    expect(stream.seen.map((event) => event.type)).toEqual(['MODIFIED', 'MODIFIED', 'MODIFIED', 'DELETED']);
    expect(double.get('pods', 'projectcontour', 'envoy-a')).toBeUndefined();
  });

  test('the message keeps the last 4096 bytes of the file, and a restart moves the ended container to lastState', () => {
    const kubelet = new KubeletSimulator(double);
    kubelet.run(pod('envoy-a'));
    const exited = kubelet.containerExited('projectcontour', 'envoy-a', 'envoy', { exitCode: 137, reason: 'OOMKilled', message: `${'a'.repeat(100)}${'b'.repeat(4096)}` });
    type Status = { containerStatuses: { state: { terminated?: { message?: string; containerID: string } }; lastState: { terminated?: { containerID: string } }; restartCount: number; containerID: string }[] };
    const ended = (exited.status as Status).containerStatuses[0]!;
    expect(ended.state.terminated!.message).toBe('b'.repeat(4096));
    const restarted = (kubelet.restartContainer('projectcontour', 'envoy-a', 'envoy').status as Status).containerStatuses[0]!;
    expect(restarted.lastState.terminated!.containerID).toBe(ended.state.terminated!.containerID);
    expect(restarted.containerID).not.toBe(ended.containerID);
    expect(restarted.restartCount).toBe(1);
  });
});
