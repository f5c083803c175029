import { adminCalls, explanationJson, formatExplanation, shutdownEvents } from '../../../src/cli/explain';
import type { WorkloadReport } from '../../../src/cli/inject-results';
import { loadPod, mutateOk } from '../mutate/support';

/** The real core's timeline for Contour's Envoy pod (grace period 300 s). */
const TIMELINE = mutateOk(loadPod('contour-main.yaml')).result.timeline;

const at = { source: 'envoy.yaml', document: 1, item: null, kind: 'DaemonSet', name: 'projectcontour/envoy' } as const;

describe('formatExplanation', () => {
  test('a mutated workload: heading with actions, an aligned timeline table, its warnings', () => {
    const report: WorkloadReport = {
      ...at,
      outcome: { status: 'mutated', patch: [], actions: ['prestop', 'liveness-probe'], warnings: ['memory limit is tight'], timeline: TIMELINE },
    };
    expect(formatExplanation([report])).toBe(
      [
        'envoy.yaml: document 1: DaemonSet projectcontour/envoy: mutated (prestop, liveness-probe)',
        '  Envoy container   envoy                      runs the envoy binary',
        '  replaces          Contour v1.33.6 or later   image tag main of container shutdown-manager: the development branch, after v1.33.6',
        "  grace period      300s                       the pod's terminationGracePeriodSeconds",
        '  drain delay       0s                         Contour v1.33.6 or later default of `contour envoy shutdown --drain-delay` (the same in every release from v1.10.0)',
        '  minimum drain     0s                         Contour v1.33.6 or later default of `contour envoy shutdown --check-delay` (60s from v1.10.0, 0s from v1.22.0)',
        '  poll interval     5s                         Contour v1.33.6 or later default of `contour envoy shutdown --check-interval` (the same in every release from v1.10.0)',
        '  deadline          290s                       grace period - 10s (drain.deadlineMarginSeconds)',
        '  min connections   0                          Contour v1.33.6 or later default of `contour envoy shutdown --min-open-connections` (the same in every release from v1.10.0)',
        '  liveness budget   60s                        probe added by drainguard; restarts a stuck Envoy after this long; stopped while the pod terminates',
        '  startup budget    300s                       probe added by drainguard; time Envoy may take to become ready before the liveness probe counts',
        "  admin address     unix:/admin/admin.sock     Contour's admin socket: an emptyDir mounted at /admin in Envoy",
        "  not counted       :8002                      Envoy's readiness probe; Envoy's port metrics; Contour's stats and health listener (stats-health, 0.0.0.0:8002 by default)",
        "                    :9001                      Contour's read-only admin listener envoy-admin (127.0.0.1:9001), from the admin socket releases on",
        '  shutdown, to scale (5s per =):',
        '    preStop starts        0s  |                                                              the pod is deleted: the grace period and the drain start',
        '    health check fails    0s  |                                                              after the drain delay: load balancers stop sending new connections',
        '    minimum drain         0s  |                                                              the drain never ends sooner, even with no connections left',
        '    deadline            290s  ==========================================================|    the drain ends at the latest; Envoy gets SIGTERM',
        '    grace period end    300s  ============================================================|  terminationGracePeriodSeconds',
        '    SIGKILL             300s  ============================================================|  the kubelet kills whatever still runs',
        '  admin calls, by the Envoy release /server_info reports when the drain starts:',
        '    before 1.28, or unknown   POST /healthcheck/fail, POST /drain_listeners?graceful             no skip_exit (an unknown release is not risked with it): Envoy stops its listeners --drain-time-s after the drain starts',
        '    1.28 to 1.33              POST /healthcheck/fail, POST /drain_listeners?graceful&skip_exit   skip_exit: the listeners keep accepting until SIGTERM, so a client sent here late still gets an answer; no inboundonly yet',
        '    1.34 to 1.39              POST /healthcheck/fail, POST /drain_listeners?graceful&skip_exit   as 1.28, and --inbound-only drains the inbound listeners only; a plain drain_listeners would only stop the listeners, draining nothing',
        '    1.40 and later            POST /healthcheck/fail, POST /drain_listeners?graceful&skip_exit   the same call: 1.40 pushes the drain to every connection; skip_exit alone is accepted only while the non_graceful_drain_notifies_connections runtime guard is on, graceful&skip_exit with it on or off',
        '  warnings:',
        '    - memory limit is tight',
        '',
      ].join('\n'),
    );
  });

  test("a workload's own liveness probe is reported with its real budget; a missing one says so", () => {
    const own: WorkloadReport = {
      ...at,
      outcome: { status: 'unchanged', patch: [], warnings: [], timeline: { ...TIMELINE, livenessBudgetSeconds: 33, livenessSource: 'user', startupBudgetSeconds: null, startupSource: 'none' } },
    };
    const text = formatExplanation([own]);
    expect(text).toContain('unchanged (already injected by this drainguard version)');
    expect(text).toMatch(/liveness budget +33s +the workload's own probe; restarts a stuck Envoy after this long; stopped while the pod terminates\n/);
    expect(text).toMatch(/startup budget +none +no probe\n/);
    expect(text).toContain('  warnings: none\n');
    const none = formatExplanation([
      { ...at, outcome: { status: 'unchanged', patch: [], warnings: [], timeline: { ...TIMELINE, livenessBudgetSeconds: null, livenessSource: 'none', gracePeriodSource: 'kubernetes-default', gracePeriodSeconds: 30 } } },
    ]);
    expect(none).toMatch(/liveness budget +none +no probe\n/);
    expect(none).toMatch(/grace period +30s +not set: the Kubernetes default\n/);
  });

  test('each drain value names where it came from: a sidecar flag, an annotation, and what was changed to fit', () => {
    const pod = loadPod('contour-main.yaml');
    pod.spec.terminationGracePeriodSeconds = 40;
    pod.metadata = { ...pod.metadata, annotations: { 'drainguard.io/min-connections': '4' } };
    const sidecar = pod.spec.containers.find((c) => c.name === 'shutdown-manager');
    if (sidecar === undefined) throw new Error('no sidecar');
    sidecar.lifecycle = { preStop: { exec: { command: ['/bin/contour', 'envoy', 'shutdown', '--drain-delay=25s', '--check-delay=10s', '--check-interval=1500ms'] } } };
    const { timeline } = mutateOk(pod).result;
    const text = formatExplanation([{ ...at, outcome: { status: 'mutated', patch: [], actions: [], warnings: [], timeline } }]);
    const shutdown = 'of `contour envoy shutdown` (container shutdown-manager, preStop)';
    const row = (label: string, value: string, source: string) => `  ${label.padEnd(15)}   ${value.padEnd(24)}   ${source}\n`;
    expect(text).toContain(row('drain delay', '25s', `--drain-delay=25s ${shutdown}`));
    expect(text).toContain(row('minimum drain', '5s', `--check-delay=10s ${shutdown}; shortened to fit the 30s deadline`));
    expect(text).toContain(row('poll interval', '2s', `--check-interval=1500ms ${shutdown}; rounded up to 2s`));
    expect(text).toContain(row('min connections', '4', 'the drainguard.io/min-connections annotation'));
  });

  test('flags of the replaced sidecar whose loss changes nothing are listed, not warned about', () => {
    const pod = loadPod('contour-main.yaml');
    const sidecar = pod.spec.containers.find((c) => c.name === 'shutdown-manager');
    if (sidecar === undefined) throw new Error('no sidecar');
    sidecar.args = ['envoy', 'shutdown-manager', '--serve-port=8090'];
    const { timeline, warnings } = mutateOk(pod).result;
    expect(warnings).toEqual([]);
    const text = formatExplanation([{ ...at, outcome: { status: 'mutated', patch: [], actions: [], warnings, timeline } }]);
    expect(text).toContain(
      "  dropped, no effect:\n    - container shutdown-manager: --serve-port=8090 (the sidecar's HTTP server goes with the sidecar, and nothing calls it any more)\n  warnings: none\n",
    );
  });

  test('a guessed admin address says so and what to set', () => {
    const guessed: WorkloadReport = {
      ...at,
      outcome: {
        status: 'unchanged',
        patch: [],
        warnings: [],
        timeline: { ...TIMELINE, adminAddress: 'http://127.0.0.1:9901', adminAddressSource: 'default', adminAddressReason: 'no clue', adminAddressGuessed: true },
      },
    };
    expect(formatExplanation([guessed])).toMatch(/admin address +http:\/\/127\.0\.0\.1:9901 +GUESSED \(no clue\): set the drainguard\.io\/admin-address annotation\n/);
  });

  test('skipped workloads show the reason, what was looked for, and no table', () => {
    const looked = 'no container running Envoy: looked for an envoy binary';
    const text = formatExplanation([
      { ...at, kind: 'Deployment', name: 'web', outcome: { status: 'skipped', reason: 'not-envoy', message: looked, patch: [], warnings: [] } },
      {
        ...at,
        document: 2,
        item: 3,
        kind: 'Job',
        name: 'x',
        outcome: { status: 'skipped', reason: 'no-pod-template', message: 'the workload has no pod template', patch: [], warnings: [] },
      },
    ]);
    expect(text).toBe(
      `envoy.yaml: document 1: Deployment web: skipped (not-envoy): ${looked}\n  warnings: none\n` +
        '\nenvoy.yaml: document 2, item 3: Job x: skipped (no-pod-template): the workload has no pod template\n  warnings: none\n',
    );
  });

  test('no workloads at all', () => {
    expect(formatExplanation([])).toBe('No Pod or workload found in the input.\n');
  });
});

describe('the shutdown drawn to scale', () => {
  const bars = (text: string) =>
    Object.fromEntries(
      [...text.matchAll(/^ {4}(\S.*?)\s+(\d+(?:\.\d+)?s)  (=*)\|/gm)].map((match) => [match[1]!, { at: match[2]!, columns: match[3]!.length }]),
    );

  test('each bar is as long as its time, on one scale: 60 columns for preStop start to SIGKILL', () => {
    const timeline = { ...TIMELINE, gracePeriodSeconds: 120, deadlineSeconds: 60, drainDelaySeconds: 15, minDrainSeconds: 15 };
    const text = formatExplanation([{ ...at, outcome: { status: 'mutated', patch: [], actions: [], warnings: [], timeline } }]);
    expect(text).toContain('shutdown, to scale (2s per =):');
    expect(bars(text)).toEqual({
      'preStop starts': { at: '0s', columns: 0 },
      'health check fails': { at: '15s', columns: 8 },
      'minimum drain': { at: '30s', columns: 15 },
      deadline: { at: '60s', columns: 30 },
      'grace period end': { at: '120s', columns: 60 },
      SIGKILL: { at: '120s', columns: 60 },
    });
  });

  test('a deadline at the end of the grace period: the kubelet still gives Envoy 2s after SIGTERM', () => {
    const events = shutdownEvents({ ...TIMELINE, gracePeriodSeconds: 30, deadlineSeconds: 30 });
    expect(events.at(-1)).toEqual({ event: 'sigkill', seconds: 32 });
    expect(events.find((event) => event.event === 'grace-period-end')).toEqual({ event: 'grace-period-end', seconds: 30 });
  });

  test('no drawing when Envoy got no drain hook; --explain -o json carries the same events', () => {
    const noDrain = { ...TIMELINE, drainInstalled: false };
    const text = formatExplanation([{ ...at, outcome: { status: 'mutated', patch: [], actions: [], warnings: [], timeline: noDrain } }]);
    expect(text).not.toContain('to scale');
    expect(text).not.toContain('admin calls');
    const [json] = explanationJson([{ ...at, outcome: { status: 'mutated', patch: [], actions: ['prestop'], warnings: [], timeline: TIMELINE } }]) as {
      shutdown: unknown;
      adminCalls: unknown;
      actions: string[];
    }[];
    expect(json!.actions).toEqual(['prestop']);
    expect(json!.shutdown).toEqual(shutdownEvents(TIMELINE));
    expect(json!.adminCalls).toEqual(adminCalls(TIMELINE));
  });

  test('the admin calls follow the drain delay: releases with skip_exit start the drain with the delay, before the health check', () => {
    expect(adminCalls({ ...TIMELINE, drainDelaySeconds: 5 }).map((calls) => [calls.releases, calls.posts])).toEqual([
      ['before 1.28, or unknown', ['/healthcheck/fail', '/drain_listeners?graceful']],
      ['1.28 to 1.33', ['/drain_listeners?graceful&skip_exit', '/healthcheck/fail', '/drain_listeners?graceful&skip_exit']],
      ['1.34 to 1.39', ['/drain_listeners?graceful&skip_exit', '/healthcheck/fail', '/drain_listeners?graceful&skip_exit']],
      ['1.40 and later', ['/drain_listeners?graceful&skip_exit', '/healthcheck/fail', '/drain_listeners?graceful&skip_exit']],
    ]);
  });
});
