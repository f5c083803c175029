import { DRAIN_CALL_ERAS, drainPosts } from '../drain-contract';
import type { DrainSetting, ShutdownTimeline } from '../mutate/result';
import { describeLocation, type WorkloadOutcome, type WorkloadReport } from './inject-results';

/**
 * `drainguard inject --explain`: for each workload, the shutdown plan drainguard computed for its pods
 * as an aligned table, so an operator can check the numbers (is the deadline inside the grace period?
 * where did each drain value come from?) before applying anything.
 */

const GRACE_PERIOD_SOURCES: Readonly<Record<ShutdownTimeline['gracePeriodSource'], string>> = {
  pod: "the pod's terminationGracePeriodSeconds",
  'kubernetes-default': 'not set: the Kubernetes default',
  floor: 'raised to the configured grace period floor',
};

const PROBE_SOURCES: Readonly<Record<ShutdownTimeline['livenessSource'], string>> = {
  drainguard: 'probe added by drainguard',
  user: "the workload's own probe",
  none: 'no probe',
};

/** What happens when a pod is deleted, in order, with the seconds after its preStop hook started. */
export interface ShutdownEvent {
  event: 'prestop-start' | 'health-check-failed' | 'minimum-drain' | 'deadline' | 'grace-period-end' | 'sigkill';
  seconds: number;
}

/**
 * The kubelet starts the grace period and Envoy's preStop together. The drain program waits the drain
 * delay, fails Envoy's health check, drains for at least the minimum and at most until the deadline,
 * then exits; Envoy gets SIGTERM when the hook returns. The kubelet sends SIGKILL at the end of the
 * grace period, but never sooner than 2 s after SIGTERM (its minimum grace after a preStop,
 * docs/design.md "Kubernetes facts"), so a deadline at the very end of the grace period moves it.
 */
export function shutdownEvents(timeline: ShutdownTimeline): ShutdownEvent[] {
  const healthCheckFailed = timeline.drainDelaySeconds;
  return [
    { event: 'prestop-start', seconds: 0 },
    { event: 'health-check-failed', seconds: healthCheckFailed },
    { event: 'minimum-drain', seconds: healthCheckFailed + timeline.minDrainSeconds },
    { event: 'deadline', seconds: timeline.deadlineSeconds },
    { event: 'grace-period-end', seconds: timeline.gracePeriodSeconds },
    { event: 'sigkill', seconds: Math.max(timeline.gracePeriodSeconds, timeline.deadlineSeconds + KUBELET_MINIMUM_GRACE_SECONDS) },
  ];
}

const KUBELET_MINIMUM_GRACE_SECONDS = 2;

const EVENT_LABELS: Readonly<Record<ShutdownEvent['event'], [label: string, meaning: string]>> = {
  'prestop-start': ['preStop starts', 'the pod is deleted: the grace period and the drain start'],
  'health-check-failed': ['health check fails', 'after the drain delay: load balancers stop sending new connections'],
  'minimum-drain': ['minimum drain', 'the drain never ends sooner, even with no connections left'],
  deadline: ['deadline', 'the drain ends at the latest; Envoy gets SIGTERM'],
  'grace-period-end': ['grace period end', 'terminationGracePeriodSeconds'],
  sigkill: ['SIGKILL', 'the kubelet kills whatever still runs'],
};

/** Columns of the longest bar: the whole shutdown, preStop start to SIGKILL. */
const TIMELINE_COLUMNS = 60;

/** The events drawn to scale, one bar per event from the start of preStop to it. */
function formatShutdownDrawing(timeline: ShutdownTimeline): string {
  const events = shutdownEvents(timeline);
  const end = Math.max(...events.map((event) => event.seconds));
  const perColumn = end / TIMELINE_COLUMNS;
  const columns = (seconds: number) => (end === 0 ? 0 : Math.round((seconds / end) * TIMELINE_COLUMNS));
  const labelWidth = Math.max(...events.map((event) => EVENT_LABELS[event.event][0].length));
  const secondsWidth = Math.max(...events.map((event) => seconds(event.seconds).length));
  const rows = events.map(({ event, seconds: at }) => {
    const [label, meaning] = EVENT_LABELS[event];
    const bar = `${'='.repeat(columns(at))}|`.padEnd(TIMELINE_COLUMNS + 1);
    return `    ${label.padEnd(labelWidth)}  ${seconds(at).padStart(secondsWidth)}  ${bar}  ${meaning}`;
  });
  const scale = `${formatSeconds(perColumn)} per =`;
  return `  shutdown, to scale (${scale}):\n${rows.join('\n')}\n`;
}

