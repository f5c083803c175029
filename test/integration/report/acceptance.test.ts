/**
 * Issue 22's acceptance in the stand-in cluster: drainguard installed from the chart, a DaemonSet of
 * five protected Envoy pods restarted one by one (one of them with a connection that never closes),
 * two reporter replicas. It yields four Drained and one DrainDeadline Event naming the listener, on the
 * pods and on the DaemonSet, matching metrics summed over the replicas, and a `drainguard check` that
 * fails for that workload and says what to do, in text and in JSON. Then the recent-drains part of
 * check on its own: outcomes, the ten-drain window, Envoy's own exits, forged Events, RBAC.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCheckCommand } from '../../../src/cli/check';
import type { CheckReport, CheckResult } from '../../../src/check/report';
import { KubeApiDouble } from '../../support/kube-api-double';
import { KubeletSimulator } from '../../support/kube/kubelet';
import { promtoolCheck, total } from '../../support/metrics-text';
import { temporaryDirectory } from '../server/webhook-test-kit';
import { installDrainguard, namespace, OPT_IN } from '../check/cluster-scenario';
import { drainedExit, envoyWorkload, events, finishedRecord, rollPod, runPod, scrape, startedRecord, startReporters, type Reporters, type Workload } from './scenario';

const directory = temporaryDirectory();
afterAll(() => directory.remove());

let double: KubeApiDouble;
let kubelet: KubeletSimulator;
let reporters: Reporters | undefined;
beforeEach(async () => {
  double = await KubeApiDouble.start();
  kubelet = new KubeletSimulator(double);
  await installDrainguard(double);
  double.put(namespace('projectcontour', OPT_IN));
});
afterEach(async () => {
  await reporters?.stop();
  reporters = undefined;
  await double.close();
});

async function check(args: string[]): Promise<{ code: number; text: string; report: CheckReport }> {
  const kubeconfig = join(directory.path, `kubeconfig-${Math.random()}`);
  writeFileSync(kubeconfig, double.kubeconfigYaml());
  let text = '';
  let json = '';
  const code = await runCheckCommand([...args, '--kubeconfig', kubeconfig], { stdout: (out) => (text += out), env: {} });
  const jsonCode = await runCheckCommand([...args, '--kubeconfig', kubeconfig, '-o', 'json'], { stdout: (out) => (json += out), env: {} });
  expect(jsonCode).toBe(code);
  return { code, text, report: JSON.parse(json) as CheckReport };
}

const drainLines = (report: CheckReport): CheckResult[] => report.checks.filter((result) => result.id === 'drains');

/** Restarts every pod of the workload one by one, as `kubectl rollout restart` does; `exits[i]` ends pod i. */
function rolloutRestart(workload: Workload, messages: string[]): string {
  let last = '';
  for (const message of messages) {
    const old = runPod(kubelet, workload);
    last = rollPod(kubelet, old, drainedExit(message)).metadata.resourceVersion!;
  }
  // The DaemonSet's new pods run on.
  for (let i = 0; i < messages.length; i++) last = runPod(kubelet, workload).metadata.resourceVersion!;
  return last;
}

