/**
 * Counting Envoy's open downstream connections from its listener gauges (docs/design.md, "Counting connections").
 *
 * `server.total_connections` is deliberately not used: it is refreshed only at stats flush and also
 * counts the probe connections, so it neither falls promptly nor reaches zero.
 *
 * The stats answer is Envoy's plain-text format, one `name: value` line per stat, read as a stream:
 * `ListenerGaugeScanner` checks each line as bytes arrive and sums the listener gauges on the way,
 * keeping only the line it is in. Memory does not grow with the answer, so 10,000 listeners or a million
 * stats cost the same few kilobytes; only time grows, and the admin call's timeout bounds that.
 */
import type { OpenListener, OpenUdpProxy } from '../drain-record';
import type { BodyReader } from './http1';
import type { ListenerMatcher } from './listener-pattern';
import { platform } from './platform/current';
import { utf8Decode, utf8Encode } from './platform/utf8';

/** A character of a stat name segment: anything but the dot that separates segments (and a newline, which `.` excludes too). */
const SEGMENT_CHAR = '[^.\\n]';
/** Segment characters that may follow once the whole `word` matched: none, for a word to stand alone. */
function otherThan(word: string, afterWhole: string): string {
  if (word === '') return afterWhole;
  const first = word[0] as string;
  return `(?:[^.\\n${first}]${SEGMENT_CHAR}*|${first}${otherThan(word.slice(1), afterWhole)})?`;
}
/** A last segment that is not a per-handler one (`worker_<n>`, `main_thread`), without lookaround. */
const NOT_HANDLER_SEGMENT = `(?:[^.\\nwm]${SEGMENT_CHAR}*|w${otherThan('orker_', `(?:[0-9]*[^.\\n0-9]${SEGMENT_CHAR}*)?`)}|m${otherThan('ain_thread', `${SEGMENT_CHAR}+`)})?`;
/**
 * The regular expression Envoy evaluates for the gauges we need (RE2 by default, ECMAScript std::regex on
 * older releases or with `admin_stats_filter_use_re2` off: it uses only syntax both read alike, no
 * lookaround, which RE2 lacks). It matches exactly the names listenerOfGauge and udpProxyOfGauge accept,
 * so Envoy leaves out the per-handler copies and the answer is a third of the size.
 */
export const LISTENER_GAUGE_FILTER =
  `^(?:listener\\.(?:${SEGMENT_CHAR}+|.*\\.${NOT_HANDLER_SEGMENT})\\.downstream_cx_active|udp\\..+\\.downstream_sess_active)$`;
/**
 * No `format`: plain text is the default on every release (`format=text` is refused before 1.2x, whose
 * only formats were json and prometheus). `type=Gauges` leaves out counters, text readouts and histograms
 * where Envoy knows it, and is ignored where it does not; the filter alone selects the same lines.
 */
export const LISTENER_GAUGES_PATH = `/stats?type=Gauges&filter=${encodeURIComponent(LISTENER_GAUGE_FILTER)}`;

const PREFIX = 'listener.';
const SUFFIX = '.downstream_cx_active';
const UDP_PREFIX = 'udp.';
const UDP_SUFFIX = '.downstream_sess_active';
/**
 * Per-handler copies of every listener gauge: `listener.<l>.worker_3.…`, `listener.<l>.main_thread.…`.
 * Matched from the listener segment's last dot (sticky): the handler part has no dot of its own.
 */
const HANDLER_SEGMENT = /(?:worker_\d+|main_thread)$/y;
/** Envoy internal listeners (in-process, user-space connections), named `envoy_internal_…` in stats. */
const INTERNAL_PREFIX = 'envoy_internal_';

export type ListenerRole = 'counted' | 'admin' | 'internal' | 'excluded';

export interface ListenerGauge {
  listener: string;
  active: number;
  role: ListenerRole;
}

/** A UDP proxy's session gauge: `udp.<statPrefix>.downstream_sess_active`. */
export interface UdpProxyGauge {
  statPrefix: string;
  sessions: number;
  /** `--exclude-listener` patterns match stat prefixes too; nothing else is left out. */
  role: 'counted' | 'excluded';
}

