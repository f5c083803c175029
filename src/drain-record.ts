/**
 * The drain record: what `envoy-shutdown drain` leaves in the Envoy container's termination message
 * file, so that the kubelet copies it into `status.containerStatuses[].state.terminated.message` (and
 * `lastState` after a restart), and what `drainguard report` reads back from there. Both sides use this
 * one file: one type, one encoder (the program), one strict reader (the reporter), one size bound.
 *
 * The program writes a `started` record before its first admin call and replaces it with the
 * `finished` one at the end, so a drain killed midway is visible as such. The reporter reads records
 * sent by whatever ran in the pod, so the reader trusts nothing: anything that is not exactly a record
 * of this shape is `unreadable`, never a guess.
 *
 * It imports nothing, not even Node's modules: it is bundled into the drain program, which must run
 * as a static executable without Node's APIs.
 */

/** The first key of every record: tells a drain record from any other termination message. */
export const DRAIN_RECORD_FORMAT = 'drainguard.io/drain/v1';

/** The kubelet keeps at most this many bytes of one container's termination message. */
export const DRAIN_RECORD_MAX_BYTES = 4096;

/** How a finished drain ended (docs/envoy-shutdown.md, "The drain timeline"). */
export type DrainReason = 'drained' | 'deadline' | 'admin-unreachable' | 'signal';
export const DRAIN_REASONS: readonly DrainReason[] = ['drained', 'deadline', 'admin-unreachable', 'signal'];

/** A listener that still held connections when the drain ended. */
export interface OpenListener {
  /** The listener segment of `listener.<segment>.downstream_cx_active` (e.g. `ingress_https`, `0.0.0.0_8080`). */
  name: string;
  connections: number;
}

/** A UDP proxy that still held sessions when the drain ended. */
export interface OpenUdpProxy {
  /** The stat prefix of `udp.<prefix>.downstream_sess_active` (e.g. `dns`, Envoy Gateway's `udproute/ns/name/rule/0`). */
  name: string;
  sessions: number;
}

interface RecordBase {
  /** The drain program's version. */
  version: string;
  /** When the drain started, UTC, ISO 8601 with milliseconds (`2026-12-01T21:00:00.000Z`). */
  startedAt: string;
  /** The deadline the drain ran with (`--deadline`). */
  deadlineMs: number;
}

/** Written before the first admin call; still there afterwards means the drain never finished. */
export interface StartedRecord extends RecordBase {
  state: 'started';
}

export interface FinishedRecord extends RecordBase {
  state: 'finished';
  reason: DrainReason;
  durationMs: number;
  /** null: the count was never known (no listener gauge, unreadable stats). */
  connectionsAtStart: number | null;
  connectionsAtEnd: number | null;
  /** The listeners still holding connections at the end, most connections first. */
  openListeners: OpenListener[];
  /** Open listeners left out of `openListeners` to stay within DRAIN_RECORD_MAX_BYTES. */
  openListenersOmitted: number;
  /**
   * UDP sessions (of UDP proxies) at the start and at the end; null: never known. The drain waits for
   * connections and sessions together. Absent in records of drain programs that did not count them
   * yet: the reader keeps that apart from 0.
   */
  udpSessionsAtStart?: number | null;
  udpSessionsAtEnd?: number | null;
  /** The UDP proxies still holding sessions at the end, most sessions first. */
  openUdpProxies?: OpenUdpProxy[];
  /** Open UDP proxies left out of `openUdpProxies` to stay within DRAIN_RECORD_MAX_BYTES. */
  openUdpProxiesOmitted?: number;
  /** When Envoy's health check was failed, in ms after the start; null: it never was. */
  healthcheckFailedAtMs: number | null;
  /** `x.y.z`, or `unknown` when `/server_info` gave no usable version. */
  envoyVersion: string;
  /** The signal that ended the drain, for reason `signal` (e.g. `SIGTERM`). */
  signal?: string;
}

