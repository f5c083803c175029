/**
 * The reporter's Events, as `kubectl describe` shows them and `drainguard check` reads them back: one
 * on the pod (its name is the termination's key: the exactly-once lock, see ./reporter.ts) and one on
 * the pod's workload. Both carry a label to find them by and an annotation with the drain's outcome
 * as data, so `check` never parses a message. Pure.
 */
import type { OpenListener, OpenUdpProxy } from '../drain-record';
import type { EventText } from './describe';
import { EXIT_REASONS, type ExitReason, type Termination } from './termination';

/** On every Event the reporter writes: `pod` on the pod's, `workload` on the workload's. */
export const DRAIN_EVENT_LABEL = 'drainguard.io/drain-event';
/** The outcome as data: a `DrainSummary` in JSON. */
export const DRAIN_SUMMARY_ANNOTATION = 'drainguard.io/drain';
/** Which reporter process created the Event: `<instance>/<process id>`. */
export const REPORTED_BY_ANNOTATION = 'drainguard.io/reported-by';
/** `source.component` and `reportingComponent`: kubectl's "From" column. */
export const REPORTING_COMPONENT = 'drainguard-reporter';

const SUMMARY_FORMAT = 'drainguard.io/drain-summary/v1';

/** How an Envoy container ended, as `check` counts it. */
export type DrainOutcome = 'drained' | 'deadline' | 'admin-unreachable' | 'signal' | 'interrupted' | 'not-reported' | 'unreadable' | 'exited';
export const DRAIN_OUTCOMES: readonly DrainOutcome[] = ['drained', 'deadline', 'admin-unreachable', 'signal', 'interrupted', 'not-reported', 'unreadable', 'exited'];

export interface DrainSummary {
  /** `daemonset/envoy`, `none` for a bare pod (the metrics' `workload` label). */
  workload: string;
  pod: string;
  container: string;
  outcome: DrainOutcome;
  /** When the container ended (the kubelet's finishedAt), ISO 8601; null when the kubelet gave none. */
  finishedAt: string | null;
  durationMs: number | null;
  deadlineMs: number | null;
  connectionsAtStart: number | null;
  connectionsAtEnd: number | null;
  /** The listeners still holding connections at the end, most first (at most SUMMARY_LISTENERS). */
  openListeners: OpenListener[];
  /**
   * UDP sessions left at the end, and the UDP proxies holding them (at most SUMMARY_LISTENERS); absent
   * when the drain program did not count them (and in summaries written before it did).
   */
  udpSessionsAtEnd?: number | null;
  openUdpProxies?: OpenUdpProxy[];
  /** For `exited`: the runtime's reason, one of EXIT_REASONS. */
  exitReason?: ExitReason;
}

const SUMMARY_LISTENERS = 5;

export function summaryOf(termination: Termination): DrainSummary {
  const { outcome, ended } = termination;
  const base = {
    workload: termination.workload.label,
    pod: termination.podName,
    container: termination.container,
    finishedAt: ended.finishedAtMs === null ? null : new Date(ended.finishedAtMs).toISOString(),
    durationMs: null,
    deadlineMs: null,
    connectionsAtStart: null,
    connectionsAtEnd: null,
    openListeners: [],
  };
  switch (outcome.kind) {
    case 'drain': {
      const record = outcome.record;
      return {
        ...base,
        outcome: outcome.reason,
        durationMs: record.durationMs,
        deadlineMs: record.deadlineMs,
        connectionsAtStart: record.connectionsAtStart,
        connectionsAtEnd: record.connectionsAtEnd,
        openListeners: record.openListeners.slice(0, SUMMARY_LISTENERS),
        ...(record.udpSessionsAtEnd === undefined
          ? {}
          : { udpSessionsAtEnd: record.udpSessionsAtEnd, openUdpProxies: (record.openUdpProxies ?? []).slice(0, SUMMARY_LISTENERS) }),
      };
    }
    case 'interrupted': {
      const started = Date.parse(outcome.record.startedAt);
      const ran = ended.finishedAtMs !== null && ended.finishedAtMs >= started ? ended.finishedAtMs - started : null;
      return { ...base, outcome: 'interrupted', durationMs: ran, deadlineMs: outcome.record.deadlineMs };
    }
    case 'exited':
      return { ...base, outcome: 'exited', exitReason: outcome.reason };
    case 'not-reported':
    case 'unreadable':
      return { ...base, outcome: outcome.kind };
  }
}

