/**
 * The recent-drains part of `drainguard check` against the real API server, over the Events the
 * chart's own reporter wrote there: outcomes, the ten-drain window, Envoy's own exits, Events of
 * another writer, RBAC refusing the Events, UDP sessions a drain left.
 *
 * drainguard is installed from the chart with its reporter (one replica, its ServiceAccount, RBAC
 * decided by kube-apiserver), Envoy workloads of the fixture pods are created in opted-in namespaces,
 * and the webhook rewrites their pods. Their kubelet is the test (test/support/cluster/played-pods): it
 * writes what a kubelet writes when a pod starts, when Envoy ends by itself and is restarted, and when a
 * deleted pod's containers end (the termination message holding the drain record of the test's
 * choosing, the kubelet's finishedAt), then deletes the pod for good, so each outcome is one the drain
 * program writes without running a drain for minutes. The reporter watches those pods as it watches any
 * and writes its Events; `check` then reads them, in this process (test/kube/check-cli.test.ts runs the
 * built CLI). What a drain run for real gives the reporter is test/kube/report-rollout.test.ts's.
 */
import { runCheckCommand } from '../../src/cli/check';
import type { CheckReport, CheckResult } from '../../src/check/report';
import { templates } from '../support/check-pods';
import { deletePlayedPod, restartPlayedContainer } from '../support/cluster/played-pods';
import {
  adminApi,
  clusterInfo,
  createNamespace,
  deleteNamespace,
  eventually,
  grantUser,
  installDrainguard,
  uninstallDrainguard,
  uniqueSuffix,
  userKubeconfig,
  type DrainguardRelease,
} from '../support/cluster/lane';
import { finishedRecord, startedRecord } from '../support/generators/drain-records';
import { promtoolCheck, total } from '../support/metrics-text';
import { CHECK_READS, prepareNamespace } from './check-workloads';
import { drainedExit as drained, endPod, playedWorkload , runningPods } from './played-workloads';
import { drainEvents, podEventsOnce, reporterPods, scrape, sharedCluster } from './report/workloads';

const cluster = sharedCluster();
const api = () => adminApi();
let release: DrainguardRelease;
/** The reporter pod's address (its /metrics on port 8080). */
let reporter: string;
const cleanup: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  release = await installDrainguard('check-drains', { 'report.enabled': 'true', 'report.replicaCount': '1' });
  cleanup.push(() => uninstallDrainguard(release));
  reporter = (await reporterPods(cluster, release, 1))[0]!.status.podIP!;
}, 300_000);

afterAll(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
}, 300_000);

/** A namespace of this suite's, opted in to the release, with what the fixture pods need to be admitted. */
async function namespace(): Promise<string> {
  const name = await createNamespace('check-drains', release.optIn);
  cleanup.push(() => deleteNamespace(name));
  await prepareNamespace(api(), name);
  return name;
}

/** A kubelet's clock: whole seconds, `seconds` after a start a few minutes ago (well inside the reporter's report age). */
const START = Math.floor((Date.now() - 5 * 60_000) / 1000) * 1000;
const at = (seconds: number) => new Date(START + seconds * 1000);

interface CheckRun {
  code: number;
  text: string;
  report: CheckReport;
}

/** `drainguard check -n NS` for this suite's release, text and JSON, as the cluster's admin unless `kubeconfig` says otherwise. */
async function check(ns: string, kubeconfig = clusterInfo().adminKubeconfig): Promise<CheckRun> {
  const args = ['-n', ns, '--release', release.release, '--drainguard-namespace', release.namespace, '--kubeconfig', kubeconfig];
  let text = '';
  let json = '';
  const code = await runCheckCommand(args, { stdout: (out) => (text += out), env: {} });
  const jsonCode = await runCheckCommand([...args, '-o', 'json'], { stdout: (out) => (json += out), env: {} });
  expect(jsonCode).toBe(code);
  return { code, text, report: JSON.parse(json) as CheckReport };
}

const drainLines = (report: CheckReport): CheckResult[] => report.checks.filter((result) => result.id === 'drains');
const only = (report: CheckReport, id: CheckResult['id']): CheckResult | undefined => report.checks.find((result) => result.id === id);