export type DrainRecord = StartedRecord | FinishedRecord;

export type DrainRecordReading =
  | { kind: 'record'; record: DrainRecord }
  /** An empty message: nothing was written. */
  | { kind: 'none' }
  /** Something was written, but it is not a drain record this reader accepts. */
  | { kind: 'unreadable'; problem: string };

// ── Bounds the reader holds every value to ─────────────────────────────────────────────────────

/** The largest duration the drain contract accepts (MAX_DEADLINE_SECONDS), plus the safety timers' margin. */
const MAX_DURATION_MS = 2_000_000 * 1000 + 10_000;
/** More connections than any Envoy holds; a larger count is not a count. */
const MAX_CONNECTIONS = 1_000_000_000;
/** Listener names are Envoy stat name segments; longer ones are cut when written. */
export const MAX_LISTENER_NAME_LENGTH = 200;
const VERSION_TEXT = /^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$/;
const ENVOY_VERSION_TEXT = /^(unknown|(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5}))$/;
const TIMESTAMP_TEXT = /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$/;
const SIGNAL_TEXT = /^SIG[A-Z0-9]{1,12}$/;
/** Printable ASCII without quotes or backslashes: a name an Event message can carry as it is. */
const LISTENER_NAME_TEXT = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

// ── Writing ────────────────────────────────────────────────────────────────────────────────────

/** Bytes of `text` in UTF-8 (no TextEncoder in the drain program's runtime). */
function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** A listener name as a record carries it: cut to MAX_LISTENER_NAME_LENGTH, odd characters as `?`. */
export function recordListenerName(name: string): string {
  const cut = name.length > MAX_LISTENER_NAME_LENGTH ? name.slice(0, MAX_LISTENER_NAME_LENGTH) : name;
  const clean = cut.replace(/[^\x21\x23-\x5b\x5d-\x7e]/g, '?');
  return clean === '' ? '?' : clean;
}

function wireForm(record: DrainRecord): Record<string, unknown> {
  // The format key first, so a reader (or a person reading `kubectl describe pod`) sees what this is.
  return { format: DRAIN_RECORD_FORMAT, ...record };
}

/** An open listener or UDP proxy, as the encoder trims them: the fewest first to go, whichever kind. */
type OpenEntry = { kind: 'listener'; entry: OpenListener; count: number } | { kind: 'udp'; entry: OpenUdpProxy; count: number };

/**
 * The record as one line of JSON of at most `maxBytes` (DRAIN_RECORD_MAX_BYTES). When the open
 * listeners and UDP proxies do not all fit, those with the fewest connections or sessions are left out
 * and counted in `openListenersOmitted` and `openUdpProxiesOmitted`; everything else always fits (the
 * rest of a record is under 520 bytes).
 */
export function encodeDrainRecord(record: DrainRecord, maxBytes: number = DRAIN_RECORD_MAX_BYTES): string {
  if (record.state === 'started') return JSON.stringify(wireForm(record));
  const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const entries: OpenEntry[] = [
    ...record.openListeners.map((l): OpenEntry => ({ kind: 'listener', entry: { name: recordListenerName(l.name), connections: l.connections }, count: l.connections })),
    ...(record.openUdpProxies ?? []).map((u): OpenEntry => ({ kind: 'udp', entry: { name: recordListenerName(u.name), sessions: u.sessions }, count: u.sessions })),
  ].sort((a, b) => b.count - a.count || byName(a.entry, b.entry));
  const udpCounted = record.openUdpProxies !== undefined;
  const render = (kept: number): string => {
    const keptEntries = entries.slice(0, kept);
    const listeners = keptEntries.flatMap((e) => (e.kind === 'listener' ? [e.entry] : []));
    const udp = keptEntries.flatMap((e) => (e.kind === 'udp' ? [e.entry] : []));
    const dropped = entries.slice(kept);
    const droppedUdp = dropped.filter((e) => e.kind === 'udp').length;
    return JSON.stringify(
      wireForm({
        ...record,
        openListeners: listeners,
        openListenersOmitted: record.openListenersOmitted + dropped.length - droppedUdp,
        ...(udpCounted ? { openUdpProxies: udp, openUdpProxiesOmitted: (record.openUdpProxiesOmitted ?? 0) + droppedUdp } : {}),
      }),
    );
  };
  // Each entry costs at least its JSON; start from all of them and remove until it fits, so the loop
  // runs once per entry at most.
  let kept = entries.length;
  for (;;) {
    const text = render(kept);
    if (utf8Length(text) <= maxBytes || kept === 0) return text;
    // Remove enough entries to cover the excess in one step, at least one.
    let excess = utf8Length(text) - maxBytes;
    while (kept > 0 && excess > 0) {
      kept--;
      excess -= utf8Length(JSON.stringify((entries[kept] as OpenEntry).entry)) + 1;
    }
  }
}

