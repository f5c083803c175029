import type { MutationResult } from '../mutate/result';

/** What `inject` found and did, per workload: shared by the YAML, --diff and --explain views. */

/** A workload inject found but could not hand to the core: it has no pod template. */
export interface NoTemplateOutcome {
  status: 'skipped';
  reason: 'no-pod-template';
  message: string;
  patch: [];
  warnings: string[];
}

/** Denied and invalid workloads are errors of the whole run, never part of the output. */
export type WorkloadOutcome = Exclude<MutationResult, { status: 'denied' | 'invalid' }> | NoTemplateOutcome;

export interface WorkloadReport {
  source: string;
  /** 1-based document number in its source. */
  document: number;
  /** 1-based item number inside a `List`, or null. */
  item: number | null;
  kind: string;
  name: string;
  outcome: WorkloadOutcome;
}

export interface InjectedStream {
  source: string;
  /** Each document's text before and after, in order: the diff matches lines within a document. */
  documents: { before: string; after: string }[];
  output: string;
  workloads: WorkloadReport[];
  /** Documents with content but no Pod or workload in them. */
  passedThrough: number;
  /** One message per workload that is denied (an invalid override annotation) or not a valid pod template; any fails the run. */
  rejections: string[];
}

/** `file: document 2, item 3: DaemonSet projectcontour/envoy`, the prefix of every message about a workload. */
export function describeLocation(location: Omit<WorkloadReport, 'outcome'>): string {
  const item = location.item === null ? '' : `, item ${location.item}`;
  return `${location.source}: document ${location.document}${item}: ${location.kind} ${location.name}`;
}

/** The one-line stderr summary, e.g. `1 workload mutated, 0 unchanged, 1 skipped (1 not-envoy), 2 documents passed through`. */
export function summarize(streams: readonly InjectedStream[]): string {
  const workloads = streams.flatMap((stream) => stream.workloads);
  const count = (status: WorkloadOutcome['status']) => workloads.filter((workload) => workload.outcome.status === status).length;
  const skipReasons = new Map<string, number>();
  for (const { outcome } of workloads) {
    if (outcome.status === 'skipped') skipReasons.set(outcome.reason, (skipReasons.get(outcome.reason) ?? 0) + 1);
  }
  const skipped = count('skipped');
  const reasons = skipped === 0 ? '' : ` (${[...skipReasons].map(([reason, n]) => `${n} ${reason}`).join(', ')})`;
  const passedThrough = streams.reduce((sum, stream) => sum + stream.passedThrough, 0);
  return (
    `${plural(count('mutated'), 'workload')} mutated, ${count('unchanged')} unchanged, ${skipped} skipped${reasons}, ` +
    `${plural(passedThrough, 'document')} passed through`
  );
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

