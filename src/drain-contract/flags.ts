/**
 * A strict argv parser for flag tables: the drain program's, and the drainguard CLI's.
 * Part of the drain contract (index.ts): imports nothing outside this folder and nothing from Node.
 */
import { readAdminAddress, type AdminAddress } from './admin-address';
import { DURATION_FORM, parseDuration } from './duration';
import { MAX_MIN_CONNECTIONS } from './limits';
import { LISTENER_PATTERN_FORM, readListenerPattern } from './listener-pattern';
import { terminationMessagePathProblem } from './paths';
import { UsageError } from './usage-error';

export type FlagKind = 'duration' | 'count' | 'address' | 'listener-pattern' | 'file' | 'string' | 'boolean';

export interface FlagSpec {
  readonly kind: FlagKind;
  readonly help: string;
  /** As the user would type it: shown in the usage text, and parsed like a given value when the flag is absent. */
  readonly default?: string;
  readonly repeatable?: boolean;
  /** A single-valued flag that may be left out, and then sets nothing. */
  readonly optional?: boolean;
  /** Durations only: 0 is refused. */
  readonly positive?: boolean;
  /** Name of the value in the usage text (e.g. DIR); derived from the kind when absent. */
  readonly placeholder?: string;
  /**
   * One letter that also names the flag (`-f FILE`, `-fFILE`, `-f=FILE`; switches group: `-Ah`). The
   * drainguard CLI's flags have them; the drain flags have none, so for the drain program anything
   * that does not start with `--` stays an unexpected argument.
   */
  readonly short?: string;
}

export interface ParseOptions {
  /**
   * `refuse`: a value taken from the next argument may not look like a flag (`--port -1` is a missing
   * value, not -1; `--port=-1` says it is one), as the CLI wants. The drain program takes the next
   * argument as it is, as the webhook writes it.
   */
  readonly flagLikeValues?: 'accept' | 'refuse';
}

/** duration → milliseconds, count → number, address → AdminAddress, listener-pattern → its (valid) text, file → the path, boolean → true. */
export type FlagValue = number | string | boolean | AdminAddress;
export type ParsedFlags = Map<string, FlagValue[]>;

const PLACEHOLDERS: Record<FlagKind, string> = { duration: 'DURATION', count: 'N', address: 'ADDRESS', 'listener-pattern': 'PATTERN', file: 'PATH', string: 'VALUE', boolean: '' };

function quotedForMessage(text: string): string {
  return JSON.stringify(text.length > 64 ? `${text.slice(0, 61)}...` : text);
}

/** A count as written: no sign, no leading zero, at most 7 digits (the range is checked after). */
const COUNT = /^(0|[1-9][0-9]{0,6})$/;
/** `--name` or `--name=value`; the value may hold anything, newlines included. */
const FLAG_ARGUMENT = /^--([a-z][a-z-]*)(?:=(.*))?$/s;
/** `-x`, then whatever follows in the same argument (a value, or more switches). */
const SHORT_ARGUMENT = /^-([A-Za-z])(.*)$/s;

/** One value of a flag, checked as its kind says; throws UsageError. The formatter checks what it writes with it. */
export function parseValue(name: string, spec: FlagSpec, text: string): FlagValue {
  switch (spec.kind) {
    case 'duration': {
      const ms = parseDuration(text);
      if (ms === undefined) throw new UsageError(`--${name} ${quotedForMessage(text)}: expected ${DURATION_FORM}`);
      if (spec.positive && ms === 0) throw new UsageError(`--${name} must be greater than 0`);
      return ms;
    }
    case 'count': {
      const count = COUNT.test(text) ? Number(text) : Infinity;
      if (count > MAX_MIN_CONNECTIONS) throw new UsageError(`--${name} ${quotedForMessage(text)}: expected a whole number from 0 to ${MAX_MIN_CONNECTIONS}`);
      return count;
    }
    case 'address': {
      const reading = readAdminAddress(text);
      if (!reading.ok) throw new UsageError(`--${name}: admin address ${quotedForMessage(text)}: ${reading.problem}`);
      return reading.address;
    }
    case 'listener-pattern': {
      const reading = readListenerPattern(text);
      if (!reading.ok) throw new UsageError(`--${name} ${quotedForMessage(text)}: ${reading.problem}; expected ${LISTENER_PATTERN_FORM}`);
      return text;
    }
    case 'file': {
      const problem = terminationMessagePathProblem(text);
      if (problem !== undefined) throw new UsageError(`--${name} ${quotedForMessage(text)}: ${problem}`);
      return text;
    }
    case 'string':
      return text;
    case 'boolean':
      return true;
  }
}