// ── Reading ────────────────────────────────────────────────────────────────────────────────────

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function count(value: unknown, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max;
}

class Unreadable extends Error {}

function field<T>(object: Record<string, unknown>, key: string, check: (value: unknown) => value is T, form: string): T {
  const value = Object.prototype.hasOwnProperty.call(object, key) ? object[key] : undefined;
  if (!check(value)) throw new Unreadable(`${key} must be ${form}`);
  return value;
}

const text =
  (pattern: RegExp) =>
  (value: unknown): value is string =>
    typeof value === 'string' && value.length <= 256 && pattern.test(value);
const countUpTo =
  (max: number) =>
  (value: unknown): value is number =>
    count(value, max);
const countOrNull =
  (max: number) =>
  (value: unknown): value is number | null =>
    value === null || count(value, max);
const oneOf =
  <T extends string>(values: readonly T[]) =>
  (value: unknown): value is T =>
    typeof value === 'string' && (values as readonly string[]).includes(value);

const MAX_OPEN_LISTENERS = DRAIN_RECORD_MAX_BYTES; // each takes more than one byte: a bound, never reached

/** A list of `{name, <countKey>}` entries: open listeners (`connections`) or open UDP proxies (`sessions`). */
function readOpen<K extends 'connections' | 'sessions'>(value: unknown, list: string, countKey: K, named: string): Array<{ name: string } & Record<K, number>> {
  if (!Array.isArray(value) || value.length > MAX_OPEN_LISTENERS) throw new Unreadable(`${list} must be a list`);
  return value.map((entry: unknown) => {
    if (!isPlainObject(entry)) throw new Unreadable(`${list} must hold {name, ${countKey}} objects`);
    const name = field(entry, 'name', text(LISTENER_NAME_TEXT), `${named} of printable characters, at most ${MAX_LISTENER_NAME_LENGTH}`);
    const count = field(entry, countKey, countUpTo(MAX_CONNECTIONS), `a whole number of ${countKey}`);
    return { name, [countKey]: count } as { name: string } & Record<K, number>;
  });
}

const readListeners = (value: unknown): OpenListener[] => readOpen(value, 'openListeners', 'connections', 'a listener name');
const readUdpProxies = (value: unknown): OpenUdpProxy[] => readOpen(value, 'openUdpProxies', 'sessions', 'a stat prefix');

const UDP_FIELDS = ['udpSessionsAtStart', 'udpSessionsAtEnd', 'openUdpProxies', 'openUdpProxiesOmitted'] as const;

