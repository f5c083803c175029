/**
 * The words of the reporter's Events: for each way an Envoy container can end, the Event's type and
 * reason and a one-line message that says what happened and what to do. Pure. Numbers and listener
 * names come from a record the strict reader accepted (bounded, printable); nothing else of the pod
 * is quoted.
 */
import type { FinishedRecord, OpenListener, OpenUdpProxy } from '../drain-record';
import type { Termination } from './termination';

export interface EventText {
  type: 'Normal' | 'Warning';
  /** UpperCamelCase, as Kubernetes reasons are. */
  reason: EventReason;
  message: string;
}

export type EventReason =
  | 'Drained'
  | 'DrainDeadline'
  | 'DrainAdminUnreachable'
  | 'DrainStopped'
  | 'DrainInterrupted'
  | 'DrainNotReported'
  | 'DrainRecordUnreadable'
  | 'EnvoyExited';

/** Listeners (and UDP proxies) named in a message; the rest are counted. */
const LISTENERS_NAMED = 3;

/** `14 s`, `1.5 s`, `290 s`: whole seconds from 10 s on, tenths below. */
export function formatSeconds(ms: number): string {
  const seconds = ms / 1000;
  if (seconds >= 10 || Number.isInteger(seconds)) return `${Math.round(seconds)} s`;
  return `${(Math.round(seconds * 10) / 10).toFixed(1)} s`;
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;

/** `on listener ingress_https`, `on listeners ingress_https (12), ingress_http (5), and 2 more`. */
export function describeListeners(listeners: readonly OpenListener[], omitted: number): string {
  if (listeners.length === 0) return '';
  if (listeners.length === 1 && omitted === 0) return ` on listener ${listeners[0]!.name}`;
  const named = listeners.slice(0, LISTENERS_NAMED).map((listener) => `${listener.name} (${listener.connections})`);
  const more = listeners.length - named.length + omitted;
  return ` on listeners ${named.join(', ')}${more > 0 ? `, and ${more} more` : ''}`;
}

/** `on UDP proxy dns`, `on UDP proxies game (12), dns (3), and 1 more`. */
export function describeUdpProxies(proxies: readonly OpenUdpProxy[], omitted: number): string {
  if (proxies.length === 0) return '';
  if (proxies.length === 1 && omitted === 0) return ` on UDP proxy ${proxies[0]!.name}`;
  const named = proxies.slice(0, LISTENERS_NAMED).map((proxy) => `${proxy.name} (${proxy.sessions})`);
  const more = proxies.length - named.length + omitted;
  return ` on UDP proxies ${named.join(', ')}${more > 0 ? `, and ${more} more` : ''}`;
}

/** UDP sessions left at the end of a record, 0 for a program that did not count them or when unknown. */
const sessionsLeft = (record: FinishedRecord): number => record.udpSessionsAtEnd ?? 0;

/** `3 connections`, `3 connections and 2 UDP sessions`, `2 UDP sessions`. */
function openCount(connections: number, sessions: number): string {
  if (sessions === 0) return plural(connections, 'connection');
  if (connections === 0) return plural(sessions, 'UDP session');
  return `${plural(connections, 'connection')} and ${plural(sessions, 'UDP session')}`;
}

/** What a UDP session left at the deadline needs: it ends only after its idle timeout. */
const UDP_ADVICE = "a UDP session ends only once its idle timeout passes without a datagram (the UDP proxy's idle_timeout, 60 s by default), so";

export function describeTermination(termination: Termination): EventText {
  const { outcome, ended } = termination;
  switch (outcome.kind) {
    case 'drain': {
      const record = outcome.record;
      const duration = formatSeconds(record.durationMs);
      const deadline = formatSeconds(record.deadlineMs);
      switch (outcome.reason) {
        case 'drained': {
          const start = record.connectionsAtStart;
          const end = (record.connectionsAtEnd ?? 0) + sessionsLeft(record);
          const drained =
            start === null ? `drained in ${duration} (connections at the start unknown)` : `drained ${openCount(start, record.udpSessionsAtStart ?? 0)} in ${duration}`;
          const left = end > 0 ? `; ${end} still open at the end, within drainguard.io/min-connections` : '';
          return { type: 'Normal', reason: 'Drained', message: `${drained}${left}` };
        }
        case 'deadline': {
          const end = record.connectionsAtEnd;
          const sessions = sessionsLeft(record);
          const where = [describeListeners(record.openListeners, record.openListenersOmitted), describeUdpProxies(record.openUdpProxies ?? [], record.openUdpProxiesOmitted ?? 0)]
            .filter((part) => part !== '')
            .join(',');
          const what =
            end === null
              ? `the ${deadline} deadline ended with the number of open connections unknown (Envoy's listener stats could not be read): make them readable (no stats_matcher hiding listener.*), or`
              : `${openCount(end, sessions)} still open${where} when the ${deadline} deadline ended:${sessions > 0 ? ` ${UDP_ADVICE}` : ''}`;
          return { type: 'Warning', reason: 'DrainDeadline', message: `${what} raise terminationGracePeriodSeconds or set drainguard.io/min-connections` };
        }
        case 'admin-unreachable':
          return {
            type: 'Warning',
            reason: 'DrainAdminUnreachable',
            message:
              `the drain could not reach Envoy's admin API and gave up after ${duration}, so Envoy was not drained: check the preStop hook's --admin address ` +
              `(drainguard check shows it; drainguard.io/admin-address sets it) and that Envoy was still running`,
          };
        case 'signal': {
          const left = record.connectionsAtEnd === null ? '' : ` with ${openCount(record.connectionsAtEnd, sessionsLeft(record))} still open`;
          return {
            type: 'Warning',
            reason: 'DrainStopped',
            message: `the drain was stopped by ${record.signal ?? 'a signal'} after ${duration}${left}: the kubelet never signals a preStop hook, so find what sent it`,
          };
        }
      }
      break;
    }
    case 'interrupted': {
      const started = Date.parse(outcome.record.startedAt);
      const ran = ended.finishedAtMs !== null && ended.finishedAtMs >= started ? ` ${formatSeconds(ended.finishedAtMs - started)} after it started` : '';
      return {
        type: 'Warning',
        reason: 'DrainInterrupted',
        message:
          `the drain was killed${ran}, before it finished (its deadline: ${formatSeconds(outcome.record.deadlineMs)}; a delete with a shorter --grace-period, ` +
          `the node shutting down, or Envoy killed): keep terminationGracePeriodSeconds above the drain's deadline`,
      };
    }
    case 'not-reported':
      return {
        type: 'Warning',
        reason: 'DrainNotReported',
        message:
          `Envoy ended (exit code ${ended.exitCode}${ended.reason ? `, ${ended.reason}` : ''}) without a drain record: the preStop hook did not run the drain ` +
          `or it was killed before it wrote one; look for a FailedPreStopHook event on the pod and run drainguard check`,
      };
    case 'unreadable':
      return {
        type: 'Warning',
        reason: 'DrainRecordUnreadable',
        message:
          `the termination message is not a drain record drainguard can read (${outcome.problem}), so how the drain ended is unknown: ` +
          `only drainguard's drain program should write Envoy's termination message file`,
      };
    case 'exited': {
      const what = `Envoy exited by itself (${ended.reason || 'no reason given'}, exit code ${ended.exitCode}) while the pod was not being deleted: not a drain, its connections were cut`;
      const advice: Record<typeof outcome.reason, string> = {
        OOMKilled: 'raise its memory limit',
        Error: `read its log: kubectl -n ${termination.namespace} logs ${termination.podName} -c ${termination.container} --previous`,
        Completed: 'something asked it to quit (a POST to /quitquitquit on its admin API, or a shutdown-manager)',
        other: `read its log: kubectl -n ${termination.namespace} logs ${termination.podName} -c ${termination.container} --previous`,
      };
      return { type: 'Warning', reason: 'EnvoyExited', message: `${what}; ${advice[outcome.reason]}` };
    }
  }
  throw new Error('unreachable: every outcome has a description');
}