/** `5s`, `4.8s`, `0.05s`: at most two decimals, no trailing zeros. */
function formatSeconds(value: number): string {
  return `${Number(value.toFixed(2))}s`;
}

export function formatExplanation(workloads: readonly WorkloadReport[]): string {
  if (workloads.length === 0) return 'No Pod or workload found in the input.\n';
  return workloads.map(explainWorkload).join('\n');
}

function explainWorkload(workload: WorkloadReport): string {
  const { outcome } = workload;
  const heading = `${describeLocation(workload)}: ${describeStatus(outcome)}`;
  if (outcome.status === 'skipped') return `${heading}\n${formatWarnings(outcome.warnings)}`;
  const drawing = outcome.timeline.drainInstalled === false ? '' : `${formatShutdownDrawing(outcome.timeline)}${formatAdminCalls(outcome.timeline)}`;
  return `${heading}\n${formatTable(timelineRows(outcome.timeline))}\n${drawing}${formatDroppedFlags(outcome.timeline)}${formatWarnings(outcome.warnings)}`;
}

/** `--explain -o json`: the same facts for scripts, the shutdown events included. */
export function explanationJson(workloads: readonly WorkloadReport[]): unknown[] {
  return workloads.map((workload) => {
    const { outcome, ...location } = workload;
    const common = { ...location, status: outcome.status, warnings: outcome.warnings };
    if (outcome.status === 'skipped') return { ...common, reason: outcome.reason };
    return {
      ...common,
      ...(outcome.status === 'mutated' ? { actions: outcome.actions } : {}),
      timeline: outcome.timeline,
      ...(outcome.timeline.drainInstalled === false ? {} : { shutdown: shutdownEvents(outcome.timeline), adminCalls: adminCalls(outcome.timeline) }),
    };
  });
}

function describeStatus(outcome: WorkloadOutcome): string {
  switch (outcome.status) {
    case 'mutated':
      return `mutated (${outcome.actions.join(', ')})`;
    case 'unchanged':
      return 'unchanged (already injected by this drainguard version)';
    case 'skipped':
      // The core's message says what it looked for or found, and why it left the pod alone.
      return `skipped (${outcome.reason}): ${outcome.message}`;
  }
}

function timelineRows(timeline: ShutdownTimeline): [string, string, string][] {
  const margin = timeline.gracePeriodSeconds - timeline.deadlineSeconds;
  // Where each drain value came from (annotation, an earlier hook, a sidecar flag, the configuration),
  // or what it means when the timeline does not say.
  const source = (setting: DrainSetting, meaning: string) => timeline.drainSources?.[setting].detail ?? meaning;
  const rows: [string, string, string][] = [
    ['grace period', seconds(timeline.gracePeriodSeconds), GRACE_PERIOD_SOURCES[timeline.gracePeriodSource]],
    ['drain delay', seconds(timeline.drainDelaySeconds), source('drainDelay', 'wait before failing health checks')],
    ['minimum drain', seconds(timeline.minDrainSeconds), source('minDrain', 'never finish the drain earlier')],
  ];
  if (timeline.pollIntervalSeconds !== undefined) {
    rows.push(['poll interval', seconds(timeline.pollIntervalSeconds), source('pollInterval', 'how often connections are counted')]);
  }
  rows.push(
    ['deadline', seconds(timeline.deadlineSeconds), source('deadline', `preStop --deadline: grace period - ${seconds(margin)}`)],
    ['min connections', String(timeline.minConnections), source('minConnections', 'drain done at or below this many connections')],
    ['liveness budget', budget(timeline.livenessBudgetSeconds), livenessNote(timeline)],
    ['startup budget', budget(timeline.startupBudgetSeconds ?? null), startupNote(timeline)],
    ['admin address', timeline.adminAddress, adminNote(timeline)],
  );
  // Listeners whose connections are not traffic: the drain does not wait for them.
  for (const [index, listener] of (timeline.excludedListeners ?? []).entries()) {
    rows.push([index === 0 ? 'not counted' : '', `:${listener.port}`, listener.reasons.join('; ')]);
  }
  // Copy mode, the default, says how in the actions of the heading (installer).
  const delivery = timeline.delivery;
  if (delivery?.mode === 'image-volume') {
    rows.unshift(['drain program', delivery.program, `image volume ${delivery.volume ?? ''} of ${delivery.image}, mounted read-only into Envoy (installer.delivery: image-volume)`]);
  }
  if (timeline.envoyContainer !== undefined) rows.unshift(['Envoy container', timeline.envoyContainer, timeline.envoyEvidence ?? '']);
  for (const component of timeline.replaces ?? []) rows.splice(1, 0, ['replaces', `${component.name} ${component.release}`, component.how]);
  return rows;
}

