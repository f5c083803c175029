/**
 * Every Envoy container termination a pod shows, and how it ended. Pure: the same pod view gives the
 * same terminations, with the same keys, in every replica and after every restart, which is what
 * makes the reporter's Events exactly-once (./reporter.ts).
 *
 * How a termination is judged:
 *   - a drain record in the termination message: a drain, with the record's reason (`drained`,
 *     `deadline`, `admin-unreachable`, `signal`), or `interrupted` when only the `started` record is
 *     there (the drain was killed before it finished);
 *   - something that is not a record: `unreadable` (never a guess at what it meant);
 *   - no record, the container OOM-killed: Envoy exited by itself;
 *   - no record while the pod was ending (deleted, evicted, its node shut down): the drain did not
 *     report (the hook failed, the program is missing, it was killed before it wrote);
 *   - no record, the pod not ending (the container restarted on its own): Envoy exited by itself.
 */
import { createHash } from 'node:crypto';
import { DRAIN_RECORD_FORMAT, readDrainRecord, type DrainReason, type DrainRecordReading, type FinishedRecord, type StartedRecord } from '../drain-record';
import { workloadOf, type ControllerRef, type EndedContainer, type EnvoyContainerView, type PodView, type Workload } from './pod-view';

/** The fixed values of `drainguard_envoy_exits_total{reason}`. */
export type ExitReason = 'OOMKilled' | 'Error' | 'Completed' | 'other';
export const EXIT_REASONS: readonly ExitReason[] = ['OOMKilled', 'Error', 'Completed', 'other'];

export type Outcome =
  | { kind: 'drain'; reason: DrainReason; record: FinishedRecord }
  | { kind: 'interrupted'; record: StartedRecord }
  | { kind: 'not-reported' }
  | { kind: 'unreadable'; problem: string }
  | { kind: 'exited'; reason: ExitReason };

export interface Termination {
  /** 16 hex digits naming this ended container, the same wherever it is computed. */
  key: string;
  namespace: string;
  podName: string;
  podUid: string;
  container: string;
  workload: Workload;
  controller?: ControllerRef;
  ended: EndedContainer;
  /** Seen in `lastState`: the container was restarted after it ended. */
  restarted: boolean;
  /** The pod itself was ending (deleted, evicted, node shut down) when the container ended. */
  podEnding: boolean;
  outcome: Outcome;
}

/** The phases of a pod that has ended for good. */
const TERMINAL_PHASES = new Set(['Succeeded', 'Failed']);

/**
 * The identity of one ended container: the pod's uid, the container's name and the runtime's
 * container ID, which no restart reuses. A container that never got an ID is named by when it ended.
 */
export function terminationKey(podUid: string, container: string, ended: EndedContainer): string {
  const instance = ended.containerID !== '' ? ended.containerID : `ended@${ended.finishedAtMs ?? 'unknown'}/${ended.exitCode}`;
  return createHash('sha256').update(`${podUid}\u0000${container}\u0000${instance}`).digest('hex').slice(0, 16);
}

/** How every drain record begins (the encoder writes the format key first). */
const RECORD_START = `{"format":${JSON.stringify(DRAIN_RECORD_FORMAT)}`;

/**
 * The record part of a termination message. The kubelet puts the runtime's own message first when
 * there is one (`<runtime message>: <file content>`, kuberuntime `convertToKubeContainerStatus`), so
 * the record is the text from the last record start that follows such a `: `; what follows it is
 * still read strictly, whole.
 */
function recordText(message: string): string {
  if (message.startsWith('{')) return message;
  const at = message.lastIndexOf(RECORD_START);
  return at >= 2 && message.slice(at - 2, at) === ': ' ? message.slice(at) : message;
}

function readMessage(container: EnvoyContainerView, ended: EndedContainer): DrainRecordReading {
  // The kubelet's own words for a container it never saw end (the pod was deleted first): no record.
  if (ended.reason === 'ContainerStatusUnknown') return { kind: 'none' };
  const text = recordText(ended.message);
  const reading = readDrainRecord(text);
  // With FallbackToLogsOnError, an empty file and a failed exit give the end of Envoy's log instead:
  // that is the absence of a record, not an unreadable one. A text that claims to be a record stays unreadable.
  const fromLogs = container.terminationMessagePolicy === 'FallbackToLogsOnError' && ended.exitCode !== 0;
  if (reading.kind === 'unreadable' && fromLogs && !text.startsWith(RECORD_START)) return { kind: 'none' };
  return reading;
}

function exitReason(runtimeReason: string): ExitReason {
  return (EXIT_REASONS as readonly string[]).includes(runtimeReason) ? (runtimeReason as ExitReason) : 'other';
}

export function judge(container: EnvoyContainerView, ended: EndedContainer, podEnding: boolean): Outcome {
  const reading = readMessage(container, ended);
  switch (reading.kind) {
    case 'record':
      return reading.record.state === 'finished'
        ? { kind: 'drain', reason: reading.record.reason, record: reading.record }
        : { kind: 'interrupted', record: reading.record };
    case 'unreadable':
      return { kind: 'unreadable', problem: reading.problem };
    case 'none':
      if (ended.reason === 'OOMKilled' || !podEnding) return { kind: 'exited', reason: exitReason(ended.reason) };
      return { kind: 'not-reported' };
  }
}

/** The pod's Envoy terminations: each container's `state.terminated` and `lastState.terminated`. */
export function terminationsOf(pod: PodView): Termination[] {
  const workload = workloadOf(pod);
  const ending = pod.deleting || TERMINAL_PHASES.has(pod.phase);
  const terminations: Termination[] = [];
  for (const container of pod.envoy) {
    const seen: [EndedContainer | undefined, boolean][] = [
      [container.previous, true],
      [container.ended, false],
    ];
    for (const [ended, restarted] of seen) {
      if (!ended) continue;
      // A container in lastState was restarted: whatever ended it, the pod was not ending then.
      const podEnding = !restarted && ending;
      terminations.push({
        key: terminationKey(pod.metadata.uid, container.name, ended),
        namespace: pod.metadata.namespace,
        podName: pod.metadata.name,
        podUid: pod.metadata.uid,
        container: container.name,
        workload,
        ...(pod.controller ? { controller: pod.controller } : {}),
        ended,
        restarted,
        podEnding,
        outcome: judge(container, ended, podEnding),
      });
    }
  }
  return terminations;
}