/** The UDP fields: all four or none (a program that did not count UDP sessions); never some. */
function readUdp(parsed: Record<string, unknown>): Pick<FinishedRecord, (typeof UDP_FIELDS)[number]> {
  const present = UDP_FIELDS.filter((key) => Object.prototype.hasOwnProperty.call(parsed, key));
  if (present.length === 0) return {};
  if (present.length < UDP_FIELDS.length) throw new Unreadable(`${UDP_FIELDS.filter((key) => !present.includes(key)).join(', ')} must be given with ${present.join(', ')}`);
  return {
    udpSessionsAtStart: field(parsed, 'udpSessionsAtStart', countOrNull(MAX_CONNECTIONS), 'a whole number of sessions or null'),
    udpSessionsAtEnd: field(parsed, 'udpSessionsAtEnd', countOrNull(MAX_CONNECTIONS), 'a whole number of sessions or null'),
    openUdpProxies: readUdpProxies(parsed.openUdpProxies),
    openUdpProxiesOmitted: field(parsed, 'openUdpProxiesOmitted', countUpTo(MAX_CONNECTIONS), 'a whole number'),
  };
}

/**
 * Reads a termination message. Strict: the whole message must be one record of this format, with
 * every field of the right type and within its bounds; keys this version does not know are ignored
 * (a newer program may add some), the values it knows never are.
 */
export function readDrainRecord(message: string | undefined | null): DrainRecordReading {
  if (message === undefined || message === null || message === '') return { kind: 'none' };
  if (utf8Length(message) > DRAIN_RECORD_MAX_BYTES) return { kind: 'unreadable', problem: `longer than ${DRAIN_RECORD_MAX_BYTES} bytes` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(message);
  } catch {
    return { kind: 'unreadable', problem: 'not JSON' };
  }
  if (!isPlainObject(parsed) || parsed.format !== DRAIN_RECORD_FORMAT) {
    return { kind: 'unreadable', problem: `not a drain record (no "format": "${DRAIN_RECORD_FORMAT}")` };
  }
  try {
    const base: RecordBase = {
      version: field(parsed, 'version', text(VERSION_TEXT), 'a version such as 0.1.0'),
      startedAt: field(parsed, 'startedAt', text(TIMESTAMP_TEXT), 'a UTC time such as 2026-12-01T21:00:00.000Z'),
      deadlineMs: field(parsed, 'deadlineMs', countUpTo(MAX_DURATION_MS), 'a whole number of milliseconds'),
    };
    if (Number.isNaN(Date.parse(base.startedAt))) throw new Unreadable('startedAt must be a real date');
    const state = field(parsed, 'state', oneOf(['started', 'finished'] as const), 'started or finished');
    if (state === 'started') return { kind: 'record', record: { state, ...base } };
    const reason = field(parsed, 'reason', oneOf(DRAIN_REASONS), DRAIN_REASONS.join(', '));
    const record: FinishedRecord = {
      state,
      ...base,
      reason,
      durationMs: field(parsed, 'durationMs', countUpTo(MAX_DURATION_MS), 'a whole number of milliseconds'),
      connectionsAtStart: field(parsed, 'connectionsAtStart', countOrNull(MAX_CONNECTIONS), 'a whole number of connections or null'),
      connectionsAtEnd: field(parsed, 'connectionsAtEnd', countOrNull(MAX_CONNECTIONS), 'a whole number of connections or null'),
      openListeners: readListeners(parsed.openListeners),
      openListenersOmitted: field(parsed, 'openListenersOmitted', countUpTo(MAX_CONNECTIONS), 'a whole number'),
      ...readUdp(parsed),
      healthcheckFailedAtMs: field(parsed, 'healthcheckFailedAtMs', countOrNull(MAX_DURATION_MS), 'a whole number of milliseconds or null'),
      envoyVersion: field(parsed, 'envoyVersion', text(ENVOY_VERSION_TEXT), 'x.y.z or unknown'),
    };
    if (reason === 'signal') record.signal = field(parsed, 'signal', text(SIGNAL_TEXT), 'a signal name such as SIGTERM');
    else if (parsed.signal !== undefined) throw new Unreadable('signal is only given for reason signal');
    return { kind: 'record', record };
  } catch (error) {
    if (error instanceof Unreadable) return { kind: 'unreadable', problem: error.message };
    throw error;
  }
}
