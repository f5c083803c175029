import type { DrainArguments } from '../drain-contract';
import { AdminCallError, type AdminClient, type AdminResponse } from './admin-client';
import { statusOnly, textReader } from './body-readers';
import type { Clock } from './clock';
import {
  formatEnvoyVersion,
  parseEnvoyVersion,
  supportsDirectionalGracefulDrain,
  supportsSkipExit,
  type EnvoyVersion,
} from './envoy-version';
import type { BodyReader } from './http1';
import { LISTENER_GAUGES_PATH, ListenerGaugeScanner } from './listener-stats';
import type { Log } from './log';
import { parseServerInfo } from './server-info';

/** The drain command's arguments (src/drain-contract.ts), with the listener patterns compiled. */
export type DrainSettings = Omit<DrainArguments, 'admin' | 'excludeListeners'> & {
  /** How the admin address is shown in the start line (e.g. `unix:/admin/admin.sock`). */
  adminLabel?: string;
  excludeListeners: RegExp[];
};

export interface DrainDeps {
  admin: AdminClient;
  clock: Clock;
  log: Log;
}

export type DrainReason = 'drained' | 'deadline' | 'admin-unreachable';

export interface DrainSummary {
  reason: DrainReason;
  durationMs: number;
  connectionsAtStart: number | null;
  connectionsAtEnd: number | null;
  envoyVersion: string;
}

/** Attempts per admin call: enough to ride out a blip, few enough that a dead Envoy is noticed at once. */
export const ATTEMPTS_PER_CALL = 3;
const RETRY_BACKOFF_MS = [100, 200];
/** `/server_info` is a few kilobytes; an answer larger than this is not read (the version stays unknown). */
export const MAX_SERVER_INFO_BYTES = 256 * 1024;

/** Every attempt failed without reaching Envoy: it is gone, and the hook must not hold up termination. */
class EnvoyGone extends Error {}
class DeadlineReached extends Error {}

/** An admin call that got no usable answer after its retries (a timeout, an unreadable answer, an HTTP 5xx). */
interface NoAnswer {
  failed: string;
}

type CallResult<T> = AdminResponse<T> | NoAnswer;
const answered = <T>(result: CallResult<T>): result is AdminResponse<T> => !('failed' in result);

/** Listener connections as last read: a count, or unknown with the reason. */
interface Reading {
  connections: number | null;
  problem?: string;
}

/**
 * The drain of docs/design.md, "The drain". The timeline, all bounded by `deadline = start + deadlineMs`:
 * server_info → [drain delay, with an early graceful drain on ≥ 1.28] → healthcheck/fail →
 * drain_listeners?graceful… → poll the listener gauges until min drain has passed and the count is at
 * or below the threshold. Never /quitquitquit: the kubelet sends SIGTERM when the hook returns.
 */