/** An Envoy release range and the POSTs the drain makes there, with why (src/drain-contract/envoy-releases.ts). */
export interface AdminCalls {
  releases: string;
  posts: string[];
  why: string;
}

/**
 * The drain's admin calls by Envoy release: the program reads the release from `/server_info` when it
 * starts, so every range the pod's Envoy may be in is listed, the drain delay's order included.
 */
export function adminCalls(timeline: ShutdownTimeline): AdminCalls[] {
  const drainDelay = timeline.drainDelaySeconds > 0;
  return DRAIN_CALL_ERAS.map((era) => {
    const release = era.since === undefined ? undefined : { major: era.since[0], minor: era.since[1], patch: 0 };
    return { releases: era.releases, posts: drainPosts(release, { inboundOnly: false, drainDelay }), why: era.why };
  });
}

function formatAdminCalls(timeline: ShutdownTimeline): string {
  const rows = adminCalls(timeline).map((calls) => [calls.releases, calls.posts.map((post) => `POST ${post}`).join(', '), calls.why]);
  return `  admin calls, by the Envoy release /server_info reports when the drain starts:\n${formatTable(rows).replace(/^ {2}/gm, '    ')}\n`;
}

/** Flags of the replaced sidecar that go with it and whose loss changes nothing: listed, never warned about. */
function formatDroppedFlags(timeline: ShutdownTimeline): string {
  const dropped = timeline.droppedFlags ?? [];
  if (dropped.length === 0) return '';
  return `  dropped, no effect:\n${dropped.map((flag) => `    - container ${flag.container}: ${flag.flag} (${flag.reason})\n`).join('')}`;
}

function budget(value: number | null): string {
  return value === null ? 'none' : seconds(value);
}

// The kubelet stops liveness and startup probes before it runs preStop (docs/design.md, "The liveness
// probe"): the budget says how soon a stuck running Envoy is restarted, never whether a drain is cut short.
function livenessNote(timeline: ShutdownTimeline): string {
  const source = PROBE_SOURCES[timeline.livenessSource];
  if (timeline.livenessBudgetSeconds === null) return source;
  return `${source}; restarts a stuck Envoy after this long; stopped while the pod terminates`;
}

function startupNote(timeline: ShutdownTimeline): string {
  const source = PROBE_SOURCES[timeline.startupSource ?? 'none'];
  if (timeline.startupBudgetSeconds === undefined || timeline.startupBudgetSeconds === null) return source;
  return `${source}; time Envoy may take to become ready before the liveness probe counts`;
}

function adminNote(timeline: ShutdownTimeline): string {
  const reason = timeline.adminAddressReason ?? '';
  return timeline.adminAddressGuessed === true ? `GUESSED (${reason}): set the drainguard.io/admin-address annotation` : reason;
}

function seconds(value: number): string {
  return `${value}s`;
}

function formatTable(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) => `  ${row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('   ')}`.trimEnd())
    .join('\n');
}

function formatWarnings(warnings: readonly string[]): string {
  if (warnings.length === 0) return '  warnings: none\n';
  return `  warnings:\n${warnings.map((warning) => `    - ${warning}\n`).join('')}`;
}
