import type { ShutdownTimeline } from '../mutate/result';
import { describeLocation, type WorkloadOutcome, type WorkloadReport } from './report';

/**
 * `drainguard inject --explain`: for each workload, the shutdown plan drainguard computed for its pods
 * as an aligned table, so an operator can check the numbers (does the liveness budget outlast the grace
 * period? is the deadline inside it?) before applying anything.
 */

const SKIP_REASONS: Readonly<Record<string, string>> = {
  'not-envoy': 'no Envoy container',
  'opted-out': 'annotated drainguard.io/inject: disabled',
  'no-containers': 'the pod has no containers',
  'no-pod-template': 'the workload has no pod template',
};

const GRACE_PERIOD_SOURCES: Readonly<Record<ShutdownTimeline['gracePeriodSource'], string>> = {
  pod: "the pod's terminationGracePeriodSeconds",
  'kubernetes-default': 'not set: the Kubernetes default',
  floor: 'raised to the configured grace period floor',
};

const LIVENESS_SOURCES: Readonly<Record<ShutdownTimeline['livenessSource'], string>> = {
  drainguard: 'probe added by drainguard',
  user: "the workload's own probe",
  none: 'no liveness probe',
};

export function formatExplanation(workloads: readonly WorkloadReport[]): string {
  if (workloads.length === 0) return 'No Pod or workload found in the input.\n';
  return workloads.map(explainWorkload).join('\n');
}

function explainWorkload(workload: WorkloadReport): string {
  const { outcome } = workload;
  const heading = `${describeLocation(workload)}: ${describeStatus(outcome)}`;
  if (outcome.status === 'skipped') return `${heading}\n${formatWarnings(outcome.warnings)}`;
  return `${heading}\n${formatTable(timelineRows(outcome.timeline))}\n${formatWarnings(outcome.warnings)}`;
}

function describeStatus(outcome: WorkloadOutcome): string {
  switch (outcome.status) {
    case 'mutated':
      return `mutated (${outcome.actions.join(', ')})`;
    case 'unchanged':
      return 'unchanged (already injected by this drainguard version)';
    case 'skipped':
      return `skipped: ${SKIP_REASONS[outcome.reason] ?? outcome.reason} (${outcome.reason})`;
  }
}

function timelineRows(timeline: ShutdownTimeline): [string, string, string][] {
  const margin = timeline.gracePeriodSeconds - timeline.deadlineSeconds;
  return [
    ['grace period', seconds(timeline.gracePeriodSeconds), GRACE_PERIOD_SOURCES[timeline.gracePeriodSource]],
    ['drain delay', seconds(timeline.drainDelaySeconds), 'wait before failing health checks'],
    ['minimum drain', seconds(timeline.minDrainSeconds), 'never finish the drain earlier'],
    ['deadline', seconds(timeline.deadlineSeconds), `preStop --deadline: grace period - ${seconds(margin)}`],
    ['liveness budget', livenessBudget(timeline), livenessNote(timeline)],
    ['admin address', timeline.adminAddress, ''],
    ['min connections', String(timeline.minConnections), 'drain done at or below this many connections'],
  ];
}

function livenessBudget(timeline: ShutdownTimeline): string {
  return timeline.livenessBudgetSeconds === null ? 'none' : seconds(timeline.livenessBudgetSeconds);
}

function livenessNote(timeline: ShutdownTimeline): string {
  const source = LIVENESS_SOURCES[timeline.livenessSource];
  if (timeline.livenessBudgetSeconds === null) return source;
  const lead = timeline.livenessBudgetSeconds - timeline.gracePeriodSeconds;
  return lead > 0
    ? `${source}; outlasts the grace period by ${seconds(lead)}`
    : `${source}; ${seconds(-lead)} SHORTER than the grace period: it can restart Envoy mid-drain`;
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
