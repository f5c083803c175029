/**
 * The recent-drains part of `drainguard check` on its own, over the Events a reporter wrote: outcomes,
 * the ten-drain window, Envoy's own exits, forged Events, RBAC. Still on the API double with in-process
 * reporters (../report/scenario.ts): it moves to the real API server with the rest of check's suites.
 * The rollout it used to start with (issue 22's acceptance) runs on the real API server now:
 * test/kube/report-rollout.test.ts.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCheckCommand } from '../../../src/cli/check';
import type { CheckReport, CheckResult } from '../../../src/check/report';
import { KubeApiDouble } from '../../support/kube-api-double';
import { KubeletSimulator } from '../../support/kube/kubelet';
import { promtoolCheck, total } from '../../support/metrics-text';
import { temporaryDirectory } from '../server/webhook-test-kit';
import { installDrainguard, namespace, OPT_IN, WEBHOOK_CONFIGURATION } from './cluster-scenario';
import { drainedExit, envoyWorkload, events, finishedRecord, rollPod, runPod, scrape, startedRecord, startReporters, type Reporters, type Workload } from '../report/scenario';

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

describe('recent drains in check', () => {
  beforeEach(async () => {
    reporters = await startReporters(double, 1, { webhookConfigName: WEBHOOK_CONFIGURATION });
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
