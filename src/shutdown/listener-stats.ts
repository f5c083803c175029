/**
 * Counting Envoy's open downstream connections from its listener gauges (docs/design.md, "Counting connections").
 *
 * `server.total_connections` is deliberately not used: it is refreshed only at stats flush and also
 * counts the probe connections, so it neither falls promptly nor reaches zero.
 *
 * The stats answer is read as a stream: `ListenerGaugeScanner` checks the JSON as bytes arrive and
 * sums the listener gauges on the way, keeping only the token it is in. Memory does not grow with the
 * answer, so 10,000 listeners or a million stats cost the same few kilobytes; only time grows, and the
 * admin call's timeout bounds that.
 */
import type { OpenListener } from '../drain-record';
import type { BodyReader } from './http1';
import type { ListenerMatcher } from './listener-pattern';
import { platform } from './platform/current';
import { utf8Decode, utf8Encode } from './platform/utf8';

/** The regex Envoy evaluates (RE2) for the gauges we need; percent-encoded into the query string. */
export const LISTENER_GAUGE_FILTER = '^listener\\..*\\.downstream_cx_active$';
export const LISTENER_GAUGES_PATH = `/stats?format=json&type=Gauges&filter=${encodeURIComponent(LISTENER_GAUGE_FILTER)}`;

const PREFIX = 'listener.';
const SUFFIX = '.downstream_cx_active';
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
}

/** Open listeners kept per reading: more than a drain record has room for (record-file.ts). */
export const MAX_OPEN_LISTENERS_KEPT = 32;

/** What one stats answer gave: a count, or why there is none. */
export type GaugeScan = ({ ok: true } & ConnectionCount) | { ok: false; error: string };

/** The listener segment of a gauge name, or undefined for names that are not a listener-level gauge. */
export function listenerOfGauge(name: string): string | undefined {
  if (!name.startsWith(PREFIX) || !name.endsWith(SUFFIX)) return undefined;
  const listener = name.slice(PREFIX.length, name.length - SUFFIX.length);
  if (listener === '' || isPerHandler(listener)) return undefined;
  return listener;
}

/** `<l>.worker_<n>` or `<l>.main_thread`: a per-handler copy, never counted. */
function isPerHandler(listener: string): boolean {
  const dot = listener.lastIndexOf('.');
  if (dot < 0) return false;
  HANDLER_SEGMENT.lastIndex = dot + 1;
  return HANDLER_SEGMENT.test(listener);
}

function roleOf(listener: string, excludes: readonly ListenerMatcher[]): ListenerRole {
  if (listener === 'admin') return 'admin';
  if (listener.startsWith(INTERNAL_PREFIX)) return 'internal';
  if (excludes.length > 0 && excludes.some((pattern) => pattern.test(listener))) return 'excluded';
  return 'counted';
}

function shortName(listener: string): string {
  return JSON.stringify(listener.length > 64 ? `${listener.slice(0, 61)}...` : listener);
}

/** Deepest nesting accepted; Envoy's answer is 4 deep (histograms 5). */
const MAX_DEPTH = 64;
/** A stat name longer than this cannot be judged, so the count becomes unknown. */
export const MAX_NAME_BYTES = 16 * 1024;
/** Keys are compared with `stats`, `name` and `value`; even fully \u-escaped those fit in this. */
const MAX_KEY_BYTES = 256;
/** Numbers and the literals true/false/null. */
const MAX_SCALAR_BYTES = 64;
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
/** The characters a number or literal is made of (digits, sign, point, exponent, letters). */
const SCALAR = /[-+.0-9A-Za-z]*/y;
const NOT_ASCII = /[^\x00-\x7f]/;
/** A count as Envoy writes a gauge: no sign, no fraction, at most 15 digits (exact as a double). */
const INTEGER = '(?:0|[1-9][0-9]{0,14})';
/** Printable ASCII except the quote and the backslash: a JSON string's characters with nothing to decode. */
const PLAIN = '[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]';
/**
 * Envoy's element, `{"name":"<printable ASCII, no escapes>","value":<integer>}`: exactly a JSON object
 * with those two members, so matching it gives what the general path would, in one native step. Any
 * other element (escapes, another order, more members, a split across chunks) takes the general path.
 */
