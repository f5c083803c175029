import { drainCallEra, drainListenersFlags, drainsDuringDelay, type DrainArguments } from '../drain-contract';
import type { DrainReason, DrainRecord, FinishedRecord, OpenListener, OpenUdpProxy } from '../drain-record';
import { VERSION } from '../version';
import { AdminCallError, type AdminClient, type AdminResponse } from './admin-client';
import { statusOnly, textReader } from './body-readers';
import type { Clock } from './clock';
import { formatEnvoyVersion, parseEnvoyVersion, type EnvoyVersion } from './envoy-version';
import type { BodyReader } from './http1';
import type { ListenerMatcher } from './listener-pattern';
import { LISTENER_GAUGES_PATH, ListenerGaugeScanner } from './listener-stats';
import type { Log } from './log';
import type { RecordSink } from './record-file';
import { parseServerInfo, type ServerInfo } from './server-info';

/** The drain command's arguments (src/drain-contract/), with the listener patterns compiled. */
export type DrainSettings = Omit<DrainArguments, 'admin' | 'excludeListeners' | 'terminationMessagePath'> & {
  /** How the admin address is shown in the start line (e.g. `unix:/admin/admin.sock`). */
  adminLabel?: string;
  excludeListeners: ListenerMatcher[];
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
  udpSessionsAtStart: number | null;
  udpSessionsAtEnd: number | null;
  envoyVersion: string;
}

/** Attempts per admin call: enough to ride out a blip, few enough that a dead Envoy is noticed at once. */
export const ATTEMPTS_PER_CALL = 3;
const RETRY_BACKOFF_MS = [100, 200];
/**
 * `/healthcheck/fail` is tried until Envoy takes it, however long a throttled Envoy takes to answer
 * (bounded by the deadline): waits between attempts double from the first to the last, then stay.
 */
export const HEALTHCHECK_BACKOFF_MS = { first: 100, max: 2000 };
/** `/ready` answers `<STATE>\n`; more than this is not Envoy's answer. */
const MAX_READY_BYTES = 64;
/** `/server_info` is a few kilobytes; an answer larger than this is not read (the version stays unknown). */
export const MAX_SERVER_INFO_BYTES = 256 * 1024;

/** The admin API as a whole does not answer: Envoy is gone, and the hook must not hold up termination. */
class EnvoyGone extends Error {}
class DeadlineReached extends Error {}

/** What a call is bounded by: the deadline (reaching it ends the drain), or an earlier moment. */
interface Bound {
  until: number;
  /** Said in the call's failure when the bound, not the deadline, cut it short. */
  what: string;
}

/** An admin call that got no usable answer after its retries (a timeout, an unreadable answer, an HTTP 5xx). */
interface NoAnswer {
  failed: string;
}

type CallResult<T> = AdminResponse<T> | NoAnswer;
const answered = <T>(result: CallResult<T>): result is AdminResponse<T> => !('failed' in result);

const UNKNOWN_OPEN = { open: [] as OpenListener[], openOmitted: 0, openUdp: [] as OpenUdpProxy[], openUdpOmitted: 0 };

/** Listener connections and UDP sessions as last read: counts, or unknown with the reason. */
interface Reading {
  connections: number | null;
  /** UDP proxies' sessions; known exactly when `connections` is. */
  sessions: number | null;
  problem?: string;
  /** Counted listeners holding connections (when the count is known), most first, and how many more. */
  open: OpenListener[];
  openOmitted: number;
  /** Counted UDP proxies holding sessions, likewise. */
  openUdp: OpenUdpProxy[];
  openUdpOmitted: number;
}

const UNKNOWN = (problem: string): Reading => ({ connections: null, sessions: null, problem, ...UNKNOWN_OPEN });

/** What the drain waits for: connections and UDP sessions together, or null when unknown. */
const openTotal = (reading: Reading): number | null => (reading.connections === null || reading.sessions === null ? null : reading.connections + reading.sessions);

/**
 * The drain of docs/design.md, "The drain". The timeline, all bounded by `deadline = start + deadlineMs`:
 * server_info → [drain delay, with an early graceful drain on ≥ 1.28] → healthcheck/fail →
 * drain_listeners?graceful… (the calls each Envoy release gets: drain-contract/envoy-releases.ts) →
 * poll the listener and UDP session gauges until min drain has passed and connections plus sessions
 * are at or below the threshold. Never /quitquitquit: the kubelet sends SIGTERM when the hook returns.
 *
 * A run ends once: by its own timeline (`run`), or from outside (`finish`: the safety timer, a
 * signal), whichever comes first; either way the summary line is logged and the finished record
 * written exactly once.
 */
