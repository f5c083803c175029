/**
 * How the reporter judges an Envoy termination (src/report/termination.ts), what its Events say
 * (describe.ts, drain-event.ts) and what it counts (metrics.ts), on pod views as the watch hands them
 * over. Hostile termination messages are unreadable, never a crash, and never a label.
 */
import fc from 'fast-check';
import { encodeDrainRecord, type FinishedRecord, type StartedRecord } from '../../../src/drain-record';
import { describeTermination, formatSeconds } from '../../../src/report/describe';
import { eventName, podEvent, readSummary, summaryOf, workloadEvent, encodeSummary } from '../../../src/report/drain-event';
import { DRAIN_METRIC_NAMES, ReporterMetrics } from '../../../src/report/metrics';
import { summariseWorkload } from '../../../src/check/drains';
import { viewPod, workloadOf, type PodView } from '../../../src/report/pod-view';
import { terminationsOf, type Termination } from '../../../src/report/termination';

const HOOK = { exec: { command: ['/config/drainguard/envoy-shutdown', 'drain', '--admin', 'unix:/admin/admin.sock', '--deadline', '290s'] } };
const started: StartedRecord = { state: 'started', version: '0.1.0', startedAt: '2026-12-01T21:00:00.000Z', deadlineMs: 290_000 };
const finished = (fields: Partial<FinishedRecord> = {}): FinishedRecord => ({
  ...started,
  state: 'finished',
  reason: 'drained',
  durationMs: 14_000,
  connectionsAtStart: 312,
  connectionsAtEnd: 0,
  openListeners: [],
  openListenersOmitted: 0,
  healthcheckFailedAtMs: 3,
  envoyVersion: '1.31.2',
  ...fields,
});

interface Ended {
  exitCode?: number;
  reason?: string;
  message?: string;
  containerID?: string;
  finishedAt?: string | Date;
}

/** A protected pod with one Envoy container, ended as given (`state`) or restarted after it (`lastState`). */
function pod(options: { ended?: Ended; previous?: Ended; deleting?: boolean; phase?: string; policy?: string; owner?: { kind: string; name: string }; hash?: string }): PodView {
  const terminated = (ended: Ended) => ({
    exitCode: ended.exitCode ?? 0,
    reason: ended.reason ?? 'Completed',
    ...(ended.message !== undefined ? { message: ended.message } : {}),
    startedAt: '2026-12-01T20:00:00Z',
    finishedAt: ended.finishedAt ?? '2026-12-01T21:00:15Z',
    containerID: ended.containerID ?? 'containerd://aaaa',
  });
  const view = viewPod({
    metadata: {
      name: 'envoy-7xk2p',
      namespace: 'projectcontour',
      uid: 'uid-1',
      resourceVersion: '10',
      labels: options.hash ? { 'pod-template-hash': options.hash } : {},
      ...(options.deleting ? { deletionTimestamp: '2026-12-01T21:00:00Z' } : {}),
      ownerReferences: [{ apiVersion: 'apps/v1', kind: options.owner?.kind ?? 'DaemonSet', name: options.owner?.name ?? 'envoy', uid: 'ds-uid', controller: true }],
    },
    spec: {
      containers: [
        { name: 'envoy', lifecycle: { preStop: HOOK }, ...(options.policy ? { terminationMessagePolicy: options.policy } : {}) },
        { name: 'sidecar' },
      ],
    },
    status: {
      phase: options.phase ?? 'Running',
      containerStatuses: [
        {
          name: 'envoy',
          restartCount: options.previous ? 1 : 0,
          state: options.ended ? { terminated: terminated(options.ended) } : { running: { startedAt: '2026-12-01T20:00:00Z' } },
          lastState: options.previous ? { terminated: terminated({ containerID: 'containerd://old', ...options.previous }) } : {},
        },
        { name: 'sidecar', state: { terminated: { exitCode: 1, reason: 'Error', containerID: 'containerd://side' } } },
      ],
    },
  });
  if (!view) throw new Error('not a pod');
  return view;
}