export function encodeSummary(summary: DrainSummary): string {
  return JSON.stringify({ format: SUMMARY_FORMAT, ...summary });
}

const MAX_SUMMARY_BYTES = 8192;
const MAX_COUNT = 1_000_000_000;
const MAX_MS = 10_000_000_000;
const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const WORKLOAD = /^(none|[a-z0-9]{1,63}\/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)$/;
const LISTENER = /^[\x21\x23-\x5b\x5d-\x7e]{1,200}$/;

const isCount = (value: unknown, max: number): value is number => typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max;
const countOrNull = (value: unknown, max: number): value is number | null => value === null || isCount(value, max);

/**
 * Reads a summary annotation back, strictly: anything else (another writer's Event, a newer format)
 * is `undefined`, never a guess.
 */
export function readSummary(text: unknown): DrainSummary | undefined {
  if (typeof text !== 'string' || text.length > MAX_SUMMARY_BYTES) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const value = parsed as Record<string, unknown>;
  if (value.format !== SUMMARY_FORMAT) return undefined;
  const { workload, pod, container, outcome, finishedAt, durationMs, deadlineMs, connectionsAtStart, connectionsAtEnd, openListeners, exitReason, udpSessionsAtEnd, openUdpProxies } = value;
  if (typeof workload !== 'string' || !WORKLOAD.test(workload)) return undefined;
  if (typeof pod !== 'string' || !NAME.test(pod) || typeof container !== 'string' || !NAME.test(container)) return undefined;
  if (typeof outcome !== 'string' || !(DRAIN_OUTCOMES as readonly string[]).includes(outcome)) return undefined;
  if (finishedAt !== null && (typeof finishedAt !== 'string' || finishedAt.length > 40 || Number.isNaN(Date.parse(finishedAt)))) return undefined;
  if (!countOrNull(durationMs, MAX_MS) || !countOrNull(deadlineMs, MAX_MS)) return undefined;
  if (!countOrNull(connectionsAtStart, MAX_COUNT) || !countOrNull(connectionsAtEnd, MAX_COUNT)) return undefined;
  if (!Array.isArray(openListeners) || openListeners.length > SUMMARY_LISTENERS) return undefined;
  const listeners: OpenListener[] = [];
  for (const entry of openListeners as unknown[]) {
    const listener = entry as { name?: unknown; connections?: unknown } | null;
    if (typeof listener?.name !== 'string' || !LISTENER.test(listener.name) || !isCount(listener.connections, MAX_COUNT)) return undefined;
    listeners.push({ name: listener.name, connections: listener.connections });
  }
  if (exitReason !== undefined && (outcome !== 'exited' || !(EXIT_REASONS as readonly string[]).includes(exitReason as string))) return undefined;
  // The UDP fields come together or not at all (a summary of a drain that did not count UDP sessions).
  if ((udpSessionsAtEnd === undefined) !== (openUdpProxies === undefined)) return undefined;
  let udp: Pick<DrainSummary, 'udpSessionsAtEnd' | 'openUdpProxies'> = {};
  if (udpSessionsAtEnd !== undefined) {
    if (!countOrNull(udpSessionsAtEnd, MAX_COUNT) || !Array.isArray(openUdpProxies) || openUdpProxies.length > SUMMARY_LISTENERS) return undefined;
    const proxies: OpenUdpProxy[] = [];
    for (const entry of openUdpProxies as unknown[]) {
      const proxy = entry as { name?: unknown; sessions?: unknown } | null;
      if (typeof proxy?.name !== 'string' || !LISTENER.test(proxy.name) || !isCount(proxy.sessions, MAX_COUNT)) return undefined;
      proxies.push({ name: proxy.name, sessions: proxy.sessions });
    }
    udp = { udpSessionsAtEnd, openUdpProxies: proxies };
  }
  return {
    workload,
    pod,
    container,
    outcome: outcome as DrainOutcome,
    finishedAt: finishedAt as string | null,
    durationMs,
    deadlineMs,
    connectionsAtStart,
    connectionsAtEnd,
    openListeners: listeners,
    ...udp,
    ...(exitReason !== undefined ? { exitReason: exitReason as ExitReason } : {}),
  };
}