export class DrainRun {
  private readonly startedAt: number;
  private readonly deadline: number;
  private version: EnvoyVersion | undefined;
  private atStart: Reading = UNKNOWN('not read');
  private lastReading: Reading = UNKNOWN('not read');
  private healthcheckFailedAt: number | null = null;
  private serverInfoRead = false;
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

      let atStart: Reading | undefined;
      if (settings.drainDelayMs > 0) {
        // The health check is failed when the delay ends, whatever the calls made during it get: each is
        // bounded by that moment, so a silent /server_info cannot push the health check back.
        const delayEnd: Bound = { until: clock.now() + settings.drainDelayMs, what: 'the drain delay ended' };
        await this.readServerInfo(delayEnd);
        atStart = await this.readConnections(delayEnd);
        this.noteConnectionsAtStart(atStart);
        // Listeners keep accepting during the delay (the load balancer may still send traffic), but on
        // ≥ 1.28 a graceful drain with skip_exit already tells connected clients to reconnect elsewhere.
        if (drainsDuringDelay(this.version)) await this.drainListeners('drain-delay-drain-listeners', delayEnd);
        log('drain-delay', { delay_ms: settings.drainDelayMs });
        await clock.sleep(Math.max(0, Math.min(delayEnd.until, this.deadline) - clock.now()));
        if (this.remaining() <= 0) throw new DeadlineReached();
      }

      // First thing without a drain delay: nothing Envoy answers (or does not) to another call delays it.
      await this.failHealthCheck();
      const minDrainEnd = clock.now() + settings.minDrainMs;
      if (this.version === undefined && !this.serverInfoRead) await this.readServerInfo();
      if (atStart === undefined) this.noteConnectionsAtStart(await this.readConnections());

      await this.drainListeners('drain-listeners');

