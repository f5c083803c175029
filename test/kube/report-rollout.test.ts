/**
 * `drainguard report` on the real API server, as the chart runs it: drainguard installed by helm with
 * the reporter on (two replicas, its ServiceAccount and ClusterRole, RBAC decided by kube-apiserver),
 * `kubectl rollout restart` of Contour's Envoy DaemonSet and of Envoy Gateway's Deployment, each old pod
 * drained by the real drain program from its preStop hook against the Envoy simulator the kubelet
 * stand-in runs. Then: one pod Event and one workload Event per drain, as the API server validated and
 * stored them and as `kubectl get events` and `kubectl describe` show them; a connection held open
 * to Envoy's listener gives DrainDeadline; the metrics summed over both reporter pods count each drain
 * once. And only what drainguard protected is reported: a forged pod in a namespace the webhook does
 * not select is counted as ignored, and reported once the namespace is opted in.
 */
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { spawn } from 'node:child_process';
import { DRAIN_SUMMARY_ANNOTATION, REPORTED_BY_ANNOTATION } from '../../src/report/drain-event';
import { CLI_MAIN } from '../support/build';
import { createNamespace, deleteNamespace, eventually, installDrainguard, uninstallDrainguard, type DrainguardRelease } from '../support/cluster/lane';
import { finishedRecord } from '../support/generators/drain-records';
import { total } from '../support/metrics-text';
import { NODE } from '../support/repo';
import {
  contourEnvoy,
  drainEvents,
  envoyGateway,
  kubectl,
  kubectlOk,
  readyPods,
  reporterPods,
  rolloutRestart,
  scrape,
  sharedCluster,
  type PodObject,
} from './report/workloads';

const cluster = sharedCluster();
let release: DrainguardRelease;
const namespaces: string[] = [];
/** The reporter pods' addresses (their /metrics on port 8080). */
let reporters: string[];

beforeAll(async () => {
  release = await installDrainguard('report', { 'report.enabled': 'true', 'report.replicaCount': '2' });
  reporters = (await reporterPods(cluster, release)).map((pod) => pod.status.podIP!);
}, 300_000);
afterAll(async () => {
  for (const namespace of namespaces) await deleteNamespace(namespace);
  if (release) await uninstallDrainguard(release);
}, 300_000);

async function namespace(prefix: string, labels: Record<string, string> = {}): Promise<string> {
  const name = await createNamespace(prefix, labels);
  namespaces.push(name);
  return name;
}

const scrapes = () => Promise.all(reporters.map((address) => scrape(address)));

/** Waits until both reporters have nothing pending and `holds` is true of their summed metrics. */
async function metricsUntil(what: string, holds: (texts: string[]) => boolean): Promise<string[]> {
  return eventually(what, async () => {
    const texts = await scrapes();
    return holds(texts) && total(texts, 'drainguard_reporter_pending_reports') === 0 ? texts : undefined;
  });
}