test('clean drains pass; only the newest ten count, so a deadline eleven drains ago no longer fails the workload', async () => {
  const tenDrains = await namespace();
  const deployment = await playedWorkload(cluster, tenDrains, 'Deployment', 'envoy-gw', templates.envoyGateway());
  await endPod(cluster, deployment, drained(finishedRecord('deadline', { durationMs: 290_000, connectionsAtEnd: 3, openListeners: [{ name: 'ingress_http', connections: 3 }] })), at(0));
  // Ten clean drains, each finished after the deadline one by the kubelet's clock.
  for (let drain = 1; drain <= 10; drain++) await endPod(cluster, deployment, drained(finishedRecord('drained')), at(drain));
  await runningPods(cluster, deployment, 1);
  await podEventsOnce(cluster, tenDrains, 11);

  const { code, report } = await check(tenDrains);
  expect(drainLines(report)).toEqual([
    expect.objectContaining({ verdict: 'pass', message: `deployment/envoy-gw in ${tenDrains}: last 10 drains — 10 drained, median 14 s` }),
  ]);
  expect(drainLines(report)[0]!.drains).toMatchObject({ outcomes: { drained: 10 }, medianDrainedSeconds: 14, envoyExits: 0, ok: true });
  expect(only(report, 'reporter')).toMatchObject({ verdict: 'pass', message: `reporter Deployment ${release.namespace}/${release.release}-drainguard-reporter: 1 of 1 replicas available` });
  expect(report.checks.filter((result) => result.verdict === 'fail')).toEqual([]);
  expect(code).toBe(0);
  // Its workload Events went on the Deployment (the reporter read its uid through the ReplicaSet).
  const workloadEvents = await eventually('11 workload Events', async () => {
    const events = await drainEvents(cluster, tenDrains, 'workload');
    return events.length === 11 ? events : undefined;
  });
  for (const event of workloadEvents) expect(event.involvedObject).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'envoy-gw', namespace: tenDrains, uid: deployment.uid });
}, 300_000);

test('UDP sessions a drain left: the Event names their UDP proxy and says why, the metric counts them, check names them', async () => {
  const ns = await namespace();
  const deployment = await playedWorkload(cluster, ns, 'Deployment', 'envoy-udp', templates.envoyGateway());
  const udp = { udpSessionsAtStart: 9, openUdpProxiesOmitted: 0 };
  await endPod(cluster, deployment, drained(finishedRecord('drained', { ...udp, connectionsAtStart: 40, udpSessionsAtEnd: 0, openUdpProxies: [] })), at(0));
  await endPod(
    cluster,
    deployment,
    drained(finishedRecord('deadline', { ...udp, durationMs: 290_000, connectionsAtEnd: 0, udpSessionsAtEnd: 3, openUdpProxies: [{ name: 'udproute/default/coredns/rule/0', sessions: 3 }] })),
    at(1),
  );
  await runningPods(cluster, deployment, 1);
  const events = await podEventsOnce(cluster, ns, 2);
  expect(events.map((event) => event.message).sort()).toEqual([
    '3 UDP sessions still open on UDP proxy udproute/default/coredns/rule/0 when the 290 s deadline ended: ' +
      "a UDP session ends only once its idle timeout passes without a datagram (the UDP proxy's idle_timeout, 60 s by default), so " +
      'raise terminationGracePeriodSeconds or set drainguard.io/min-connections',
    'drained 40 connections and 9 UDP sessions in 14 s',
  ]);

  const labels = { namespace: ns, workload: 'deployment/envoy-udp' };
  const text = await eventually('both drains in the metrics', async () => {
    const scraped = await scrape(reporter);
    return total([scraped], 'drainguard_drain_udp_sessions_left_count', labels) === 2 ? scraped : undefined;
  });
  expect(promtoolCheck(text, /^drainguard_(process|nodejs)_/)).toEqual({ status: 0, output: '' });
  expect(total([text], 'drainguard_drain_udp_sessions_left_sum', labels)).toBe(3);
  expect(total([text], 'drainguard_drain_udp_sessions_left_bucket', { ...labels, le: '0' })).toBe(1);

  const { code, report } = await check(ns);
  expect(code).toBe(1);
  expect(drainLines(report)).toEqual([
    expect.objectContaining({
      verdict: 'fail',
      message: `deployment/envoy-udp in ${ns}: last 2 drains — 1 drained, median 14 s; 1 deadline, 3 UDP sessions left on UDP proxy udproute/default/coredns/rule/0`,
    }),
  ]);
}, 300_000);