      let lastLogged: string | undefined;
      for (;;) {
        if (this.remaining() <= 0) throw new DeadlineReached();
        // Polls run at a fixed rate: the next one starts an interval after this one started (at once if
        // this one took longer), so the time a poll takes does not add to how late a drop is seen.
        const pollStartedAt = clock.now();
        const reading = await this.readConnections();
        // A read the deadline cut short says nothing new about Envoy (on a throttled node it is the
        // last poll that runs out of time): the summary and the record keep the last count read.
        if (reading.connections === null && this.remaining() <= 0) throw new DeadlineReached();
        this.lastReading = reading;
        // Logged when a count changes (not each poll: a drain may poll for minutes).
        const logged = `${reading.connections}/${reading.sessions}`;
        if (logged !== lastLogged) {
          log('poll', readingFields(reading));
          lastLogged = logged;
        }
        const now = clock.now();
        const total = openTotal(reading);
        const belowThreshold = total !== null && total <= settings.minConnections;
        if (belowThreshold && now >= minDrainEnd) {
          reason = 'drained';
          break;
        }
        let wakeAt = pollStartedAt + settings.pollIntervalMs;
        if (belowThreshold) {
          // Already drained but the minimum drain is not over: look again exactly when it is (logged, so
          // the program's own account says which poll the minimum drain held and which one ended it).
          wakeAt = Math.min(wakeAt, minDrainEnd);
          log('min-drain', { ...readingFields(reading), wait_ms: Math.round(minDrainEnd - now) });
        }
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
      connectionsAtStart: this.atStart.connections,
      connectionsAtEnd: reading.connections,
      udpSessionsAtStart: this.atStart.sessions,
      udpSessionsAtEnd: reading.sessions,
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
      openListeners: reading.open,
      openListenersOmitted: reading.openOmitted,
      udpSessionsAtStart: summary.udpSessionsAtStart,
      udpSessionsAtEnd: summary.udpSessionsAtEnd,
      openUdpProxies: reading.openUdp,
      openUdpProxiesOmitted: reading.openUdpOmitted,
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
      udp_sessions_at_start: summary.udpSessionsAtStart ?? 'unknown',
      udp_sessions_at_end: summary.udpSessionsAtEnd ?? 'unknown',
      envoy_version: summary.envoyVersion,
      healthcheck_failed_at_ms: record.healthcheckFailedAtMs ?? 'never',
      ...(record.openListeners.length > 0 ? { open_listeners: record.openListeners } : {}),
      ...(reading.openUdp.length > 0 ? { open_udp_proxies: reading.openUdp } : {}),
      ...(written === undefined ? {} : { record: written }),
    });
    return summary;
  }

  /** `/server_info`: Envoy's version (the feature gates) and state; logged once, also when unusable. */
  private async readServerInfo(bound?: Bound): Promise<ServerInfo> {
    const info = await this.call('GET', '/server_info', () => textReader(MAX_SERVER_INFO_BYTES), { bound });
    const infoText = answered(info) && info.status === 200 ? info.body : undefined;
    const serverInfo = infoText === undefined ? {} : parseServerInfo(infoText);
    if (serverInfo.version !== undefined) this.version = parseEnvoyVersion(serverInfo.version);
    if (!this.serverInfoRead) {
      this.serverInfoRead = true;
      this.deps.log('server-info', {
        envoy_version: formatEnvoyVersion(this.version),
        state: serverInfo.state ?? 'unknown',
        ...outcomeFields(info),
        ...(answered(info) && info.status === 200 && infoText === undefined ? { error: `answer larger than ${MAX_SERVER_INFO_BYTES} bytes, not read` } : {}),
      });
    }
    return serverInfo;
  }

  private noteConnectionsAtStart(reading: Reading): void {
    this.atStart = reading;
    this.lastReading = reading;
    this.deps.log('connections', readingFields(reading));
  }

  /**
   * POST /healthcheck/fail until Envoy takes it (2xx), backing off between attempts, bounded by the
   * deadline; then confirms that Envoy reports itself as failing health checks: `/server_info` state
   * DRAINING (Envoy's server state is DRAINING once the health check is failed and it is initialised),
   * or, when that answer is unusable, `/ready` answering 503 `DRAINING`. An Envoy that still says LIVE
   * did not keep it (a `/healthcheck/ok` in between): failed again. A 4xx is final (an Envoy without
   * the endpoint). Every attempt and the confirmation are logged.
   */
  private async failHealthCheck(): Promise<void> {
    const { clock, log } = this.deps;
    let wait = HEALTHCHECK_BACKOFF_MS.first;
    let attempt = 0;
    const onAttempt = (outcome: Record<string, unknown>): void => log('healthcheck-fail', { attempt: ++attempt, ...outcome });
    for (;;) {
      const result = await this.call('POST', '/healthcheck/fail', statusOnly, { onAttempt });
      if (answered(result) && result.status >= 200 && result.status < 300) {
        // Envoy took it now (the record says so even when the deadline cuts the confirmation short).
        this.healthcheckFailedAt = clock.now();
        const state = await this.serverState();
        log('healthcheck-confirm', { state: state.state, via: state.via });
        if (state.state !== 'LIVE') return;
        // It did not keep it (a /healthcheck/ok in between): not failed until it is taken again.
        this.healthcheckFailedAt = null;
      } else if (answered(result) && result.status < 500) {
        return;
      }
      if (this.remaining() <= 0) throw new DeadlineReached();
      await clock.sleep(Math.min(wait, Math.max(0, this.remaining())));
      wait = Math.min(wait * 2, HEALTHCHECK_BACKOFF_MS.max);
    }
  }

  /** Envoy's server state as it reports it: `/server_info`, else `/ready`; `unknown` when neither tells. */
  private async serverState(): Promise<{ state: string; via: string }> {
    const info = await this.readServerInfo();
    if (info.state !== undefined) return { state: info.state, via: '/server_info' };
    const ready = await this.call('GET', '/ready', () => textReader(MAX_READY_BYTES), { serverErrorsAnswer: true });
    if (!answered(ready) || ready.body === undefined) return { state: 'unknown', via: '/ready' };
    const state = ready.body.trim();
    // Envoy answers 200 only when LIVE, 503 with the state otherwise.
    if (ready.status === 200 && state === 'LIVE') return { state, via: '/ready' };
    if (ready.status === 503 && /^[A-Z_]{1,32}$/.test(state) && state !== 'LIVE') return { state, via: '/ready' };
    return { state: 'unknown', via: '/ready' };
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
   * check is failed. Unreachable attempts are retried: that is how a dead Envoy is confirmed. Every
   * attempt is bounded by the deadline (reaching it ends the drain) or by `bound`.
   *
   * When no attempt reached anything, that is not yet proof that Envoy is gone: one endpoint's
   * connections may be closed while the rest of the admin API answers. Only when the admin API as a
   * whole does not answer either (`adminAnswers`) is Envoy gone.
   */
  private async call<T>(
    method: 'GET' | 'POST',
    path: string,
    reader: () => BodyReader<T>,
    options: {
      retryReached?: boolean;
      bound?: Bound;
      onAttempt?: (outcome: Record<string, unknown>) => void;
      /** A 5xx is the answer itself (`/ready`'s 503), not a failure to retry. */
      serverErrorsAnswer?: boolean;
    } = {},
  ): Promise<CallResult<T>> {
    const { admin, clock } = this.deps;
    const { retryReached = true, bound, onAttempt, serverErrorsAnswer = false } = options;
    const attempts = ATTEMPTS_PER_CALL;
    const until = bound === undefined ? this.deadline : Math.min(bound.until, this.deadline);
    let reachedEnvoy = false;
    let lastFailure = '';
    for (let attempt = 0; attempt < attempts; attempt++) {
      const left = until - clock.now();
      if (left <= 0) {
        if (this.remaining() <= 0) throw new DeadlineReached();
        return { failed: lastFailure === '' ? `${(bound as Bound).what}` : `${lastFailure}; then ${(bound as Bound).what}` };
      }
      try {
        const response = await admin.call(method, path, Math.min(this.settings.requestTimeoutMs, left), reader());
        reachedEnvoy = true;
        onAttempt?.({ status: response.status });
        if (response.status < 500 || serverErrorsAnswer) return response;
        lastFailure = `HTTP ${response.status}`;
      } catch (error) {
        if (!(error instanceof AdminCallError)) throw error;
        // Only refused, missing or reset connections say nothing is there; anything else reached something.
        reachedEnvoy ||= error.kind !== 'unreachable';
        lastFailure = error.message;
        onAttempt?.({ status: 'no-answer', error: error.message });
      }
      if (reachedEnvoy && !retryReached) break;
      const backoff = RETRY_BACKOFF_MS[attempt];
      if (backoff !== undefined && attempt < attempts - 1) await clock.sleep(Math.min(backoff, Math.max(0, until - clock.now())));
    }
    if (!reachedEnvoy && !(await this.adminAnswers())) throw new EnvoyGone(lastFailure);
    return { failed: reachedEnvoy ? lastFailure : `${lastFailure} (the admin API still answers)` };
  }

  /** Whether anything still answers on the admin address: one `GET /ready`, any answer counts. */
  private async adminAnswers(): Promise<boolean> {
    if (this.remaining() <= 0) throw new DeadlineReached();
    try {
      await this.deps.admin.call('GET', '/ready', Math.min(this.settings.requestTimeoutMs, this.remaining()), statusOnly());
      return true;
    } catch (error) {
      if (!(error instanceof AdminCallError)) throw error;
      return error.kind !== 'unreachable';
    }
  }

  /** The stats answer is scanned as it streams in: no size limit, bounded memory (listener-stats.ts). */
  private async readConnections(bound?: Bound): Promise<Reading> {
    const result = await this.call('GET', LISTENER_GAUGES_PATH, () => new ListenerGaugeScanner(this.settings.excludeListeners), { retryReached: false, bound });
    if (!answered(result)) return UNKNOWN(result.failed);
    if (result.status !== 200) return UNKNOWN(`HTTP ${result.status}`);
    if (!result.body.ok) return UNKNOWN(result.body.error);
    const { total, open, openOmitted, sessions, openUdp, openUdpOmitted } = result.body;
    if (total === null) return UNKNOWN('no listener gauges in the stats answer');
    return { connections: total, sessions, open, openOmitted, openUdp, openUdpOmitted };
  }

  /** POST /drain_listeners with the flags of the release Envoy reported (drain-contract/envoy-releases.ts). */
  private async drainListeners(step: string, bound?: Bound): Promise<void> {
    const { settings, version } = this;
    const flags: string[] = drainListenersFlags(version, settings.inboundOnly);
    let path = `/drain_listeners?${flags.join('&')}`;
    let result = await this.call('POST', path, statusOnly, { bound });
    if (answered(result) && result.status === 400 && flags.includes('skip_exit')) {
      // An Envoy whose reported version overstates its features: fall back to the plain graceful drain.
      path = `/drain_listeners?${flags.filter((f) => f !== 'skip_exit').join('&')}`;
      result = await this.call('POST', path, statusOnly, { bound });
    }
    this.deps.log(step, {
      path,
      ...outcomeFields(result),
      ...(settings.inboundOnly && !drainCallEra(version).directional ? { note: 'inboundonly needs Envoy >= 1.34; draining all listeners' } : {}),
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
  return {
    connections: reading.connections ?? 'unknown',
    udp_sessions: reading.sessions ?? 'unknown',
    ...(reading.problem === undefined ? {} : { stats_error: reading.problem }),
  };
}
