/**
 * Every Envoy termination becomes exactly one pod Event, one workload Event and one count in the
 * metrics summed over the reporter's replicas: with two replicas racing, after a replica restarts,
 * after its watch expires (410 → relist), across an API server restart, when a create's answer is
 * lost, and when the Events guarding old terminations have expired. Reporters run in this process
 * against the API double, through client-node's informer and typed client.
 */
import { KubeApiDouble } from '../../support/kube-api-double';
import { KubeletSimulator } from '../../support/kube/kubelet';
import { total } from '../../support/metrics-text';
import { drainedExit, envoyWorkload, events, finishedRecord, rollPod, runPod, scrape, startReporters, type Reporters, type Workload } from './scenario';

let double: KubeApiDouble;
let kubelet: KubeletSimulator;
let workload: Workload;
const started: Reporters[] = [];

beforeEach(async () => {
  double = await KubeApiDouble.start();
  kubelet = new KubeletSimulator(double);
  workload = envoyWorkload(double, { namespace: 'projectcontour', name: 'envoy' });
});
afterEach(async () => {
  await Promise.all(started.splice(0).map((reporters) => reporters.stop()));
  await double.close();
});

async function reporters(count: number, options: { maxReportAgeMs?: number } = {}): Promise<Reporters> {
  const running = await startReporters(double, count, options);
  started.push(running);
  return running;
}

const scrapes = (running: Reporters) => Promise.all(running.replicas.map((replica) => scrape(replica.port)));
const drains = async (running: Reporters, reason = 'drained') => total(await scrapes(running), 'drainguard_drains_total', { reason });
const eventsBy = (scope: 'pod' | 'workload') => events(double).filter((event) => event.metadata.labels?.['drainguard.io/drain-event'] === scope);

/** Rolls `count` pods one by one (each drains cleanly) and returns the last resourceVersion written. */
function rollout(count: number): string {
  let last = '';
  for (let i = 0; i < count; i++) {
    const pod = runPod(kubelet, workload);
    last = rollPod(kubelet, pod, drainedExit(finishedRecord('drained'))).metadata.resourceVersion!;
  }
  return last;
}

test('two replicas both report every termination; the API server lets one create each Event, and only that one counts it', async () => {
  const running = await reporters(2);
  await running.caughtUp(rollout(8));
  expect(eventsBy('pod')).toHaveLength(8);
  expect(eventsBy('workload')).toHaveLength(8);
  expect(eventsBy('workload').every((event) => event.involvedObject.kind === 'DaemonSet' && event.involvedObject.uid === workload.uid)).toBe(true);
  expect(await drains(running)).toBe(8);
  // Both replicas tried every pod Event: the losers got 409 and counted nothing.
  const creates = double.requests.filter((request) => request.method === 'POST' && request.path.endsWith('/events'));
  expect(creates.filter((request) => request.status === 201)).toHaveLength(16);
  expect(creates.filter((request) => request.status === 409)).toHaveLength(16);
  // What each replica counts is exactly what it created.
  const creators = eventsBy('pod').map((event) => event.metadata.annotations?.['drainguard.io/reported-by'] ?? '');
  for (const [index, replica] of running.replicas.entries()) {
    const counted = total([await scrape(replica.port)], 'drainguard_drains_total');
    expect(counted).toBe(creators.filter((by) => by.startsWith(`reporter-${index}/`)).length);
  }
});

test('a restarted reporter lists the pods again and counts nothing it reported before (a lastState kept after a container restart)', async () => {
  const first = await reporters(1);
  const pod = runPod(kubelet, workload);
  // A liveness restart: the kubelet ran the preStop hook, the drain wrote its record, Envoy restarted.
  kubelet.containerExited('projectcontour', pod.metadata.name, 'envoy', drainedExit(finishedRecord('drained')));
  const restarted = kubelet.restartContainer('projectcontour', pod.metadata.name, 'envoy');
  await first.caughtUp(restarted.metadata.resourceVersion!);
  expect(await drains(first)).toBe(1);
  await first.stop();

  const second = await reporters(1);
  await second.caughtUp(double.list('pods')[0]!.metadata.resourceVersion!);
  expect(await drains(second)).toBe(0);
  expect(eventsBy('pod')).toHaveLength(1);
  // Its pod Event and its workload Event, both already there.
  expect(double.requests.filter((request) => request.method === 'POST' && request.status === 409)).toHaveLength(2);
});