const ELEMENT = new RegExp(`\\{"name":"(${PLAIN}*)","value":(${INTEGER})\\}`, 'y');
/**
 * The common case in one native step: a listener's gauge `listener.<l>.downstream_cx_active` of
 * ELEMENT's shape, followed by the per-handler copies Envoy sorts right after it,
 * `listener.<l>.worker_<n>.downstream_cx_active` and `listener.<l>.main_thread.downstream_cx_active`.
 * The copies repeat the listener segment (a backreference, so nothing is backtracked) and listenerOfGauge
 * rejects every one of them, so skipping them gives the same count. Capture 1 is `<l>`, 2 the value.
 */
const LISTENER_GROUP = new RegExp(
  `\\{"name":"listener\\.(${PLAIN}*)\\.downstream_cx_active","value":(${INTEGER})\\}` +
    `(?:,\\{"name":"listener\\.\\1\\.(?:worker_[0-9]+|main_thread)\\.downstream_cx_active","value":${INTEGER}\\})*`,
  'y',
);

const QUOTE = 0x22;
/** Where a string's plain run ends: its closing quote or an escape. */
const STRING_STOP = /["\\]/g;

class MalformedStats extends Error {}

type Expect = 'value' | 'value-or-close' | 'key-or-close' | 'key' | 'colon' | 'comma-or-close' | 'end';
type Container = 'object' | 'array';
/** What a string being read will be used for. */
type StringRole = 'top-key' | 'element-key' | 'name' | 'other';

/**
 * Reads a `/stats?format=json` answer incrementally (a BodyReader): `{"stats":[{"name":…,"value":…},…]}`.
 * The JSON must be well formed as a whole; elements without a numeric `value` (text readouts, the
 * trailing histograms element) are skipped, like JSON.parse plus a filter would. Any error makes the
 * count unknown, never a smaller number.
 */
export class ListenerGaugeScanner implements BodyReader<GaugeScan> {
  private readonly stack: Container[] = [];
  private expect: Expect = 'value';
  private error: string | undefined;

  // The token being read.
  private mode: 'none' | 'string' | 'scalar' = 'none';
  private stringRole: StringRole = 'other';
  private escapePending = false;
  private captured: string[] = [];
  private capturedBytes = 0;
  private captureLimit = 0;
  private captureOverflow = false;
  private scalar = '';

  // Where in Envoy's shape we are.
  private topKey = '';
  private statsKind: 'absent' | 'array' | 'other' = 'absent';
  private inStatsArray = false;
  private inElement = false;
  private elementKey = '';
  private name: string | undefined;
  private nameTooLong = false;
  private value: number | undefined;

  // The result so far.
  private visible = 0;
  private total = 0;
  private listeners: ListenerGauge[] = [];
  private omitted = 0;
  private open: OpenListener[] = [];
  private openOmitted = 0;
  /** The fewest connections among `open` once it is full: a listener with no more is not kept. */
  private openFloor = 0;

  /** `keepListeners` bounds the per-listener rows kept (status shows them); the drain keeps none. */
  constructor(
    private readonly excludes: readonly ListenerMatcher[],
    private readonly keepListeners = 0,
  ) {}

  push(bytes: Uint8Array): boolean {
    if (this.error !== undefined) return false;
    try {
      // One native conversion per chunk; from then on the scan uses the engine's string search
      // (indexOf, slice, sticky regexes) instead of a loop over bytes in JavaScript, which is what
      // keeps it fast on QuickJS's interpreter. Latin-1: one character per byte, nothing decoded yet.
      this.scan(platform.latin1(bytes));
      return true;
    } catch (error) {
      if (!(error instanceof MalformedStats)) throw error;
      this.error = error.message;
      return false;
    }
  }

  finish(): GaugeScan {
    if (this.error === undefined) {
      try {
        if (this.mode === 'scalar') this.endScalar();
        if (this.mode === 'string' || this.expect !== 'end') throw new MalformedStats('stats answer ends before its JSON does');
        if (this.statsKind !== 'array') throw new MalformedStats('stats answer has no "stats" array');
      } catch (error) {
        if (!(error instanceof MalformedStats)) throw error;
        this.error = error.message;
      }
    }
    if (this.error !== undefined) return { ok: false, error: this.error };
    const open = this.open.sort((a, b) => b.connections - a.connections);
    return { ok: true, total: this.visible === 0 ? null : this.total, listeners: this.listeners, omitted: this.omitted, open, openOmitted: this.openOmitted };
  }

  private scan(text: string): void {
    const n = text.length;
    let i = 0;
    while (i < n) {
      if (this.mode === 'string') {
        i = this.continueString(text, i);
        continue;
      }
      if (this.mode === 'scalar') {
        i = this.continueScalar(text, i);
        continue;
      }
      const c = text.charCodeAt(i);
      switch (c) {
        case 0x20:
        case 0x09:
        case 0x0a:
        case 0x0d:
          break;
        case 0x7b: // {
          if (this.stack.length === 2 && this.inStatsArray && (this.expect === 'value' || this.expect === 'value-or-close')) {
            const end = this.commonElement(text, i);
            if (end > i) {
              this.endValue();
              i = end;
              continue;
            }
          }
          this.beginValue('object');
          this.stack.push('object');
          this.expect = 'key-or-close';
          if (this.stack.length === 3 && this.inStatsArray) this.beginElement();
          break;
        case 0x5b: // [
          this.beginValue('array');
          this.stack.push('array');
          this.expect = 'value-or-close';
          break;
        case 0x7d: // }
          if ((this.expect !== 'key-or-close' && this.expect !== 'comma-or-close') || this.stack[this.stack.length - 1] !== 'object') {
            throw new MalformedStats('unexpected }');
          }
          if (this.stack.length === 3 && this.inElement) this.endElement();
          this.stack.pop();
          this.endValue();
          break;
        case 0x5d: // ]
          if ((this.expect !== 'value-or-close' && this.expect !== 'comma-or-close') || this.stack[this.stack.length - 1] !== 'array') {
            throw new MalformedStats('unexpected ]');
          }
          if (this.stack.length === 2) this.inStatsArray = false;
          this.stack.pop();
          this.endValue();
          break;
        case 0x3a: // :
          if (this.expect !== 'colon') throw new MalformedStats('unexpected :');
          this.expect = 'value';
          break;
        case 0x2c: // ,
          if (this.expect !== 'comma-or-close') throw new MalformedStats('unexpected ,');
          this.expect = this.stack[this.stack.length - 1] === 'object' ? 'key' : 'value';
          break;
        case QUOTE:
          if (this.expect === 'key' || this.expect === 'key-or-close') {
            const depth = this.stack.length;
            this.beginString(depth === 1 ? 'top-key' : depth === 3 && this.inElement ? 'element-key' : 'other');
          } else {
            this.beginValue('string');
            this.beginString(this.stack.length === 3 && this.inElement && this.elementKey === 'name' ? 'name' : 'other');
          }
          i++;
          continue;
        default:
          if (c === 0x2d || (c >= 0x30 && c <= 0x39) || c === 0x74 || c === 0x66 || c === 0x6e) {
            this.beginValue('scalar');
            this.mode = 'scalar';
            this.scalar = '';
            continue; // continueScalar reads it from here
          }
          throw new MalformedStats(`unexpected byte 0x${c.toString(16)}`);
      }
      i++;
    }
  }

  /**
   * A listener's gauge and its per-handler copies, or another element of Envoy's common shape, whole in
   * this chunk from `start`: counted in one native step (see LISTENER_GROUP and ELEMENT). Returns where
   * it ends, or `start` when the general path must read what is there.
   */
  private commonElement(text: string, start: number): number {
    LISTENER_GROUP.lastIndex = start;
    const group = LISTENER_GROUP.exec(text);
    if (group) {
      this.countListener(group[1] as string, Number(group[2]));
      return LISTENER_GROUP.lastIndex;
    }
    ELEMENT.lastIndex = start;
    const element = ELEMENT.exec(text);
    if (!element) return start;
    this.countGauge(element[1] as string, Number(element[2]));
    return ELEMENT.lastIndex;
  }

  /** Reads the bytes of a number or literal from `start` (it may continue in the next chunk). */
  private continueScalar(text: string, start: number): number {
    SCALAR.lastIndex = start;
    const piece = (SCALAR.exec(text) as RegExpExecArray)[0];
    if (this.scalar.length + piece.length > MAX_SCALAR_BYTES) throw new MalformedStats('number or literal too long');
    this.scalar += piece;
    const end = start + piece.length;
    if (end < text.length) this.endScalar();
    return end;
  }

  /** A value starts where one is expected; records what the value means in Envoy's shape. */
  private beginValue(kind: 'object' | 'array' | 'string' | 'scalar'): void {
    if (this.expect !== 'value' && this.expect !== 'value-or-close') throw new MalformedStats(`unexpected ${kind}`);
    if ((kind === 'object' || kind === 'array') && this.stack.length >= MAX_DEPTH) throw new MalformedStats(`nested deeper than ${MAX_DEPTH}`);
    const depth = this.stack.length;
    if (depth === 1 && this.topKey === 'stats') {
      // A repeated "stats" key: the last one wins, as with JSON.parse.
      this.statsKind = kind === 'array' ? 'array' : 'other';
      this.resetCount();
      if (kind === 'array') this.inStatsArray = true;
    }
    if (depth === 3 && this.inElement) {
      if (this.elementKey === 'name' && kind !== 'string') {
        this.name = undefined;
        this.nameTooLong = false;
      }
      if (this.elementKey === 'value' && kind !== 'scalar') this.value = undefined;
    }
  }

  private endValue(): void {
    this.expect = this.stack.length === 0 ? 'end' : 'comma-or-close';
  }

  private beginString(role: StringRole): void {
    this.mode = 'string';
    this.stringRole = role;
    this.escapePending = false;
    this.captured = [];
    this.capturedBytes = 0;
    this.captureOverflow = false;
    this.captureLimit = role === 'name' ? MAX_NAME_BYTES : role === 'other' ? 0 : MAX_KEY_BYTES;
  }

  /** Reads string bytes from `start`; returns where scanning goes on. Jumps between quotes and backslashes. */
  private continueString(text: string, start: number): number {
    const n = text.length;
    let i = start;
    if (this.escapePending) {
      this.escapePending = false;
      i++; // the escaped byte (the \uXXXX digits that may follow contain no quote or backslash)
    }
    for (;;) {
      // The next quote or backslash, searched from i only: each byte is looked at once, however many
      // escapes there are (QuickJS's indexOf compares at every position, so a search for a character
      // that is absent would cost the whole rest of the chunk every time).
      STRING_STOP.lastIndex = i;
      const stop = i < n ? STRING_STOP.exec(text) : null;
      if (stop === null) {
        this.capture(text, start, n);
        return n;
      }
      if (text.charCodeAt(stop.index) === QUOTE) {
        this.capture(text, start, stop.index);
        this.endString();
        return stop.index + 1;
      }
      // Skip the escape; a quote it escaped is searched past.
      i = stop.index + 2;
      if (i > n) {
        this.capture(text, start, n);
        this.escapePending = true;
        return n;
      }
    }
  }

  /** Keeps the string's characters (Latin-1, one per byte) if this string is wanted. */
  private capture(text: string, from: number, to: number): void {
    if (this.captureLimit === 0 || from >= to || this.captureOverflow) return;
    if (this.capturedBytes + (to - from) > this.captureLimit) {
      this.captureOverflow = true;
      this.captured = [];
      return;
    }
    this.captured.push(text.slice(from, to));
    this.capturedBytes += to - from;
  }

  private capturedText(): string | undefined {
    if (this.captureOverflow) return undefined;
    const raw = this.captured.length === 1 ? (this.captured[0] as string) : this.captured.join('');
    if (raw.indexOf('\\') < 0 && !NOT_ASCII.test(raw)) return raw;
    const bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    try {
      // Escapes and UTF-8 decoded exactly as JSON.parse would.
      return JSON.parse(`"${utf8Decode(bytes)}"`) as string;
    } catch {
      throw new MalformedStats('a stats string is not valid JSON');
    }
  }

  private endString(): void {
    this.mode = 'none';
    const role = this.stringRole;
    if (role === 'other') {
      if (this.expect === 'key' || this.expect === 'key-or-close') this.expect = 'colon';
      else this.endValue();
      return;
    }
    const text = this.capturedText();
    this.captured = [];
    if (role === 'top-key') {
      this.topKey = text ?? '';
      this.expect = 'colon';
    } else if (role === 'element-key') {
      this.elementKey = text ?? '';
      this.expect = 'colon';
    } else {
      this.name = text;
      this.nameTooLong = text === undefined;
      this.endValue();
    }
  }

  private endScalar(): void {
    this.mode = 'none';
    const text = this.scalar;
    let value: number | undefined;
    if (text === 'true' || text === 'false' || text === 'null') value = undefined;
    else if (NUMBER.test(text)) value = Number(text);
    else throw new MalformedStats(`invalid JSON value ${JSON.stringify(text)}`);
    if (this.stack.length === 3 && this.inElement && this.elementKey === 'value') this.value = value;
    this.endValue();
  }

  private beginElement(): void {
    this.inElement = true;
    this.elementKey = '';
    this.name = undefined;
    this.nameTooLong = false;
    this.value = undefined;
  }

  private endElement(): void {
    this.inElement = false;
    if (this.value === undefined) return;
    if (this.nameTooLong) throw new MalformedStats(`a stat name longer than ${MAX_NAME_BYTES} bytes`);
    if (this.name === undefined) return;
    this.countGauge(this.name, this.value);
  }

  private countGauge(name: string, value: number): void {
    if (name.startsWith(PREFIX) && name.endsWith(SUFFIX)) this.countListener(name.slice(PREFIX.length, name.length - SUFFIX.length), value);
  }

  /**
   * A gauge named `listener.<listener>.downstream_cx_active`. A count must be a count: a value that is
   * not a non-negative whole number (-10, 0.5, 1e400, -0) makes the whole reading unknown. So a listener
   * given twice cannot cancel another out: with counts only, the sum is at least each of its parts,
   * never below the real count.
   */
  private countListener(listener: string, value: number): void {
    if (listener === '' || isPerHandler(listener)) return;
    if (!Number.isSafeInteger(value) || value < 0 || Object.is(value, -0)) {
      throw new MalformedStats(`the gauge of listener ${shortName(listener)} is ${String(value)}, not a count`);
    }

    const role = roleOf(listener, this.excludes);
    if (role !== 'admin') this.visible++;
    if (role === 'counted') {
      this.total += value;
      if (value > 0) this.noteOpen(listener, value);
    }
    if (this.listeners.length < this.keepListeners) this.listeners.push({ listener, active: value, role });
    else this.omitted++;
  }

  /** Keeps the MAX_OPEN_LISTENERS_KEPT listeners with the most connections; scans `open` only to replace one. */
  private noteOpen(name: string, connections: number): void {
    const open = this.open;
    if (open.length < MAX_OPEN_LISTENERS_KEPT) {
      open.push({ name, connections });
      if (open.length === MAX_OPEN_LISTENERS_KEPT) this.openFloor = Math.min(...open.map((l) => l.connections));
      return;
    }
    this.openOmitted++;
    if (connections <= this.openFloor) return;
    let smallest = 0;
    for (let i = 1; i < open.length; i++) if ((open[i] as OpenListener).connections < (open[smallest] as OpenListener).connections) smallest = i;
    open[smallest] = { name, connections };
    this.openFloor = Math.min(...open.map((l) => l.connections));
  }

  private resetCount(): void {
    this.visible = 0;
    this.total = 0;
    this.listeners = [];
    this.omitted = 0;
    this.open = [];
    this.openOmitted = 0;
    this.openFloor = 0;
  }
}

/**
 * Counts a whole `/stats?format=json` body at once (the scanner fed in one piece). Throws on a body
 * that is not Envoy's JSON shape.
 */
export function countConnections(body: string | Uint8Array, excludes: readonly ListenerMatcher[], keepListeners = Number.MAX_SAFE_INTEGER): ConnectionCount {
  const scanner = new ListenerGaugeScanner(excludes, keepListeners);
  scanner.push(typeof body === 'string' ? utf8Encode(body) : body);
  const scan = scanner.finish();
  if (!scan.ok) throw new Error(scan.error);
  return { total: scan.total, listeners: scan.listeners, omitted: scan.omitted, open: scan.open, openOmitted: scan.openOmitted };
}