const only = (view: PodView): Termination => {
  const terminations = terminationsOf(view);
  expect(terminations).toHaveLength(1);
  return terminations[0]!;
};

describe('judging a termination', () => {
  test('a finished record: a drain with its reason; only the Envoy container (the one with drainguard\'s preStop) counts', () => {
    const termination = only(pod({ deleting: true, ended: { message: encodeDrainRecord(finished()) } }));
    expect(termination.outcome).toMatchObject({ kind: 'drain', reason: 'drained' });
    expect(termination.container).toBe('envoy');
    expect(termination.podEnding).toBe(true);
  });

  test('a started record alone: the drain was interrupted', () => {
    expect(only(pod({ deleting: true, ended: { exitCode: 137, reason: 'Error', message: encodeDrainRecord(started) } })).outcome).toMatchObject({ kind: 'interrupted' });
  });

  test('the record after the runtime\'s own message (`<runtime>: <record>`) is read; any other prefix is not', () => {
    const record = encodeDrainRecord(finished());
    expect(only(pod({ deleting: true, ended: { message: `task exited: ${record}` } })).outcome).toMatchObject({ kind: 'drain' });
    expect(only(pod({ deleting: true, ended: { message: `garbage${record}` } })).outcome).toMatchObject({ kind: 'unreadable' });
  });

  test('no record while the pod ends: not reported; OOMKilled without a record: Envoy exited by itself', () => {
    expect(only(pod({ deleting: true, ended: { exitCode: 0 } })).outcome).toEqual({ kind: 'not-reported' });
    expect(only(pod({ phase: 'Failed', ended: { exitCode: 137, reason: 'Error' } })).outcome).toEqual({ kind: 'not-reported' });
    expect(only(pod({ deleting: true, ended: { exitCode: 137, reason: 'OOMKilled' } })).outcome).toEqual({ kind: 'exited', reason: 'OOMKilled' });
  });

  test('a container restart without a record is Envoy exiting by itself, with the runtime reason from a fixed set', () => {
    expect(only(pod({ previous: { exitCode: 1, reason: 'Error' } })).outcome).toEqual({ kind: 'exited', reason: 'Error' });
    expect(only(pod({ previous: { exitCode: 0, reason: 'Completed' } })).outcome).toEqual({ kind: 'exited', reason: 'Completed' });
    expect(only(pod({ previous: { exitCode: 2, reason: 'Something"Odd\n' } })).outcome).toEqual({ kind: 'exited', reason: 'other' });
  });

  test('a restart after a drain (the kubelet ran preStop on a liveness failure) is that drain', () => {
    expect(only(pod({ previous: { message: encodeDrainRecord(finished({ reason: 'deadline' })) } })).outcome).toMatchObject({ kind: 'drain', reason: 'deadline' });
  });

  test('a lastState on a pod being deleted was a restart, not the deletion', () => {
    const terminations = terminationsOf(pod({ deleting: true, previous: { exitCode: 1, reason: 'Error' }, ended: { message: encodeDrainRecord(finished()) } }));
    expect(terminations.map((t) => [t.restarted, t.podEnding, t.outcome.kind])).toEqual([
      [true, false, 'exited'],
      [false, true, 'drain'],
    ]);
  });

  test('FallbackToLogsOnError: Envoy\'s log tail in place of a missing record is no record; a broken record stays unreadable', () => {
    const log = '{"time":"…","logger":"envoy-shutdown","phase":"admin-unreachable"}\n[warning] envoy exiting';
    expect(only(pod({ deleting: true, policy: 'FallbackToLogsOnError', ended: { exitCode: 1, reason: 'Error', message: log } })).outcome).toEqual({ kind: 'not-reported' });
    const broken = encodeDrainRecord(finished()).replace('"reason":"drained"', '"reason":"forged"');
    expect(only(pod({ deleting: true, policy: 'FallbackToLogsOnError', ended: { exitCode: 1, message: broken } })).outcome).toMatchObject({ kind: 'unreadable' });
    // With the default policy the same log text is an unreadable message.
    expect(only(pod({ deleting: true, ended: { exitCode: 1, message: log } })).outcome).toMatchObject({ kind: 'unreadable' });
  });

  test('ContainerStatusUnknown carries the kubelet\'s own words, not a record', () => {
    const ended = { exitCode: 137, reason: 'ContainerStatusUnknown', message: 'The container could not be located when the pod was terminated', containerID: '' };
    expect(only(pod({ deleting: true, ended })).outcome).toEqual({ kind: 'not-reported' });
  });

  test('the key names the ended container: the same in state and after the restart, different for the next one, whatever the timestamp form', () => {
    const asState = only(pod({ deleting: false, ended: { containerID: 'containerd://x', finishedAt: '2026-12-01T21:00:15Z' } }));
    const asLast = only(pod({ previous: { containerID: 'containerd://x', finishedAt: new Date('2026-12-01T21:00:15Z') } }));
    const next = only(pod({ previous: { containerID: 'containerd://y' } }));
    expect(asState.key).toMatch(/^[0-9a-f]{16}$/);
    expect(asLast.key).toBe(asState.key);
    expect(next.key).not.toBe(asState.key);
  });

  test('the workload: a DaemonSet, a Deployment through its ReplicaSet\'s pod-template-hash, a plain ReplicaSet, a bare pod', () => {
    expect(workloadOf(pod({}))).toEqual({ label: 'daemonset/envoy', kind: 'DaemonSet', name: 'envoy' });
    expect(workloadOf(pod({ owner: { kind: 'ReplicaSet', name: 'envoy-gw-5f7c9d' }, hash: '5f7c9d' }))).toEqual({ label: 'deployment/envoy-gw', kind: 'Deployment', name: 'envoy-gw' });
    expect(workloadOf(pod({ owner: { kind: 'ReplicaSet', name: 'envoy-gw-5f7c9d' } }))).toMatchObject({ label: 'replicaset/envoy-gw-5f7c9d' });
    expect(workloadOf({})).toEqual({ label: 'none' });
  });
});