/**
 * A strict flag parser: `--name value` or `--name=value` (and `-x` for flags with a short form).
 * Every value the webhook writes becomes part of an exec hook, so anything unexpected (an unknown
 * flag, a missing or malformed value, a single-valued flag given twice, a stray argument) is a
 * UsageError rather than a guess.
 */
export function parseFlags(args: readonly string[], specs: Readonly<Record<string, FlagSpec>>, options: ParseOptions = {}): ParsedFlags {
  const parsed: ParsedFlags = new Map();
  const shorts: Record<string, string> = {};
  for (const [name, spec] of Object.entries(specs)) if (spec.short !== undefined) shorts[spec.short] = name;
  const hasShorts = Object.keys(shorts).length > 0;
  // Grouped switches (`-Ah`) are taken apart into this queue, one flag at a time.
  const queue = [...args];
  for (let i = 0; i < queue.length; i++) {
    const arg = queue[i] as string;
    let name: string;
    let written: string;
    let text: string | undefined;
    const long = FLAG_ARGUMENT.exec(arg);
    const short = long || !hasShorts ? null : SHORT_ARGUMENT.exec(arg);
    if (long) {
      name = long[1] as string;
      written = `--${name}`;
      text = long[2];
    } else if (short) {
      const letter = short[1] as string;
      if (!Object.prototype.hasOwnProperty.call(shorts, letter)) throw new UsageError(`unknown flag -${letter}`);
      name = shorts[letter] as string;
      written = `-${letter}`;
      const rest = short[2] as string;
      if (specs[name]!.kind === 'boolean') {
        if (rest.startsWith('=')) throw new UsageError(`${written} takes no value`);
        if (rest !== '') queue.splice(i + 1, 0, `-${rest}`);
      } else if (rest !== '') text = rest.startsWith('=') ? rest.slice(1) : rest;
    } else throw new UsageError(`unexpected argument ${quotedForMessage(arg)}`);
    // Not Object.hasOwn: the drain program's runtime (QuickJS 2021-03-27) predates ES2022.
    const spec = Object.prototype.hasOwnProperty.call(specs, name) ? specs[name] : undefined;
    if (spec === undefined) throw new UsageError(`unknown flag --${name}`);
    if (spec.kind === 'boolean') {
      if (text !== undefined) throw new UsageError(`${written} takes no value`);
    } else if (text === undefined) {
      text = queue[++i];
      if (text === undefined) throw new UsageError(`${written} needs a value`);
      if (options.flagLikeValues === 'refuse' && text.startsWith('-') && text !== '-') {
        throw new UsageError(`${written} needs a value: ${quotedForMessage(text)} looks like a flag (write ${written}=${text} if it is the value)`);
      }
    }
    const values = parsed.get(name) ?? [];
    if (values.length > 0 && !spec.repeatable) throw new UsageError(`--${name} given more than once`);
    values.push(parseValue(name, spec, text ?? ''));
    parsed.set(name, values);
  }
  for (const [name, spec] of Object.entries(specs)) {
    if (!parsed.has(name) && spec.default !== undefined) parsed.set(name, [parseValue(name, spec, spec.default)]);
  }
  return parsed;
}

/** The flags part of a usage text: one entry per flag, with its default. */
export function flagUsage(specs: Readonly<Record<string, FlagSpec>>): string {
  return Object.entries(specs)
    .map(([name, spec]) => {
      const placeholder = spec.placeholder ?? PLACEHOLDERS[spec.kind];
      const value = placeholder ? ` ${placeholder}` : '';
      const extra = [spec.default !== undefined ? `default ${spec.default}` : '', spec.repeatable ? 'repeatable' : '']
        .filter(Boolean)
        .join(', ');
      return `  --${name}${value}\n      ${spec.help}${extra ? ` (${extra})` : ''}`;
    })
    .join('\n');
}