test("a rollout restart of Contour's DaemonSet, one pod holding a connection open: one Drained and one DrainDeadline Event on each pod and on the DaemonSet, as stored and as kubectl shows them, counted once over both reporters", async () => {
  const ns = await namespace('report-contour', release.optIn);
  // A grace period of 15 s: drainguard's deadline is 5 s, so the held connection hits it soon.
  const daemonSet = await contourEnvoy(cluster, ns, { gracePeriodSeconds: 15 });
  const old = await readyPods(cluster, daemonSet, 2);
  const [held, clean] = old as [PodObject, PodObject];
  // The held pod stays after its final delete (a finalizer of the test's), for `kubectl describe pod`.
  await cluster.api.patch(`/api/v1/namespaces/${ns}/pods/${held.metadata.name}`, { metadata: { finalizers: ['test.drainguard.io/keep'] } });
  let client: Socket | undefined;
  try {
    // A client of Envoy's HTTPS listener that never closes its connection.
    client = connect({ host: held.status.podIP!, port: 8443 });
    client.on('error', () => undefined);
    await once(client, 'connect');
    await rolloutRestart(cluster, daemonSet);
    const texts = await metricsUntil('both drains counted', (t) => total(t, 'drainguard_drains_total', { namespace: ns }) === 2);

    const podEvents = await drainEvents(cluster, ns, 'pod');
    const workloadEvents = await drainEvents(cluster, ns, 'workload');
    // Exactly once: one Event per termination on the pod and one on the DaemonSet, each created once.
    expect(podEvents.map((event) => event.involvedObject.uid).sort()).toEqual(old.map((pod) => pod.metadata.uid).sort());
    expect(workloadEvents).toHaveLength(2);
    expect([...podEvents, ...workloadEvents].map((event) => event.count)).toEqual([1, 1, 1, 1]);
    expect(total(texts, 'drainguard_drains_total', { namespace: ns, workload: 'daemonset/envoy', reason: 'drained' })).toBe(1);
    expect(total(texts, 'drainguard_drains_total', { namespace: ns, workload: 'daemonset/envoy', reason: 'deadline' })).toBe(1);
    expect(total(texts, 'drainguard_drain_connections_left_sum', { namespace: ns })).toBe(1);
    expect(total(texts, 'drainguard_drain_duration_seconds_count', { namespace: ns })).toBe(2);

    // The DrainDeadline Event as kube-apiserver stored it, beside the pod it is about (still there).
    const deadline = podEvents.find((event) => event.reason === 'DrainDeadline')!;
    const kept = await cluster.api.get<PodObject>(`/api/v1/namespaces/${ns}/pods/${held.metadata.name}`);
    const finishedAt = kept.status.containerStatuses!.find((status) => status.name === 'envoy')!.state.terminated!.finishedAt!;
    const reporterNames = (await reporterPods(cluster, release)).map((pod) => pod.metadata.name);
    expect(deadline.involvedObject).toEqual({ apiVersion: 'v1', kind: 'Pod', name: held.metadata.name, namespace: ns, uid: held.metadata.uid, fieldPath: 'spec.containers{envoy}' });
    expect(deadline.metadata.name).toMatch(new RegExp(`^${held.metadata.name}\\.[0-9a-f]{16}$`));
    expect(deadline).toMatchObject({
      type: 'Warning',
      message: expect.stringMatching(/^1 connection still open on listener 0\.0\.0\.0_8443 when the 5 s deadline ended: raise terminationGracePeriodSeconds or set drainguard\.io\/min-connections$/),
      source: { component: 'drainguard-reporter' },
      reportingComponent: 'drainguard-reporter',
      firstTimestamp: finishedAt,
      lastTimestamp: finishedAt,
      count: 1,
    });
    expect(reporterNames).toContain(deadline.reportingInstance);
    expect(deadline.metadata.annotations![REPORTED_BY_ANNOTATION]).toMatch(new RegExp(`^${deadline.reportingInstance}/[0-9a-f]{12}$`));
    expect(JSON.parse(deadline.metadata.annotations![DRAIN_SUMMARY_ANNOTATION]!)).toMatchObject({
      workload: 'daemonset/envoy',
      pod: held.metadata.name,
      container: 'envoy',
      outcome: 'deadline',
      deadlineMs: 5000,
      connectionsAtEnd: 1,
      openListeners: [{ name: '0.0.0.0_8443', connections: 1 }],
    });
    // What the API server added: identity, and the events.k8s.io fields it leaves empty for a core/v1 create.
    expect(deadline.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(deadline.metadata.creationTimestamp).toEqual(expect.any(String));
    expect(deadline.eventTime).toBeNull();
    // The same Event through events.k8s.io/v1, the API newer clients read.
    const asNew = await cluster.api.get<{ regarding: unknown; note: string; reason: string; reportingController: string; deprecatedCount: number }>(
      `/apis/events.k8s.io/v1/namespaces/${ns}/events/${deadline.metadata.name}`,
    );
    expect(asNew).toMatchObject({ regarding: deadline.involvedObject, note: deadline.message, reason: 'DrainDeadline', reportingController: 'drainguard-reporter', deprecatedCount: 1 });

    for (const event of workloadEvents) {
      expect(event.involvedObject).toEqual({ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'envoy', namespace: ns, uid: daemonSet.uid });
    }
    expect(workloadEvents.find((event) => event.reason === 'DrainDeadline')!.message).toBe(`pod ${held.metadata.name}: ${deadline.message}`);
    expect(workloadEvents.find((event) => event.reason === 'Drained')!.message).toMatch(new RegExp(`^pod ${clean.metadata.name}: drained 0 connections in \\d+(\\.\\d)? s$`));

    // What an operator sees.
    const listed = await kubectlOk(cluster, ['-n', ns, 'get', 'events', '--field-selector', 'reason=DrainDeadline']);
    expect(listed).toMatch(new RegExp(`Warning\\s+DrainDeadline\\s+pod/${held.metadata.name}\\s+1 connection still open on listener 0\\.0\\.0\\.0_8443`));
    expect(listed).toMatch(new RegExp(`Warning\\s+DrainDeadline\\s+daemonset/envoy\\s+pod ${held.metadata.name}: 1 connection still open`));
    const describedDaemonSet = await kubectlOk(cluster, ['-n', ns, 'describe', 'daemonset', 'envoy']);
    expect(describedDaemonSet).toMatch(new RegExp(`Warning\\s+DrainDeadline\\s+\\S+\\s+drainguard-reporter\\s+pod ${held.metadata.name}: 1 connection still open`));
    expect(describedDaemonSet).toMatch(new RegExp(`Normal\\s+Drained\\s+\\S+\\s+drainguard-reporter\\s+pod ${clean.metadata.name}: drained 0 connections`));
    const describedPod = await kubectlOk(cluster, ['-n', ns, 'describe', 'pod', held.metadata.name]);
    expect(describedPod).toMatch(/Warning\s+DrainDeadline\s+\S+\s+drainguard-reporter\s+1 connection still open on listener 0\.0\.0\.0_8443/);

    // And `drainguard check` fails for the workload, saying what to do.
    const check = await drainguardCheck(['-n', ns]);
    expect(check.stdout).toMatch(/\n× daemonset\/envoy in \S+: last 2 drains — 1 drained, median [0-9.]+ s; 1 deadline, 1 left on listener 0\.0\.0\.0_8443\n {4}raise terminationGracePeriodSeconds/);
  } finally {
    client?.destroy();
    await cluster.api.patch(`/api/v1/namespaces/${ns}/pods/${held.metadata.name}`, { metadata: { finalizers: null } }).catch(() => undefined);
  }
}, 600_000);

test("a rollout restart of Envoy Gateway's Deployment: the workload Event is on the Deployment (its uid read through the ReplicaSet), counted once", async () => {
  const ns = await namespace('report-gateway', release.optIn);
  const deployment = await envoyGateway(cluster, ns, { replicas: 1, minDrain: '0s' });
  const [old] = await readyPods(cluster, deployment, 1);
  await rolloutRestart(cluster, deployment);
  const workload = `deployment/${deployment.name}`;
  const texts = await metricsUntil('the drain counted', (t) => total(t, 'drainguard_drains_total', { namespace: ns }) === 1);
  expect(total(texts, 'drainguard_drains_total', { namespace: ns, workload, reason: 'drained' })).toBe(1);
  const [podEvent] = await drainEvents(cluster, ns, 'pod');
  expect(podEvent).toMatchObject({ reason: 'Drained', count: 1, involvedObject: { kind: 'Pod', name: old!.metadata.name, uid: old!.metadata.uid } });
  const workloadEvents = await eventually('the Deployment Event', async () => {
    const events = await drainEvents(cluster, ns, 'workload');
    return events.length === 1 ? events : undefined;
  });
  expect(workloadEvents[0]!.involvedObject).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.name, namespace: ns, uid: deployment.uid });
  expect(await kubectlOk(cluster, ['-n', ns, 'describe', 'deployment', deployment.name])).toMatch(
    new RegExp(`Normal\\s+Drained\\s+\\S+\\s+drainguard-reporter\\s+pod ${old!.metadata.name}: drained 0 connections`),
  );
}, 600_000);

