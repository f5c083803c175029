import type { DrainArguments } from '../drain-contract';
import type { DrainReason, DrainRecord, FinishedRecord, OpenListener } from '../drain-record';
import { VERSION } from '../version';
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
import type { RecordSink } from './record-file';
import { parseServerInfo } from './server-info';

/** The drain command's arguments (src/drain-contract.ts), with the listener patterns compiled. */
export type DrainSettings = Omit<DrainArguments, 'admin' | 'excludeListeners' | 'terminationMessagePath'> & {
  /** How the admin address is shown in the start line (e.g. `unix:/admin/admin.sock`). */
  adminLabel?: string;
  excludeListeners: RegExp[];
};

export interface DrainDeps {
  admin: AdminClient;
  clock: Clock;
  log: Log;
  /** Where the drain record goes (--termination-message-path); none: no record is written. */
  record?: RecordSink;
  /** Wall-clock time, for the record's `startedAt` (the drain's own timing uses `clock`). */
  wallClock?: () => Date;
}

export type { DrainReason };

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

const UNKNOWN_OPEN = { open: [] as OpenListener[], openOmitted: 0 };

/** Listener connections as last read: a count, or unknown with the reason. */
interface Reading {
  connections: number | null;
  problem?: string;
  /** Counted listeners holding connections (when the count is known), most first, and how many more. */
  open: OpenListener[];
  openOmitted: number;
}

/**
 * The drain of docs/design.md, "The drain". The timeline, all bounded by `deadline = start + deadlineMs`:
 * server_info → [drain delay, with an early graceful drain on ≥ 1.28] → healthcheck/fail →
 * drain_listeners?graceful… → poll the listener gauges until min drain has passed and the count is at
 * or below the threshold. Never /quitquitquit: the kubelet sends SIGTERM when the hook returns.
 *
 * A run ends once: by its own timeline (`run`), or from outside (`finish`: the safety timer, a
 * signal), whichever comes first; either way the summary line is logged and the finished record
 * written exactly once.
 */
export class DrainRun {
  private readonly startedAt: number;
  private readonly deadline: number;
  private version: EnvoyVersion | undefined;
  private connectionsAtStart: number | null = null;
  private lastReading: Reading = { connections: null, ...UNKNOWN_OPEN };
  private healthcheckFailedAt: number | null = null;
  private summary: DrainSummary | undefined;
  private readonly startedAtText: string;

  constructor(
    private readonly settings: DrainSettings,
    private readonly deps: DrainDeps,
  ) {
    this.startedAt = deps.clock.now();
    this.deadline = this.startedAt + settings.deadlineMs;
    this.startedAtText = (deps.wallClock ?? (() => new Date()))().toISOString();
  }

  /** The summary once the run ended (by itself or by `finish`). */
  get finished(): DrainSummary | undefined {
    return this.summary;
  }

  private remaining(): number {
    return this.deadline - this.deps.clock.now();
  }