export interface ConnectionCount {
  /** Sum over counted listeners; `null` when no listener gauge was visible at all (unknown, never 0). */
  total: number | null;
  listeners: ListenerGauge[];
  /** Listener gauges seen but not kept in `listeners` (beyond the caller's limit). */
  omitted: number;
  /** Counted listeners holding connections, most first: at most MAX_OPEN_LISTENERS_KEPT (the drain record's). */
  open: OpenListener[];
  /** Counted listeners holding connections that are not in `open`. */
  openOmitted: number;
  /**
   * Sum over counted UDP proxies' sessions: 0 when there is no UDP proxy (an Envoy without one has no
   * such gauge). Known whenever `total` is: a UDP proxy's listener has a listener gauge too.
   */
  sessions: number;
  udpProxies: UdpProxyGauge[];
  /** UDP proxy gauges seen but not kept in `udpProxies` (beyond the caller's limit). */
  udpOmitted: number;
  /** Counted UDP proxies holding sessions, most first: at most MAX_OPEN_LISTENERS_KEPT. */
  openUdp: OpenUdpProxy[];
  openUdpOmitted: number;
}

/** Open listeners kept per reading: more than a drain record has room for (record-file.ts). */
export const MAX_OPEN_LISTENERS_KEPT = 32;

/** What one stats answer gave: a count, or why there is none. */
export type GaugeScan = ({ ok: true } & ConnectionCount) | { ok: false; error: string };

/** The part of `name` between `prefix` and `suffix`, or undefined when it is not that shape (or empty). */
function between(name: string, prefix: string, suffix: string): string | undefined {
  if (name.length <= prefix.length + suffix.length || !name.startsWith(prefix) || !name.endsWith(suffix)) return undefined;
  return name.slice(prefix.length, name.length - suffix.length);
}

/** The listener segment of a gauge name, or undefined for names that are not a listener-level gauge. */
export function listenerOfGauge(name: string): string | undefined {
  const listener = between(name, PREFIX, SUFFIX);
  if (listener === undefined || isPerHandler(listener)) return undefined;
  return listener;
}

/** The stat prefix of a UDP proxy's session gauge (`udp.<prefix>.downstream_sess_active`), or undefined. */
export function udpProxyOfGauge(name: string): string | undefined {
  return between(name, UDP_PREFIX, UDP_SUFFIX);
}

/** `<l>.worker_<n>` or `<l>.main_thread`: a per-handler copy, never counted. */
function isPerHandler(listener: string): boolean {
  const dot = listener.lastIndexOf('.');
  if (dot < 0) return false;
  HANDLER_SEGMENT.lastIndex = dot + 1;
  return HANDLER_SEGMENT.test(listener);
}

const matchesAny = (name: string, excludes: readonly ListenerMatcher[]): boolean => excludes.length > 0 && excludes.some((pattern) => pattern.test(name));

function roleOf(listener: string, excludes: readonly ListenerMatcher[]): ListenerRole {
  if (listener === 'admin') return 'admin';
  if (listener.startsWith(INTERNAL_PREFIX)) return 'internal';
  if (matchesAny(listener, excludes)) return 'excluded';
  return 'counted';
}

/** A listener name from its bytes (one character each): UTF-8 decoded when it is not ASCII. */
function decodeName(latin1: string): string {
  if (!NOT_ASCII.test(latin1)) return latin1;
  const bytes = new Uint8Array(latin1.length);
  for (let i = 0; i < latin1.length; i++) bytes[i] = latin1.charCodeAt(i);
  return utf8Decode(bytes);
}

function shortName(listener: string): string {
  return JSON.stringify(listener.length > 64 ? `${listener.slice(0, 61)}...` : listener);
}

/** A stat name longer than this cannot be judged, so the count becomes unknown. */
export const MAX_NAME_BYTES = 16 * 1024;
/**
 * The longest line read: a name of MAX_NAME_BYTES, `: ` and a value. Envoy writes a count as at most 20
 * digits (uint64); a longer line makes the count unknown, which bounds what is kept of a line.
 */
export const MAX_LINE_BYTES = MAX_NAME_BYTES + 64;
/** A count as Envoy writes a gauge (uint64 in decimal); exact as a double up to 2^53. */
const COUNT = /^(?:0|[1-9][0-9]*)$/;
const NOT_ASCII = /[^\x00-\x7f]/;
const LF = 0x0a;
const COLON = 0x3a;
const SPACE = 0x20;
const ZERO = 0x30;

class MalformedStats extends Error {}

/**
 * The MAX_OPEN_LISTENERS_KEPT names with the largest counts, in bounded memory and linear time: the
 * list is scanned only when a count above its smallest one replaces that one.
 */