/** The longest object name Kubernetes accepts (a DNS subdomain). */
const MAX_NAME = 253;

/**
 * `<object name>.<key>`: the same in every replica for the same termination, so the API server's
 * 409 AlreadyExists tells a replica that another one (or an earlier run) already reported it.
 */
export function eventName(objectName: string, key: string): string {
  const room = MAX_NAME - key.length - 1;
  const prefix = objectName.length <= room ? objectName : objectName.slice(0, room).replace(/[-.]+$/, '');
  return `${prefix}.${key}`;
}

/** What an Event is about: `involvedObject`. */
export interface InvolvedObject {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
  uid: string;
  fieldPath?: string;
}

/** A core/v1 Event (legacy form: firstTimestamp/lastTimestamp/count/source, as `kubectl describe` lists them). */
export interface EventBody {
  apiVersion: 'v1';
  kind: 'Event';
  metadata: { name: string; namespace: string; labels: Record<string, string>; annotations: Record<string, string> };
  involvedObject: InvolvedObject;
  type: EventText['type'];
  reason: string;
  message: string;
  source: { component: string };
  reportingComponent: string;
  reportingInstance: string;
  firstTimestamp: string;
  lastTimestamp: string;
  count: 1;
}

export interface Reporter {
  /** The reporter's pod name (reportingInstance). */
  instance: string;
  /** `<instance>/<process id>`: tells this process's Events from every other's. */
  id: string;
}

function eventFor(
  termination: Termination,
  text: EventText,
  involved: InvolvedObject,
  scope: 'pod' | 'workload',
  reporter: Reporter,
  now: Date,
): EventBody {
  // When the container ended, so `kubectl get events` sorts and ages it by the drain, not by the report.
  const at = new Date(termination.ended.finishedAtMs ?? now.getTime()).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: {
      name: eventName(involved.name, termination.key),
      namespace: termination.namespace,
      labels: { [DRAIN_EVENT_LABEL]: scope },
      annotations: { [DRAIN_SUMMARY_ANNOTATION]: encodeSummary(summaryOf(termination)), [REPORTED_BY_ANNOTATION]: reporter.id },
    },
    involvedObject: involved,
    type: text.type,
    reason: text.reason,
    message: scope === 'pod' ? text.message : `pod ${termination.podName}: ${text.message}`,
    source: { component: REPORTING_COMPONENT },
    reportingComponent: REPORTING_COMPONENT,
    reportingInstance: reporter.instance,
    firstTimestamp: at,
    lastTimestamp: at,
    count: 1,
  };
}

export function podEvent(termination: Termination, text: EventText, reporter: Reporter, now: Date): EventBody {
  const involved: InvolvedObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    name: termination.podName,
    namespace: termination.namespace,
    uid: termination.podUid,
    fieldPath: `spec.containers{${termination.container}}`,
  };
  return eventFor(termination, text, involved, 'pod', reporter, now);
}

export function workloadEvent(termination: Termination, text: EventText, workload: Omit<InvolvedObject, 'namespace'>, reporter: Reporter, now: Date): EventBody {
  return eventFor(termination, text, { ...workload, namespace: termination.namespace }, 'workload', reporter, now);
}