describe('only what drainguard protected is reported', () => {
  /**
   * A pod no webhook touched, dressed as protected: the label, a container named envoy with
   * drainguard's preStop command, and a drain record it writes itself as its termination message.
   */
  async function forgedDrain(ns: string, name: string): Promise<void> {
    await forgedPod(ns, name);
    await cluster.api.delete(`/api/v1/namespaces/${ns}/pods/${name}`);
    await eventually(`forged pod ${name} gone`, async () => ((await cluster.api.find(`/api/v1/namespaces/${ns}/pods/${name}`)) ? undefined : true));
  }

  /** The forged pod, once ready (its record written); `finalizers` keep it after it ends. */
  async function forgedPod(ns: string, name: string, finalizers: string[] = []): Promise<void> {
    const record = finishedRecord('drained', { durationMs: 1000, connectionsAtStart: 7 });
    // Ready once its record is written: only then is it deleted.
    const script = `process.on("SIGTERM", () => process.exit(0)); require("fs").writeFileSync("/dev/termination-log", ${JSON.stringify(record)}); require("http").createServer((q, r) => r.end("ok")).listen(8080);`;
    await cluster.api.create(`/api/v1/namespaces/${ns}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      // The webhook leaves it alone even where it sees it: the same forgery in every namespace.
      metadata: { name, labels: { 'drainguard.io/protected': 'true' }, annotations: { 'drainguard.io/inject': 'disabled' }, finalizers },
      spec: {
        terminationGracePeriodSeconds: 5,
        securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532 },
        containers: [
          {
            name: 'envoy',
            image: 'ghcr.io/drainguard/drainguard:test',
            command: ['/nodejs/bin/node', '-e', script],
            readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 1 },
            lifecycle: { preStop: { exec: { command: ['/config/drainguard/envoy-shutdown', 'drain', '--admin', 'unix:/admin/admin.sock', '--deadline', '2s'] } } },
          },
        ],
      },
    });
    await eventually(`forged pod ${name} ready`, async () => {
      const pod = await cluster.api.get<PodObject>(`/api/v1/namespaces/${ns}/pods/${name}`);
      return (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True') ? true : undefined;
    });
  }

  const ignored = (texts: string[], ns: string) => total(texts, 'drainguard_reporter_terminations_ignored_total', { namespace: ns });

  test('a forged pod in a namespace the webhook does not select: no Event, counted as ignored by each reporter; once the namespace is opted in, reported; opted out again, ignored', async () => {
    const ns = await namespace('report-forged');
    await forgedDrain(ns, 'forged-outside');
    await metricsUntil('both reporters to ignore it', (t) => ignored(t, ns) === 2);
    expect(await drainEvents(cluster, ns, 'pod')).toEqual([]);
    expect(total(await scrapes(), 'drainguard_drains_total', { namespace: ns })).toBe(0);

    await kubectlOk(cluster, ['label', 'namespace', ns, ...Object.entries(release.optIn).map(([key, value]) => `${key}=${value}`)]);
    await forgedDrain(ns, 'forged-opted-in');
    const texts = await metricsUntil('the drain counted', (t) => total(t, 'drainguard_drains_total', { namespace: ns }) === 1);
    expect(ignored(texts, ns)).toBe(2);
    expect((await drainEvents(cluster, ns, 'pod')).map((event) => event.involvedObject.name)).toEqual(['forged-opted-in']);

    await kubectlOk(cluster, ['label', 'namespace', ns, ...Object.keys(release.optIn).map((key) => `${key}-`)]);
    await forgedDrain(ns, 'forged-opted-out');
    await metricsUntil('both reporters to ignore it too', (t) => ignored(t, ns) === 4);
    expect((await drainEvents(cluster, ns, 'pod')).map((event) => event.involvedObject.name)).toEqual(['forged-opted-in']);
  }, 600_000);

  test('a namespace deleted under a protected pod: its pod Event is refused (403, cause NamespaceTerminating) and each reporter gives the report up at once, while the namespace is still terminating', async () => {
    const ns = await namespace('report-ns-deleted', release.optIn);
    const KEEP = 'test.drainguard.io/keep';
    // The finalizer holds the ended pod, and so the namespace, in Terminating until the test lets go.
    await forgedPod(ns, 'forged-ns-deleted', [KEEP]);
    const abandoned = (texts: string[]) => total(texts, 'drainguard_reporter_reports_abandoned_total');
    const before = abandoned(await scrapes());
    try {
      await cluster.api.delete(`/api/v1/namespaces/${ns}`);
      namespaces.splice(namespaces.indexOf(ns), 1);
      const texts = await metricsUntil('both reporters to give the report up', (t) => abandoned(t) === before + 2);
      expect(total(texts, 'drainguard_drains_total', { namespace: ns })).toBe(0);
      // Given up while the namespace still exists: a 404 after it was gone would end it too, but later.
      expect((await cluster.api.get<{ status: { phase: string } }>(`/api/v1/namespaces/${ns}`)).status.phase).toBe('Terminating');
      expect(await drainEvents(cluster, ns, 'pod')).toEqual([]);
    } finally {
      await cluster.api.patch(`/api/v1/namespaces/${ns}/pods/forged-ns-deleted`, { metadata: { finalizers: null } });
    }
  }, 600_000);

  test("the reporter may read its own release's webhook configuration and no other, and namespaces", async () => {
    const account = `system:serviceaccount:${release.namespace}:${release.release}-drainguard-reporter`;
    const canI = async (...args: string[]) => (await kubectl(cluster, ['auth', 'can-i', ...args, '--as', account])).stdout.trim();
    expect(await canI('list', `mutatingwebhookconfigurations/${release.webhookConfigName}`)).toBe('yes');
    expect(await canI('watch', `mutatingwebhookconfigurations/${release.webhookConfigName}`)).toBe('yes');
    expect(await canI('list', 'mutatingwebhookconfigurations')).toBe('no');
    expect(await canI('get', `mutatingwebhookconfigurations/${release.webhookConfigName}`)).toBe('no');
    expect(await canI('watch', 'namespaces')).toBe('yes');
    expect(await canI('update', 'namespaces')).toBe('no');
  });
});

/** The built `drainguard check` as its own process, as the cluster's admin. */
function drainguardCheck(args: string[]): Promise<{ code: number | null; stdout: string }> {
  const child = spawn(NODE, [CLI_MAIN, 'check', ...args, '--kubeconfig', cluster.kubeconfig], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout })));
}