describe('the Events', () => {
  const text = (ended: Ended, options: { deleting?: boolean } = { deleting: true }) => describeTermination(only(pod({ ...options, ended })));

  test('Drained, DrainDeadline naming the listeners, and each other outcome with what to do', () => {
    expect(text({ message: encodeDrainRecord(finished()) })).toEqual({ type: 'Normal', reason: 'Drained', message: 'drained 312 connections in 14 s' });
    const deadline = finished({ reason: 'deadline', durationMs: 290_000, connectionsAtEnd: 17, openListeners: [{ name: 'ingress_https', connections: 17 }] });
    expect(text({ message: encodeDrainRecord(deadline) })).toEqual({
      type: 'Warning',
      reason: 'DrainDeadline',
      message: '17 connections still open on listener ingress_https when the 290 s deadline ended: raise terminationGracePeriodSeconds or set drainguard.io/min-connections',
    });
    const many = finished({
      reason: 'deadline',
      connectionsAtEnd: 20,
      openListeners: [
        { name: 'ingress_https', connections: 12 },
        { name: 'ingress_http', connections: 5 },
        { name: 'stats', connections: 2 },
        { name: 'other', connections: 1 },
      ],
      openListenersOmitted: 2,
    });
    expect(text({ message: encodeDrainRecord(many) }).message).toMatch(/^20 connections still open on listeners ingress_https \(12\), ingress_http \(5\), stats \(2\), and 3 more when/);
    expect(text({ message: encodeDrainRecord(finished({ reason: 'admin-unreachable', durationMs: 300 })) })).toMatchObject({ reason: 'DrainAdminUnreachable', type: 'Warning' });
    expect(text({ message: encodeDrainRecord(finished({ reason: 'signal', signal: 'SIGINT', connectionsAtEnd: 3 })) }).message).toMatch(/^the drain was stopped by SIGINT after 14 s with 3 connections still open/);
    expect(text({ exitCode: 137, reason: 'Error', message: encodeDrainRecord(started) }).message).toMatch(/^the drain was killed 15 s after it started, before it finished \(its deadline: 290 s; /);
    expect(text({ exitCode: 0 })).toMatchObject({ reason: 'DrainNotReported', message: expect.stringContaining('FailedPreStopHook') });
    expect(text({ message: 'x' })).toMatchObject({ reason: 'DrainRecordUnreadable', message: expect.stringContaining('(not JSON)') });
    expect(text({ exitCode: 137, reason: 'OOMKilled' }, { deleting: false })).toMatchObject({ reason: 'EnvoyExited', message: expect.stringContaining('raise its memory limit') });
  });

  test('durations: whole seconds from 10 s, tenths below', () => {
    expect([formatSeconds(14_400), formatSeconds(290_000), formatSeconds(1_540), formatSeconds(2_000), formatSeconds(300)]).toEqual(['14 s', '290 s', '1.5 s', '2 s', '0.3 s']);
  });

  test('the pod Event and the workload Event share the termination\'s key in their names; long names are cut to 253', () => {
    const termination = only(pod({ deleting: true, ended: { message: encodeDrainRecord(finished()) } }));
    const words = describeTermination(termination);
    const reporter = { instance: 'drainguard-reporter-abc', id: 'drainguard-reporter-abc/1234' };
    const onPod = podEvent(termination, words, reporter, new Date());
    const onWorkload = workloadEvent(termination, words, { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'envoy', uid: 'ds-uid' }, reporter, new Date());
    expect(onPod.metadata.name).toBe(`envoy-7xk2p.${termination.key}`);
    expect(onWorkload.metadata.name).toBe(`envoy.${termination.key}`);
    expect(onPod.involvedObject).toEqual({ apiVersion: 'v1', kind: 'Pod', name: 'envoy-7xk2p', namespace: 'projectcontour', uid: 'uid-1', fieldPath: 'spec.containers{envoy}' });
    expect(onWorkload.message).toBe('pod envoy-7xk2p: drained 312 connections in 14 s');
    expect(onPod.firstTimestamp).toBe('2026-12-01T21:00:15Z');
    const long = eventName(`${'a'.repeat(250)}-b`, termination.key);
    expect(long.length).toBeLessThanOrEqual(253);
    expect(long).toMatch(/^a+\.[0-9a-f]{16}$/);
  });

  test('the summary annotation reads back as it was written, and anything else reads as nothing', () => {
    const termination = only(pod({ deleting: true, ended: { message: encodeDrainRecord(finished({ reason: 'deadline', connectionsAtEnd: 17, openListeners: [{ name: 'ingress_https', connections: 17 }] })) } }));
    const summary = summaryOf(termination);
    expect(readSummary(encodeSummary(summary))).toEqual(summary);
    expect(summary).toMatchObject({ workload: 'daemonset/envoy', outcome: 'deadline', connectionsAtEnd: 17, finishedAt: '2026-12-01T21:00:15.000Z' });
    for (const forged of [
      '{}',
      'not json',
      encodeSummary({ ...summary, outcome: 'fine' as never }),
      encodeSummary({ ...summary, workload: 'DaemonSet/Envoy' }),
      encodeSummary({ ...summary, connectionsAtEnd: -1 }),
      encodeSummary({ ...summary, openListeners: [{ name: 'a"b', connections: 1 }] }),
      encodeSummary({ ...summary, exitReason: 'OOMKilled' }),
      'x'.repeat(10_000),
    ]) {
      expect(readSummary(forged)).toBeUndefined();
    }
  });
});

describe('UDP sessions (the drain waits for them too)', () => {
  const text = (record: FinishedRecord) => describeTermination(only(pod({ deleting: true, ended: { message: encodeDrainRecord(record) } })));
  const udp = (fields: Partial<FinishedRecord>): FinishedRecord =>
    finished({ udpSessionsAtStart: 4, udpSessionsAtEnd: 0, openUdpProxies: [], openUdpProxiesOmitted: 0, ...fields });

  test('the Events count sessions beside connections, and say why a session outlives a drain', () => {
    expect(text(udp({}))).toEqual({ type: 'Normal', reason: 'Drained', message: 'drained 312 connections and 4 UDP sessions in 14 s' });
    expect(text(udp({ connectionsAtStart: 0 })).message).toBe('drained 4 UDP sessions in 14 s');
    const both = udp({
      reason: 'deadline',
      durationMs: 290_000,
      connectionsAtEnd: 2,
      openListeners: [{ name: 'ingress_https', connections: 2 }],
      udpSessionsAtEnd: 3,
      openUdpProxies: [{ name: 'udproute/default/coredns/rule/0', sessions: 3 }],
    });
    expect(text(both)).toEqual({
      type: 'Warning',
      reason: 'DrainDeadline',
      message:
        '2 connections and 3 UDP sessions still open on listener ingress_https, on UDP proxy udproute/default/coredns/rule/0 when the 290 s deadline ended: ' +
        "a UDP session ends only once its idle timeout passes without a datagram (the UDP proxy's idle_timeout, 60 s by default), so " +
        'raise terminationGracePeriodSeconds or set drainguard.io/min-connections',
    });
    const udpOnly = udp({ reason: 'deadline', connectionsAtEnd: 0, udpSessionsAtEnd: 15, openUdpProxies: [{ name: 'game', sessions: 12 }, { name: 'dns', sessions: 3 }], openUdpProxiesOmitted: 1 });
    expect(text(udpOnly).message).toMatch(/^15 UDP sessions still open on UDP proxies game \(12\), dns \(3\), and 1 more when the 290 s deadline ended: a UDP session/);
    expect(text(udp({ reason: 'signal', signal: 'SIGTERM', connectionsAtEnd: 1, udpSessionsAtEnd: 2 })).message).toMatch(/with 1 connection and 2 UDP sessions still open/);
    // A record of a program that did not count them reads as before.
    expect(text(finished())).toMatchObject({ message: 'drained 312 connections in 14 s' });
  });

  test('the summary carries them, read back strictly; check names them for a deadline', () => {
    const record = udp({ reason: 'deadline', connectionsAtEnd: 0, udpSessionsAtEnd: 3, openUdpProxies: [{ name: 'dns', sessions: 3 }] });
    const summary = summaryOf(only(pod({ deleting: true, ended: { message: encodeDrainRecord(record) } })));
    expect(summary).toMatchObject({ outcome: 'deadline', connectionsAtEnd: 0, udpSessionsAtEnd: 3, openUdpProxies: [{ name: 'dns', sessions: 3 }] });
    expect(readSummary(encodeSummary(summary))).toEqual(summary);
    const before = summaryOf(only(pod({ deleting: true, ended: { message: encodeDrainRecord(finished()) } })));
    expect('udpSessionsAtEnd' in before).toBe(false);
    expect(readSummary(encodeSummary(before))).toEqual(before);
    for (const forged of [
      encodeSummary({ ...summary, openUdpProxies: undefined }),
      encodeSummary({ ...summary, udpSessionsAtEnd: -3 }),
      encodeSummary({ ...summary, openUdpProxies: [{ name: 'a b', sessions: 1 }] }),
      encodeSummary({ ...summary, openUdpProxies: Array.from({ length: 6 }, () => ({ name: 'dns', sessions: 1 })) }),
    ]) {
      expect(readSummary(forged)).toBeUndefined();
    }
    const drains = summariseWorkload('projectcontour', 'daemonset/envoy', [{ namespace: 'projectcontour', summary, at: null } as never]);
    expect(drains.drains[0]).toMatchObject({ udpSessionsAtEnd: 3, openUdpProxies: [{ name: 'dns', sessions: 3 }] });
  });

  test('drainguard_drain_udp_sessions_left: observed when the drain counted them, never for a record without them or an unknown count', async () => {
    const metrics = new ReporterMetrics();
    const count = (record: FinishedRecord, id: string) => metrics.count(only(pod({ deleting: true, ended: { message: encodeDrainRecord(record), containerID: `containerd://${id}` } })));
    count(udp({ reason: 'deadline', udpSessionsAtEnd: 3 }), 'a');
    count(udp({}), 'b');
    count(finished(), 'c');
    count(udp({ reason: 'deadline', connectionsAtEnd: null, udpSessionsAtEnd: null }), 'd');
    const histogram = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === 'drainguard_drain_udp_sessions_left')!;
    const values = histogram.values as { metricName?: string; value: number }[];
    expect(values.find((v) => v.metricName === 'drainguard_drain_udp_sessions_left_count')?.value).toBe(2);
    expect(values.find((v) => v.metricName === 'drainguard_drain_udp_sessions_left_sum')?.value).toBe(3);
  });
});