export async function drainEnvoy(settings: DrainSettings, deps: DrainDeps): Promise<DrainSummary> {
  const { admin, clock, log } = deps;
  const startedAt = clock.now();
  const deadline = startedAt + settings.deadlineMs;
  const remaining = () => deadline - clock.now();
  let version: EnvoyVersion | undefined;
  let connectionsAtStart: number | null = null;
  let connectionsAtEnd: number | null = null;

  /**
   * One admin call with retries; `reader` makes a fresh body reader for each attempt. `retryReached`
   * false: once something answered (or timed out), give up at once — for the stats reads, which the
   * next poll repeats anyway, so a slow or huge answer costs one timeout, not three, before the health
   * check is failed. Unreachable attempts are always retried: that is how a dead Envoy is confirmed.
   */
  async function call<T>(method: 'GET' | 'POST', path: string, reader: () => BodyReader<T>, retryReached = true): Promise<CallResult<T>> {
    let reachedEnvoy = false;
    let lastFailure = '';
    for (let attempt = 0; attempt < ATTEMPTS_PER_CALL; attempt++) {
      if (remaining() <= 0) throw new DeadlineReached();
      try {
        const response = await admin.call(method, path, Math.min(settings.requestTimeoutMs, remaining()), reader());
        reachedEnvoy = true;
        if (response.status < 500) return response;
        lastFailure = `HTTP ${response.status}`;
      } catch (error) {
        if (!(error instanceof AdminCallError)) throw error;
        // Only refused, missing or reset connections say Envoy is gone; anything else reached something.
        reachedEnvoy ||= error.kind !== 'unreachable';
        lastFailure = error.message;
      }
      if (reachedEnvoy && !retryReached) break;
      const backoff = RETRY_BACKOFF_MS[attempt];
      if (backoff !== undefined && attempt < ATTEMPTS_PER_CALL - 1) await clock.sleep(Math.min(backoff, Math.max(0, remaining())));
    }
    if (!reachedEnvoy) throw new EnvoyGone(lastFailure);
    return { failed: lastFailure };
  }

  /** The stats answer is scanned as it streams in: no size limit, bounded memory (listener-stats.ts). */
  async function readConnections(): Promise<Reading> {
    const result = await call('GET', LISTENER_GAUGES_PATH, () => new ListenerGaugeScanner(settings.excludeListeners), false);
    if (!answered(result)) return { connections: null, problem: result.failed };
    if (result.status !== 200) return { connections: null, problem: `HTTP ${result.status}` };
    if (!result.body.ok) return { connections: null, problem: result.body.error };
    return { connections: result.body.total, ...(result.body.total === null ? { problem: 'no listener gauges in the stats answer' } : {}) };
  }

  async function drainListeners(step: string): Promise<void> {
    const flags = ['graceful'];
    if (supportsSkipExit(version)) flags.push('skip_exit');
    if (settings.inboundOnly && supportsDirectionalGracefulDrain(version)) flags.push('inboundonly');
    let path = `/drain_listeners?${flags.join('&')}`;
    let result = await call('POST', path, statusOnly);
    if (answered(result) && result.status === 400 && flags.includes('skip_exit')) {
      // An Envoy whose reported version overstates its features: fall back to the plain graceful drain.
      path = `/drain_listeners?${flags.filter((f) => f !== 'skip_exit').join('&')}`;
      result = await call('POST', path, statusOnly);
    }
    log(step, {
      path,
      ...outcomeFields(result),
      ...(settings.inboundOnly && !supportsDirectionalGracefulDrain(version)
        ? { note: 'inboundonly needs Envoy >= 1.34; draining all listeners' }
        : {}),
    });
  }

  let reason: DrainReason;
  try {
    log('start', {
      admin: settings.adminLabel,
      deadline_ms: settings.deadlineMs,
      drain_delay_ms: settings.drainDelayMs,
      min_drain_ms: settings.minDrainMs,
      min_connections: settings.minConnections,
      poll_interval_ms: settings.pollIntervalMs,
    });

    const info = await call('GET', '/server_info', () => textReader(MAX_SERVER_INFO_BYTES));
    const infoText = answered(info) && info.status === 200 ? info.body : undefined;
    const serverInfo = infoText === undefined ? {} : parseServerInfo(infoText);
    version = serverInfo.version === undefined ? undefined : parseEnvoyVersion(serverInfo.version);
    log('server-info', {
      envoy_version: formatEnvoyVersion(version),
      state: serverInfo.state ?? 'unknown',
      ...outcomeFields(info),
      ...(answered(info) && info.status === 200 && infoText === undefined ? { error: `answer larger than ${MAX_SERVER_INFO_BYTES} bytes, not read` } : {}),
    });

    const atStart = await readConnections();
    connectionsAtStart = atStart.connections;
    connectionsAtEnd = connectionsAtStart;
    log('connections', readingFields(atStart));

    if (settings.drainDelayMs > 0) {
      // Listeners keep accepting during the delay (the load balancer may still send traffic), but on
      // ≥ 1.28 a graceful drain with skip_exit already tells connected clients to reconnect elsewhere.
      if (supportsSkipExit(version)) await drainListeners('drain-delay-drain-listeners');
      log('drain-delay', { delay_ms: settings.drainDelayMs });
      await clock.sleep(Math.min(settings.drainDelayMs, Math.max(0, remaining())));
      if (remaining() <= 0) throw new DeadlineReached();
    }

    const healthcheck = await call('POST', '/healthcheck/fail', statusOnly);
    log('healthcheck-fail', outcomeFields(healthcheck));
    const minDrainEnd = clock.now() + settings.minDrainMs;

    await drainListeners('drain-listeners');

    let lastLogged: number | null | undefined;
    for (;;) {
      if (remaining() <= 0) throw new DeadlineReached();
      // Polls run at a fixed rate: the next one starts an interval after this one started (at once if
      // this one took longer), so the time a poll takes does not add to how late a drop is seen.
      const pollStartedAt = clock.now();
      const reading = await readConnections();
      const { connections } = reading;
      connectionsAtEnd = connections;
      if (connections !== lastLogged) {
        log('poll', readingFields(reading));
        lastLogged = connections;
      }
      const now = clock.now();
      const belowThreshold = connections !== null && connections <= settings.minConnections;
      if (belowThreshold && now >= minDrainEnd) {
        reason = 'drained';
        break;
      }
      let wakeAt = pollStartedAt + settings.pollIntervalMs;
      // Already drained but the minimum drain is not over: look again exactly when it is.
      if (belowThreshold) wakeAt = Math.min(wakeAt, minDrainEnd);
      await clock.sleep(Math.max(0, Math.min(wakeAt, deadline) - now));
    }
  } catch (error) {
    if (error instanceof EnvoyGone) {
      reason = 'admin-unreachable';
      log('admin-unreachable', { error: error.message });
    } else if (error instanceof DeadlineReached) {
      reason = 'deadline';
    } else {
      throw error;
    }
  }

  const summary: DrainSummary = {
    reason,
    durationMs: Math.round(clock.now() - startedAt),
    connectionsAtStart,
    connectionsAtEnd,
    envoyVersion: formatEnvoyVersion(version),
  };
  log('summary', {
    reason: summary.reason,
    duration_ms: summary.durationMs,
    connections_at_start: summary.connectionsAtStart ?? 'unknown',
    connections_at_end: summary.connectionsAtEnd ?? 'unknown',
    envoy_version: summary.envoyVersion,
  });
  return summary;
}

function outcomeFields(result: CallResult<unknown>): Record<string, unknown> {
  return answered(result) ? { status: result.status } : { status: 'no-answer', error: result.failed };
}

function readingFields(reading: Reading): Record<string, unknown> {
  return { connections: reading.connections ?? 'unknown', ...(reading.problem === undefined ? {} : { stats_error: reading.problem }) };
}