test('a rollout of a 5-pod DaemonSet with one connection that never closes: 4 Drained, 1 DrainDeadline naming the listener, matching metrics, and a failing check that says what to do', async () => {
  const daemonSet = envoyWorkload(double, { namespace: 'projectcontour', name: 'envoy' });
  reporters = await startReporters(double, 2);
  const deadline = finishedRecord('deadline', {
    durationMs: 290_000,
    connectionsAtStart: 40,
    connectionsAtEnd: 17,
    openListeners: [{ name: 'ingress_https', connections: 17 }],
  });
  const drained = (seconds: number) => finishedRecord('drained', { durationMs: seconds * 1000, connectionsAtStart: 300 + seconds });
  await reporters.caughtUp(rolloutRestart(daemonSet, [drained(11), drained(12), deadline, drained(13), drained(14)]));

  const podEvents = events(double).filter((event) => event.involvedObject.kind === 'Pod');
  const workloadEvents = events(double).filter((event) => event.involvedObject.kind === 'DaemonSet');
  expect(podEvents.map((event) => event.reason).sort()).toEqual(['DrainDeadline', 'Drained', 'Drained', 'Drained', 'Drained']);
  const warning = podEvents.find((event) => event.reason === 'DrainDeadline')!;
  expect(warning).toMatchObject({
    type: 'Warning',
    message: '17 connections still open on listener ingress_https when the 290 s deadline ended: raise terminationGracePeriodSeconds or set drainguard.io/min-connections',
  });
  expect(podEvents.filter((event) => event.reason === 'Drained').map((event) => event.message).sort()).toEqual([
    'drained 311 connections in 11 s',
    'drained 312 connections in 12 s',
    'drained 313 connections in 13 s',
    'drained 314 connections in 14 s',
  ]);
  expect(workloadEvents).toHaveLength(5);
  expect(workloadEvents.every((event) => event.involvedObject.uid === daemonSet.uid && event.involvedObject.name === 'envoy')).toBe(true);
  expect(workloadEvents.find((event) => event.reason === 'DrainDeadline')!.message).toBe(`pod ${warning.involvedObject.name}: ${warning.message}`);

  const scrapes = await Promise.all(reporters.replicas.map((replica) => scrape(replica.port)));
  for (const text of scrapes) expect(promtoolCheck(text, /^drainguard_(process|nodejs)_/)).toEqual({ status: 0, output: '' });
  const labels = { namespace: 'projectcontour', workload: 'daemonset/envoy' };
  expect(total(scrapes, 'drainguard_drains_total', { ...labels, reason: 'drained' })).toBe(4);
  expect(total(scrapes, 'drainguard_drains_total', { ...labels, reason: 'deadline' })).toBe(1);
  expect(total(scrapes, 'drainguard_drain_duration_seconds_count', labels)).toBe(5);
  expect(total(scrapes, 'drainguard_drain_duration_seconds_sum', labels)).toBe(11 + 12 + 290 + 13 + 14);
  expect(total(scrapes, 'drainguard_drain_connections_left_count', labels)).toBe(5);
  expect(total(scrapes, 'drainguard_drain_connections_left_sum', labels)).toBe(17);
  expect(total(scrapes, 'drainguard_drain_connections_left_bucket', { ...labels, le: '0' })).toBe(4);
  expect(total(scrapes, 'drainguard_terminations_unreported_total')).toBe(0);

  const { code, text, report } = await check(['-A']);
  expect(code).toBe(1);
  const line = drainLines(report);
  expect(line).toHaveLength(1);
  expect(line[0]).toMatchObject({
    verdict: 'fail',
    message: 'daemonset/envoy in projectcontour: last 5 drains — 4 drained, median 13 s; 1 deadline, 17 left on listener ingress_https',
    hint: "raise terminationGracePeriodSeconds or set drainguard.io/min-connections (kubectl -n projectcontour describe daemonset/envoy shows each drain's Event)",
  });
  expect(line[0]!.drains).toMatchObject({ namespace: 'projectcontour', workload: 'daemonset/envoy', outcomes: { drained: 4, deadline: 1 }, medianDrainedSeconds: 12.5, ok: false });
  expect(line[0]!.drains!.drains).toHaveLength(5);
  expect(report.checks.find((result) => result.id === 'reporter')).toMatchObject({ verdict: 'pass', message: 'reporter Deployment drainguard-system/drainguard-reporter: 2 of 2 replicas available' });
  expect(text).toContain("\nrecent drains (the reporter's Events)\n");
  expect(text).toContain('\n× daemonset/envoy in projectcontour: last 5 drains — 4 drained, median 13 s; 1 deadline, 17 left on listener ingress_https\n    raise terminationGracePeriodSeconds');
});