test('not reported and interrupted drains fail with their own advice; Envoy exiting by itself is shown but is no drain', async () => {
  const ns = await namespace();
  const daemonSet = await playedWorkload(cluster, ns, 'DaemonSet', 'envoy', templates.contour());
  const nodes = clusterInfo().nodes.length;
  const [crashing] = await runningPods(cluster, daemonSet, nodes);
  // Envoy OOM-killed and restarted, its pod running on.
  await restartPlayedContainer(api(), crashing!, 'envoy', { exitCode: 137, reason: 'OOMKilled' }, at(0));
  const running = await runningPods(cluster, daemonSet, nodes);
  const other = running.find((pod) => pod.metadata.name !== crashing!.metadata.name)!;
  // A deletion whose drain left no record, then the replacement's, killed before its drain finished.
  await deletePlayedPod(api(), other, { envoy: { exitCode: 0 } }, at(1));
  const replacement = (await runningPods(cluster, daemonSet, nodes)).find((pod) => pod.metadata.name !== crashing!.metadata.name)!;
  await deletePlayedPod(api(), replacement, { envoy: { exitCode: 137, reason: 'Error', message: startedRecord() } }, at(2));
  await runningPods(cluster, daemonSet, nodes);
  await podEventsOnce(cluster, ns, 3);

  const { code, text, report } = await check(ns);
  expect(code).toBe(1);
  const [line] = drainLines(report);
  expect(line).toMatchObject({
    verdict: 'fail',
    message: `daemonset/envoy in ${ns}: last 2 drains — 1 not reported; 1 interrupted; Envoy exited by itself 1 time`,
    hint: expect.stringMatching(/^the drain left no record: look for FailedPreStopHook events .*; a drain was killed before its deadline/),
  });
  expect(line!.drains).toMatchObject({ outcomes: { 'not-reported': 1, interrupted: 1 }, envoyExits: 1 });
  expect(drainLines(report)).toHaveLength(1);
  // Every pod that runs now is protected: the drains line is the only failure.
  expect(report.checks.filter((result) => result.verdict === 'fail')).toEqual([line]);
  expect(text).toContain(`\n× daemonset/envoy in ${ns}: last 2 drains — 1 not reported; 1 interrupted; Envoy exited by itself 1 time\n    the drain left no record`);
}, 300_000);

test('no drain Events: a note, not a failure', async () => {
  const ns = await namespace();
  const { report } = await check(ns);
  expect(report.checks.filter((result) => result.category === 'drains').map((result) => [result.id, result.verdict, result.message])).toEqual([
    ['reporter', 'pass', `reporter Deployment ${release.namespace}/${release.release}-drainguard-reporter: 1 of 1 replicas available`],
    ['drain-events', 'info', `no drains reported in namespace ${ns} (the reporter's Events last for the API server's --event-ttl, 1 h by default)`],
  ]);
});

test("Events with the label but no summary check can read (another writer's) are not drains", async () => {
  const ns = await namespace();
  await api().create(`/api/v1/namespaces/${ns}/events`, {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `forged.${uniqueSuffix()}`, labels: { 'drainguard.io/drain-event': 'pod' }, annotations: { 'drainguard.io/drain': '{"format":"drainguard.io/drain-summary/v1","outcome":"drained"}' } },
    involvedObject: { apiVersion: 'v1', kind: 'Pod', name: 'x', namespace: ns },
    reason: 'Drained',
    message: 'drained 1 connection in 1 s',
    type: 'Normal',
  });
  expect(await drainEvents(cluster, ns, 'pod')).toHaveLength(1);
  const { report } = await check(ns);
  expect(only(report, 'drain-events')).toMatchObject({ verdict: 'info', message: expect.stringMatching(/^no drains reported in namespace /) });
  expect(drainLines(report)).toEqual([]);
});

test('a user who may not list events gets a failed line naming what RBAC refused, and every other check still runs', async () => {
  const user = `check-drains-${uniqueSuffix()}`;
  // A namespace's pods, but not its Events; and what docs/check.md's Permissions ask for elsewhere.
  const ns = await namespace();
  cleanup.push(
    await grantUser(api(), user, {
      cluster: [...CHECK_READS.cluster, { apiGroups: [''], resources: ['nodes'], verbs: ['list'] }],
      namespaces: {
        [release.namespace]: [...CHECK_READS.release, { apiGroups: [''], resources: ['secrets'], verbs: ['get'] }],
        [ns]: [
          { apiGroups: [''], resources: ['pods'], verbs: ['list'] },
          { apiGroups: ['apps'], resources: ['replicasets'], verbs: ['get'] },
        ],
      },
    }),
  );

  const { code, report } = await check(ns, userKubeconfig({ user }));
  expect(code).toBe(1);
  expect(only(report, 'drain-events')).toMatchObject({
    verdict: 'fail',
    message: `drain Events in namespace ${ns}: not allowed to list events in namespace "${ns}" (events is forbidden: User "${user}" cannot list resource "events" in API group "" in the namespace "${ns}")`,
  });
  expect(drainLines(report)).toEqual([]);
  expect(only(report, 'deployment')).toMatchObject({ verdict: 'pass' });
  expect(only(report, 'reporter')).toMatchObject({ verdict: 'pass' });
  expect(report.checks.filter((result) => result.verdict === 'fail').map((result) => result.id)).toEqual(['drain-events']);
});