class LargestCounts {
  readonly kept: { name: string; count: number }[] = [];
  /** Names with a count that are not in `kept`. */
  omitted = 0;
  /** The smallest count in `kept` once it is full: a name with no more is not kept. */
  private floor = 0;

  note(name: string, count: number): void {
    const kept = this.kept;
    if (kept.length < MAX_OPEN_LISTENERS_KEPT) {
      kept.push({ name, count });
      if (kept.length === MAX_OPEN_LISTENERS_KEPT) this.floor = Math.min(...kept.map((entry) => entry.count));
      return;
    }
    this.omitted++;
    if (count <= this.floor) return;
    let smallest = 0;
    for (let i = 1; i < kept.length; i++) if ((kept[i] as { count: number }).count < (kept[smallest] as { count: number }).count) smallest = i;
    kept[smallest] = { name, count };
    this.floor = Math.min(...kept.map((entry) => entry.count));
  }

  /** Most first. */
  sorted(): { name: string; count: number }[] {
    return this.kept.sort((a, b) => b.count - a.count);
  }
}

/**
 * Reads Envoy's plain-text `/stats` answer incrementally (a BodyReader): one `name: value` line per stat,
 * each ended by `\n`. Envoy's stat names never hold a `:` (Stats::Utility::sanitizeStatsName makes it
 * `_`), so a line splits at its first `: `. Lines of other stats are passed over whatever their value
 * (text readouts, histograms, on releases that ignore `type`); a listener or UDP session gauge whose
 * value is not a count, a line without `: `, a line longer than MAX_LINE_BYTES or an answer that ends
 * inside a line make the count unknown, never a smaller number.
 *
 * With no rows to keep (the drain), once one listener gauge has been seen a `name: 0` line can change
 * nothing: it adds nothing, and it cannot make the count known.
 */
export class ListenerGaugeScanner implements BodyReader<GaugeScan> {
  private error: string | undefined;
  /** The start of a line the previous pieces ended inside (Latin-1, one character per byte). */
  private partial = '';

  // The result so far.
  private visible = 0;
  private total = 0;
  private listeners: ListenerGauge[] = [];
  private omitted = 0;
  private readonly open = new LargestCounts();
  private sessions = 0;
  private udpProxies: UdpProxyGauge[] = [];
  private udpOmitted = 0;
  private readonly openUdp = new LargestCounts();

  /** `keepListeners` bounds the per-listener (and per-UDP-proxy) rows kept (status shows them); the drain keeps none. */
  constructor(
    private readonly excludes: readonly ListenerMatcher[],
    private readonly keepListeners = 0,
  ) {}

  push(bytes: Uint8Array): boolean {
    if (this.error !== undefined) return false;
    try {
      this.scan(bytes);
      return true;
    } catch (error) {
      if (!(error instanceof MalformedStats)) throw error;
      this.error = error.message;
      return false;
    }
  }

  finish(): GaugeScan {
    if (this.error === undefined && this.partial !== '') this.error = 'stats answer ends inside a line';
    if (this.error !== undefined) return { ok: false, error: this.error };
    return {
      ok: true,
      total: this.visible === 0 ? null : this.total,
      listeners: this.listeners,
      omitted: this.omitted,
      open: this.open.sorted().map(({ name, count }) => ({ name, connections: count })),
      openOmitted: this.open.omitted,
      sessions: this.sessions,
      udpProxies: this.udpProxies,
      udpOmitted: this.udpOmitted,
      openUdp: this.openUdp.sorted().map(({ name, count }) => ({ name, sessions: count })),
      openUdpOmitted: this.openUdp.omitted,
    };
  }

  private scan(bytes: Uint8Array): void {
    const n = bytes.length;
    let i = 0;
    if (this.partial !== '') {
      const end = bytes.indexOf(LF);
      const piece = platform.latin1(end < 0 ? bytes : bytes.subarray(0, end));
      if (this.partial.length + piece.length > MAX_LINE_BYTES) throw new MalformedStats(`a stats line longer than ${MAX_LINE_BYTES} bytes`);
      this.partial += piece;
      if (end < 0) return;
      const line = this.partial;
      this.partial = '';
      this.line(line);
      i = end + 1;
    }
    while (i < n) {
      const end = bytes.indexOf(LF, i);
      if (end < 0) {
        if (n - i > MAX_LINE_BYTES) throw new MalformedStats(`a stats line longer than ${MAX_LINE_BYTES} bytes`);
        this.partial = platform.latin1(bytes.subarray(i));
        return;
      }
      if (!this.isIdleLine(bytes, i, end)) this.line(platform.latin1(bytes.subarray(i, end)));
      i = end + 1;
    }
  }