test('a watch that expires (410 Expired) relists; what changed meanwhile is reported once and nothing again', async () => {
  const running = await reporters(2);
  const before = runPod(kubelet, workload);
  await running.caughtUp(before.metadata.resourceVersion!);
  // The watches end (their timeout); both replicas' next watch requests wait while the pod drains
  // and is deleted, and the history moves past their resourceVersion: both get 410 and relist.
  const held = [double.hold('GET', /^\/api\/v1\/pods$/), double.hold('GET', /^\/api\/v1\/pods$/)];
  double.endWatches();
  await Promise.all(held.map((hold) => hold.arrived));
  const drained = rollPod(kubelet, before, drainedExit(finishedRecord('drained')));
  const survivor = runPod(kubelet, workload);
  double.forgetWatchHistory();
  held.forEach((hold) => hold.release());
  await running.caughtUp(survivor.metadata.resourceVersion!);
  // The pod that ended inside the gap was never seen ending: not reported, and said so.
  expect(eventsBy('pod')).toHaveLength(0);
  expect(total(await scrapes(running), 'drainguard_reporter_terminations_unseen_total')).toBe(2);
  expect(Number(drained.metadata.resourceVersion)).toBeLessThan(Number(survivor.metadata.resourceVersion));
  // After the relist, the watch works: the next drain is reported once.
  await running.caughtUp(rollPod(kubelet, survivor, drainedExit(finishedRecord('drained'))).metadata.resourceVersion!);
  expect(eventsBy('pod')).toHaveLength(1);
  expect(await drains(running)).toBe(1);
  const lists = double.requests.filter((request) => request.method === 'GET' && request.path === '/api/v1/pods' && !request.query?.includes('watch=true'));
  expect(lists).toHaveLength(4);
});

test('an API server restart: the reporters relist, and a pod that drains after it is reported once', async () => {
  const running = await reporters(2);
  const pod = runPod(kubelet, workload);
  await running.caughtUp(pod.metadata.resourceVersion!);
  // The rollout deletes the pod just before the API server goes away; Envoy drains meanwhile.
  const deleting = kubelet.beginDeletion('projectcontour', pod.metadata.name);
  await running.caughtUp(deleting.metadata.resourceVersion!);
  // Something else is written just before: the reporters' resourceVersion is older than the cache
  // the restarted API server starts with, so their watches get 410 and they relist.
  double.put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'before-restart', namespace: 'projectcontour' } });
  await double.restart();
  await double.until(() => double.openWatches === 2);
  kubelet.containerExited('projectcontour', pod.metadata.name, 'envoy', drainedExit(finishedRecord('drained')));
  const gone = kubelet.finishDeletion('projectcontour', pod.metadata.name);
  await running.caughtUp(gone.metadata.resourceVersion!);
  expect(eventsBy('pod').map((event) => event.reason)).toEqual(['Drained']);
  expect(await drains(running)).toBe(1);
  const lists = double.requests.filter((request) => request.method === 'GET' && request.path === '/api/v1/pods' && !request.query?.includes('watch=true'));
  expect(lists).toHaveLength(4);
});

test.each([1, 2])("a create whose answer is lost is retried; its 409 is recognised as this process's own and counted once (%i replicas)", async (count) => {
  // The first create is applied and its answer lost. A second replica's create then gets 409 and
  // counts nothing; the retry gets 409 too, reads the Event back, finds its own id and counts it.
  const running = await reporters(count);
  const cut = double.cutAfterApplying('POST', /\/namespaces\/projectcontour\/events$/);
  const last = rollout(1);
  await cut;
  await running.caughtUp(last);
  expect(eventsBy('pod')).toHaveLength(1);
  expect(await drains(running)).toBe(1);
  const podEvent = eventsBy('pod')[0]!;
  expect(double.requests.filter((request) => request.method === 'GET' && request.path.endsWith(`/events/${podEvent.metadata.name}`))).toHaveLength(1);
});

test('terminations older than --max-report-age are never reported, so Events gone with the TTL cannot let one be reported again', async () => {
  // A pod that restarted Envoy two days ago (lastState kept since) and was reported then.
  const twoDaysAgo = new KubeletSimulator(double, () => new Date(Date.now() - 2 * 24 * 3600_000));
  const pod = runPod(twoDaysAgo, workload);
  twoDaysAgo.containerExited('projectcontour', pod.metadata.name, 'envoy', drainedExit(finishedRecord('drained')));
  const restarted = twoDaysAgo.restartContainer('projectcontour', pod.metadata.name, 'envoy');
  // Its Events have expired long ago (--event-ttl 1h): nothing in the API remembers the report.
  expect(double.expireEvents()).toBe(0);
  const running = await reporters(2, { maxReportAgeMs: 45 * 60_000 });
  await running.caughtUp(restarted.metadata.resourceVersion!);
  expect(eventsBy('pod')).toHaveLength(0);
  expect(await drains(running)).toBe(0);
  // A recent one on the same pod is reported.
  kubelet.containerExited('projectcontour', pod.metadata.name, 'envoy', drainedExit(finishedRecord('drained')));
  await running.caughtUp(kubelet.restartContainer('projectcontour', pod.metadata.name, 'envoy').metadata.resourceVersion!);
  expect(eventsBy('pod')).toHaveLength(1);
  expect(await drains(running)).toBe(1);
});

test('a termination the API keeps refusing is retried, then given up once it is older than --max-report-age, and said so', async () => {
  double.deny({ verb: 'create', resource: 'events' });
  const running = await reporters(1, { maxReportAgeMs: 1000 });
  const last = rollout(1);
  await running.caughtUp(last);
  expect(eventsBy('pod')).toHaveLength(0);
  expect(total(await scrapes(running), 'drainguard_reporter_reports_abandoned_total')).toBe(1);
  expect(await drains(running)).toBe(0);
  expect(double.requests.filter((request) => request.method === 'POST' && request.status === 403).length).toBeGreaterThan(1);
});