  async run(): Promise<DrainSummary> {
    const { settings, deps } = this;
    const { clock, log } = deps;
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
      // Before the first admin call: a drain killed from here on is seen as one that never finished.
      this.writeRecord({ state: 'started', ...this.recordBase() });

      const info = await this.call('GET', '/server_info', () => textReader(MAX_SERVER_INFO_BYTES));
      const infoText = answered(info) && info.status === 200 ? info.body : undefined;
      const serverInfo = infoText === undefined ? {} : parseServerInfo(infoText);
      this.version = serverInfo.version === undefined ? undefined : parseEnvoyVersion(serverInfo.version);
      log('server-info', {
        envoy_version: formatEnvoyVersion(this.version),
        state: serverInfo.state ?? 'unknown',
        ...outcomeFields(info),
        ...(answered(info) && info.status === 200 && infoText === undefined ? { error: `answer larger than ${MAX_SERVER_INFO_BYTES} bytes, not read` } : {}),
      });

      const atStart = await this.readConnections();
      this.connectionsAtStart = atStart.connections;
      this.lastReading = atStart;
      log('connections', readingFields(atStart));

      if (settings.drainDelayMs > 0) {
        // Listeners keep accepting during the delay (the load balancer may still send traffic), but on
        // ≥ 1.28 a graceful drain with skip_exit already tells connected clients to reconnect elsewhere.
        if (supportsSkipExit(this.version)) await this.drainListeners('drain-delay-drain-listeners');
        log('drain-delay', { delay_ms: settings.drainDelayMs });
        await clock.sleep(Math.min(settings.drainDelayMs, Math.max(0, this.remaining())));
        if (this.remaining() <= 0) throw new DeadlineReached();
      }

      const healthcheck = await this.call('POST', '/healthcheck/fail', statusOnly);
      if (answered(healthcheck) && healthcheck.status >= 200 && healthcheck.status < 300) this.healthcheckFailedAt = clock.now();
      log('healthcheck-fail', outcomeFields(healthcheck));
      const minDrainEnd = clock.now() + settings.minDrainMs;

      await this.drainListeners('drain-listeners');

      let lastLogged: number | null | undefined;
      for (;;) {
        if (this.remaining() <= 0) throw new DeadlineReached();
        // Polls run at a fixed rate: the next one starts an interval after this one started (at once if
        // this one took longer), so the time a poll takes does not add to how late a drop is seen.
        const pollStartedAt = clock.now();
        const reading = await this.readConnections();
        const { connections } = reading;
        this.lastReading = reading;
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
        await clock.sleep(Math.max(0, Math.min(wakeAt, this.deadline) - now));
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
    return this.finish(reason);
  }

  /**
   * Ends the run with `reason` unless it already ended: the summary line, then the finished record.
   * `extra` goes into the summary line (the safety timer's note, the signal).
   */
  finish(reason: DrainReason, extra: { note?: string; signal?: string } = {}): DrainSummary {
    if (this.summary) return this.summary;
    const { clock, log } = this.deps;
    const reading = this.lastReading;
    const summary: DrainSummary = {
      reason,
      durationMs: Math.round(clock.now() - this.startedAt),
      connectionsAtStart: this.connectionsAtStart,
      connectionsAtEnd: reading.connections,
      envoyVersion: formatEnvoyVersion(this.version),
    };
    this.summary = summary;
    const record: FinishedRecord = {
      state: 'finished',
      ...this.recordBase(),
      reason,
      durationMs: summary.durationMs,
      connectionsAtStart: summary.connectionsAtStart,
      connectionsAtEnd: summary.connectionsAtEnd,
      openListeners: reading.connections === null ? [] : reading.open,
      openListenersOmitted: reading.connections === null ? 0 : reading.openOmitted,
      healthcheckFailedAtMs: this.healthcheckFailedAt === null ? null : Math.round(this.healthcheckFailedAt - this.startedAt),
      envoyVersion: summary.envoyVersion,
      ...(extra.signal === undefined ? {} : { signal: extra.signal }),
    };
    // The record before the summary line: the summary is the last line, and says whether the record was written.
    const written = this.writeRecord(record, false);
    log('summary', {
      reason: summary.reason,
      ...(extra.signal === undefined ? {} : { signal: extra.signal }),
      ...(extra.note === undefined ? {} : { note: extra.note }),
      duration_ms: summary.durationMs,
      connections_at_start: summary.connectionsAtStart ?? 'unknown',
      connections_at_end: summary.connectionsAtEnd ?? 'unknown',
      envoy_version: summary.envoyVersion,
      healthcheck_failed_at_ms: record.healthcheckFailedAtMs ?? 'never',
      ...(record.openListeners.length > 0 ? { open_listeners: record.openListeners } : {}),
      ...(written === undefined ? {} : { record: written }),
    });
    return summary;
  }

  private recordBase() {
    return { version: VERSION, startedAt: this.startedAtText, deadlineMs: this.settings.deadlineMs };
  }

  /**
   * Writes `record` to the record sink, if there is one; never throws, never waits. Logs the outcome as
   * its own `record` line when `logLine` (the started record), else returns it for the summary line.
   */
  private writeRecord(record: DrainRecord, logLine = true): string | undefined {
    const sink = this.deps.record;
    if (!sink) return undefined;
    let outcome: string;
    try {
      const written = sink.write(record);
      outcome = written.ok ? `written (${written.bytes} bytes)` : `not written: ${written.error}`;
    } catch (error) {
      outcome = `not written: ${(error as Error).message}`;
    }
    if (logLine) this.deps.log('record', { state: record.state, path: sink.path, outcome });
    return outcome;
  }

  /**
   * One admin call with retries; `reader` makes a fresh body reader for each attempt. `retryReached`
   * false: once something answered (or timed out), give up at once — for the stats reads, which the
   * next poll repeats anyway, so a slow or huge answer costs one timeout, not three, before the health
   * check is failed. Unreachable attempts are always retried: that is how a dead Envoy is confirmed.
   */
  private async call<T>(method: 'GET' | 'POST', path: string, reader: () => BodyReader<T>, retryReached = true): Promise<CallResult<T>> {
    const { admin, clock } = this.deps;
    let reachedEnvoy = false;
    let lastFailure = '';
    for (let attempt = 0; attempt < ATTEMPTS_PER_CALL; attempt++) {
      if (this.remaining() <= 0) throw new DeadlineReached();
      try {
        const response = await admin.call(method, path, Math.min(this.settings.requestTimeoutMs, this.remaining()), reader());
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
      if (backoff !== undefined && attempt < ATTEMPTS_PER_CALL - 1) await clock.sleep(Math.min(backoff, Math.max(0, this.remaining())));
    }
    if (!reachedEnvoy) throw new EnvoyGone(lastFailure);
    return { failed: lastFailure };
  }

  /** The stats answer is scanned as it streams in: no size limit, bounded memory (listener-stats.ts). */
  private async readConnections(): Promise<Reading> {
    const result = await this.call('GET', LISTENER_GAUGES_PATH, () => new ListenerGaugeScanner(this.settings.excludeListeners), false);
    if (!answered(result)) return { connections: null, problem: result.failed, ...UNKNOWN_OPEN };
    if (result.status !== 200) return { connections: null, problem: `HTTP ${result.status}`, ...UNKNOWN_OPEN };
    if (!result.body.ok) return { connections: null, problem: result.body.error, ...UNKNOWN_OPEN };
    const { total, open, openOmitted } = result.body;
    if (total === null) return { connections: null, problem: 'no listener gauges in the stats answer', ...UNKNOWN_OPEN };
    return { connections: total, open, openOmitted };
  }

  private async drainListeners(step: string): Promise<void> {
    const { settings, version } = this;
    const flags = ['graceful'];
    if (supportsSkipExit(version)) flags.push('skip_exit');
    if (settings.inboundOnly && supportsDirectionalGracefulDrain(version)) flags.push('inboundonly');
    let path = `/drain_listeners?${flags.join('&')}`;
    let result = await this.call('POST', path, statusOnly);
    if (answered(result) && result.status === 400 && flags.includes('skip_exit')) {
      // An Envoy whose reported version overstates its features: fall back to the plain graceful drain.
      path = `/drain_listeners?${flags.filter((f) => f !== 'skip_exit').join('&')}`;
      result = await this.call('POST', path, statusOnly);
    }
    this.deps.log(step, {
      path,
      ...outcomeFields(result),
      ...(settings.inboundOnly && !supportsDirectionalGracefulDrain(version)
        ? { note: 'inboundonly needs Envoy >= 1.34; draining all listeners' }
        : {}),
    });
  }
}

export function drainEnvoy(settings: DrainSettings, deps: DrainDeps): Promise<DrainSummary> {
  return new DrainRun(settings, deps).run();
}

function outcomeFields(result: CallResult<unknown>): Record<string, unknown> {
  return answered(result) ? { status: result.status } : { status: 'no-answer', error: result.failed };
}

function readingFields(reading: Reading): Record<string, unknown> {
  return { connections: reading.connections ?? 'unknown', ...(reading.problem === undefined ? {} : { stats_error: reading.problem }) };
}