describe('hostile termination messages', () => {
  const series = async (metrics: ReporterMetrics) => {
    const json = await metrics.registry.getMetricsAsJSON();
    return json.filter((metric) => (DRAIN_METRIC_NAMES as readonly string[]).includes(metric.name) && (metric.values as unknown[]).length > 0);
  };

  test('not JSON, 4 KiB of garbage, a forged reason, huge numbers: unreadable, counted once each, under the workload\'s labels only', async () => {
    const metrics = new ReporterMetrics();
    const hostile = [
      'not json at all',
      Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256)).toString('latin1'),
      encodeDrainRecord(finished()).replace('"reason":"drained"', '"reason":"drained\\"} rm -rf /"'),
      encodeDrainRecord(finished()).replace('"connectionsAtStart":312', '"connectionsAtStart":1e308'),
      encodeDrainRecord(finished()).replace('"durationMs":14000', '"durationMs":99999999999999999999'),
      encodeDrainRecord(finished({ openListeners: [{ name: 'ingress', connections: 1 }] })).replace('"name":"ingress"', `"name":"${'x'.repeat(5000)}"`),
      '{"format":"drainguard.io/drain/v1","__proto__":{"state":"finished"}}',
    ];
    for (const [index, message] of hostile.entries()) {
      const termination = only(pod({ deleting: true, ended: { message, containerID: `containerd://${index}` } }));
      expect(termination.outcome.kind).toBe('unreadable');
      expect(describeTermination(termination).reason).toBe('DrainRecordUnreadable');
      metrics.count(termination);
    }
    const found = await series(metrics);
    expect(found.map((metric) => metric.name)).toEqual(['drainguard_drain_records_unreadable_total']);
    expect(found[0]!.values).toEqual([{ labels: { namespace: 'projectcontour', workload: 'daemonset/envoy' }, value: hostile.length }]);
  });

  test('any message at all: judged without throwing, and never a label value beyond the fixed sets', async () => {
    const metrics = new ReporterMetrics();
    await fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 5000 }), fc.json(), fc.string({ unit: 'binary', maxLength: 1000 })), fc.string({ maxLength: 40 }), (message, reason) => {
        const termination = only(pod({ deleting: true, ended: { message, reason } }));
        describeTermination(termination);
        metrics.count(termination);
      }),
      { numRuns: 500 },
    );
    for (const metric of (await metrics.registry.getMetricsAsJSON()).filter((m) => (DRAIN_METRIC_NAMES as readonly string[]).includes(m.name))) {
      for (const value of metric.values as { labels: Record<string, string | number> }[]) {
        const { namespace, workload, reason, le, ...rest } = value.labels;
        expect(rest).toEqual({});
        if (namespace !== undefined) expect([namespace, workload]).toEqual(['projectcontour', 'daemonset/envoy']);
        if (reason !== undefined) expect(['drained', 'deadline', 'admin-unreachable', 'signal', 'interrupted', 'OOMKilled', 'Error', 'Completed', 'other']).toContain(reason);
        void le;
      }
    }
  });
});