describe('recent drains in check', () => {
  beforeEach(async () => {
    reporters = await startReporters(double, 1);
  });

  test('clean drains pass; only the newest ten count, so a deadline eleven drains ago no longer fails the workload', async () => {
    const deployment = envoyWorkload(double, { namespace: 'projectcontour', name: 'envoy-gw', kind: 'Deployment' });
    const old = finishedRecord('deadline', { connectionsAtEnd: 3, openListeners: [{ name: 'ingress_http', connections: 3 }] });
    await reporters!.caughtUp(rolloutRestart(deployment, [old]));
    // Ten clean drains later (finished after the deadline one: the kubelet's clock moves on).
    const later = new KubeletSimulator(double, () => new Date(Date.now() + 60_000));
    let last = '';
    for (let i = 0; i < 10; i++) last = rollPod(later, runPod(later, deployment), drainedExit(finishedRecord('drained'))).metadata.resourceVersion!;
    await reporters!.caughtUp(last);
    const { code, report } = await check(['-n', 'projectcontour']);
    expect(drainLines(report)).toEqual([
      expect.objectContaining({ verdict: 'pass', message: 'deployment/envoy-gw in projectcontour: last 10 drains — 10 drained, median 14 s' }),
    ]);
    expect(code).toBe(0);
    // Its workload Events went on the Deployment (its uid read from the ReplicaSet's owner reference).
    expect(events(double).filter((event) => event.involvedObject.kind === 'Deployment' && event.involvedObject.uid === deployment.uid)).toHaveLength(11);
  });

  test('UDP sessions a drain left: the Event names their UDP proxy and says why, the metric counts them, check names them', async () => {
    const deployment = envoyWorkload(double, { namespace: 'projectcontour', name: 'envoy-udp', kind: 'Deployment' });
    const udp = { udpSessionsAtStart: 9, openUdpProxiesOmitted: 0 };
    const deadline = finishedRecord('deadline', { ...udp, connectionsAtEnd: 0, udpSessionsAtEnd: 3, openUdpProxies: [{ name: 'udproute/default/coredns/rule/0', sessions: 3 }] });
    const drained = finishedRecord('drained', { ...udp, connectionsAtStart: 40, udpSessionsAtEnd: 0, openUdpProxies: [] });
    await reporters!.caughtUp(rolloutRestart(deployment, [drained, deadline]));
    const podEvents = events(double).filter((event) => event.involvedObject.kind === 'Pod');
    expect(podEvents.map((event) => event.message).sort()).toEqual([
      '3 UDP sessions still open on UDP proxy udproute/default/coredns/rule/0 when the 290 s deadline ended: ' +
        "a UDP session ends only once its idle timeout passes without a datagram (the UDP proxy's idle_timeout, 60 s by default), so " +
        'raise terminationGracePeriodSeconds or set drainguard.io/min-connections',
      'drained 40 connections and 9 UDP sessions in 14 s',
    ]);
    const scrapes = await Promise.all(reporters!.replicas.map((replica) => scrape(replica.port)));
    for (const text of scrapes) expect(promtoolCheck(text, /^drainguard_(process|nodejs)_/)).toEqual({ status: 0, output: '' });
    const labels = { namespace: 'projectcontour', workload: 'deployment/envoy-udp' };
    expect(total(scrapes, 'drainguard_drain_udp_sessions_left_count', labels)).toBe(2);
    expect(total(scrapes, 'drainguard_drain_udp_sessions_left_sum', labels)).toBe(3);
    expect(total(scrapes, 'drainguard_drain_udp_sessions_left_bucket', { ...labels, le: '0' })).toBe(1);
    const { code, report } = await check(['-n', 'projectcontour']);
    expect(code).toBe(1);
    expect(drainLines(report)).toEqual([
      expect.objectContaining({
        verdict: 'fail',
        message: 'deployment/envoy-udp in projectcontour: last 2 drains — 1 drained, median 14 s; 1 deadline, 3 UDP sessions left on UDP proxy udproute/default/coredns/rule/0',
      }),
    ]);
  });

  test('not reported and interrupted drains fail with their own advice; Envoy exiting by itself is shown but is no drain', async () => {
    const daemonSet = envoyWorkload(double, { namespace: 'projectcontour', name: 'envoy' });
    const crashing = runPod(kubelet, daemonSet);
    kubelet.containerExited('projectcontour', crashing.metadata.name, 'envoy', { exitCode: 137, reason: 'OOMKilled' });
    kubelet.restartContainer('projectcontour', crashing.metadata.name, 'envoy');
    const noRecord = rollPod(kubelet, runPod(kubelet, daemonSet), { exitCode: 0 });
    const killed = rollPod(kubelet, runPod(kubelet, daemonSet), { exitCode: 137, reason: 'Error', message: startedRecord() });
    await reporters!.caughtUp(Math.max(Number(noRecord.metadata.resourceVersion), Number(killed.metadata.resourceVersion)));
    const { code, report } = await check(['-A']);
    expect(code).toBe(1);
    const [line] = drainLines(report);
    expect(line).toMatchObject({
      verdict: 'fail',
      message: 'daemonset/envoy in projectcontour: last 2 drains — 1 not reported; 1 interrupted; Envoy exited by itself 1 time',
      hint: expect.stringMatching(/^the drain left no record: look for FailedPreStopHook events .*; a drain was killed before its deadline/),
    });
    expect(line!.drains).toMatchObject({ outcomes: { 'not-reported': 1, interrupted: 1 }, envoyExits: 1 });
  });

  test('no drain Events: a note, not a failure; a reporter that is not installed is a note too', async () => {
    double.remove('deployments', 'drainguard-system', 'drainguard-reporter');
    const { report } = await check(['-A']);
    expect(report.checks.filter((result) => result.category === 'drains').map((result) => [result.id, result.verdict, result.message])).toEqual([
      ['reporter', 'info', 'reporter Deployment drainguard-system/drainguard-reporter not found (report.enabled false?): no new drain outcomes are reported'],
      ['drain-events', 'info', "no drains reported in all namespaces (the reporter's Events last for the API server's --event-ttl, 1 h by default)"],
    ]);
  });

  test('Events with the label but no summary check can read (another writer\'s) are not drains', async () => {
    double.put({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'forged.1', namespace: 'projectcontour', labels: { 'drainguard.io/drain-event': 'pod' }, annotations: { 'drainguard.io/drain': '{"format":"drainguard.io/drain-summary/v1","outcome":"drained"}' } },
      involvedObject: { kind: 'Pod', name: 'x', namespace: 'projectcontour' },
      reason: 'Drained',
      message: 'drained 1 connection in 1 s',
    });
    const { report } = await check(['-A']);
    expect(report.checks.find((result) => result.id === 'drain-events')).toMatchObject({ verdict: 'info' });
    expect(drainLines(report)).toEqual([]);
  });

  test('a user who may not list events gets a failed line naming what RBAC refused, and every other check still runs', async () => {
    double.deny({ verb: 'list', resource: 'events' });
    const { code, report } = await check(['-n', 'projectcontour']);
    expect(code).toBe(1);
    expect(report.checks.find((result) => result.id === 'drain-events')).toMatchObject({
      verdict: 'fail',
      message: expect.stringContaining('not allowed to list events in namespace "projectcontour"'),
    });
    expect(report.checks.find((result) => result.id === 'deployment')).toMatchObject({ verdict: 'pass' });
  });
});