  /**
   * Whether bytes[start, end) is a `<name>: 0` line that can change nothing: with no rows to keep (the
   * drain) and a listener gauge already seen, it adds nothing and cannot make the count known.
   * Envoy's idle listeners are most of a big answer: passing over them without a string each (the
   * searches are memchr in QuickJS) is what keeps a 10,000-listener poll within its CPU goal.
   */
  private isIdleLine(bytes: Uint8Array, start: number, end: number): boolean {
    if (this.visible === 0 || this.keepListeners !== 0 || end - start > MAX_LINE_BYTES) return false;
    return bytes[end - 1] === ZERO && bytes[end - 2] === SPACE && bytes.indexOf(COLON, start) === end - 3;
  }

  /** One whole line, without its `\n`, one character per byte. */
  private line(text: string): void {
    if (text.length > MAX_LINE_BYTES) throw new MalformedStats(`a stats line longer than ${MAX_LINE_BYTES} bytes`);
    const colon = text.indexOf(':');
    if (colon < 0 || text.charCodeAt(colon + 1) !== 0x20) throw new MalformedStats(`a stats line is not "name: value": ${shortName(text)}`);
    const name = text.slice(0, colon);
    const listener = between(name, PREFIX, SUFFIX);
    if (listener !== undefined) return this.countListener(decodeName(listener), text.slice(colon + 2));
    const udpProxy = between(name, UDP_PREFIX, UDP_SUFFIX);
    if (udpProxy !== undefined) this.countUdpProxy(decodeName(udpProxy), text.slice(colon + 2));
  }

  /**
   * A gauge's value, which must be a count: a value that is not a whole number from 0 to 2^53 (-10, 0.5,
   * 1e400, 18446744073709551615 from a gauge that went below zero) makes the whole reading unknown. So a
   * gauge given twice cannot cancel another out: with counts only, the sum is at least each of its
   * parts, never below the real count.
   */
  private count(what: string, valueText: string): number {
    const value = COUNT.test(valueText) ? Number(valueText) : NaN;
    if (!Number.isSafeInteger(value)) throw new MalformedStats(`the gauge of ${what} is ${shortName(valueText)}, not a count`);
    return value;
  }

  /** A gauge named `listener.<listener>.downstream_cx_active`. */
  private countListener(listener: string, valueText: string): void {
    if (isPerHandler(listener)) return;
    const value = this.count(`listener ${shortName(listener)}`, valueText);
    const role = roleOf(listener, this.excludes);
    if (role !== 'admin') this.visible++;
    if (role === 'counted') {
      this.total += value;
      if (value > 0) this.open.note(listener, value);
    }
    if (this.listeners.length < this.keepListeners) this.listeners.push({ listener, active: value, role });
    else this.omitted++;
  }

  /**
   * A gauge named `udp.<statPrefix>.downstream_sess_active`: one per UDP proxy configuration, with no
   * per-handler copies. It does not make the count known by itself (a stats matcher may hide the
   * listener gauges alone): the UDP proxy's listener has a listener gauge of its own.
   */
  private countUdpProxy(statPrefix: string, valueText: string): void {
    const sessions = this.count(`UDP proxy ${shortName(statPrefix)}`, valueText);
    const role = matchesAny(statPrefix, this.excludes) ? 'excluded' : 'counted';
    if (role === 'counted') {
      this.sessions += sessions;
      if (sessions > 0) this.openUdp.note(statPrefix, sessions);
    }
    if (this.udpProxies.length < this.keepListeners) this.udpProxies.push({ statPrefix, sessions, role });
    else this.udpOmitted++;
  }
}

/**
 * Counts a whole plain-text `/stats` body at once (the scanner fed in one piece). Throws on a body
 * that is not Envoy's `name: value` lines.
 */
export function countConnections(body: string | Uint8Array, excludes: readonly ListenerMatcher[], keepListeners = Number.MAX_SAFE_INTEGER): ConnectionCount {
  const scanner = new ListenerGaugeScanner(excludes, keepListeners);
  scanner.push(typeof body === 'string' ? utf8Encode(body) : body);
  const scan = scanner.finish();
  if (!scan.ok) throw new Error(scan.error);
  const { ok: _ok, ...count } = scan;
  return count;
}
