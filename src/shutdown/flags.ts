/**
 * A strict flag parser. Every value becomes part of an exec hook computed by the webhook, so anything
 * unexpected (unknown flag, missing or malformed value, a single-valued flag given twice) is an error
 * instead of being guessed at.
 */
import { parseDuration } from './duration';

export class UsageError extends Error {}

export type FlagKind = 'duration' | 'count' | 'string' | 'regex' | 'boolean';

export interface FlagSpec {
  kind: FlagKind;
  repeatable?: boolean;
  help: string;
  /** Default as the user would type it; shown in usage text and parsed like a given value. */
  default?: string;
  /** Name of the value in usage text (e.g. DIR); derived from the kind when absent. */
  placeholder?: string;
}

const PLACEHOLDERS: Record<FlagKind, string> = { duration: 'DURATION', count: 'N', string: 'VALUE', regex: 'REGEX', boolean: '' };

export type FlagValue = number | string | RegExp | boolean;
export type ParsedFlags = Map<string, FlagValue[]>;

function parseValue(name: string, kind: FlagKind, text: string): FlagValue {
  switch (kind) {
    case 'duration': {
      const ms = parseDuration(text);
      if (ms === undefined) throw new UsageError(`--${name} ${JSON.stringify(text)}: expected a duration like 290s or 500ms`);
      return ms;
    }
    case 'count': {
      if (!/^\d{1,9}$/.test(text)) throw new UsageError(`--${name} ${JSON.stringify(text)}: expected a whole number >= 0`);
      return Number(text);
    }
    case 'regex':
      try {
        return new RegExp(text);
      } catch (error) {
        throw new UsageError(`--${name} ${JSON.stringify(text)}: invalid regular expression (${(error as Error).message})`);
      }
    case 'string':
      return text;
    case 'boolean':
      return true;
  }
}

export function parseFlags(args: readonly string[], specs: Readonly<Record<string, FlagSpec>>): ParsedFlags {
  const parsed: ParsedFlags = new Map();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const match = /^--([a-z][a-z-]*)(?:=(.*))?$/s.exec(arg);
    if (!match) throw new UsageError(`unexpected argument ${JSON.stringify(arg)}`);
    const name = match[1] as string;
    const spec = specs[name];
    if (!spec) throw new UsageError(`unknown flag --${name}`);
    let text = match[2];
    if (spec.kind === 'boolean') {
      if (text !== undefined) throw new UsageError(`--${name} takes no value`);
    } else if (text === undefined) {
      text = args[++i];
      if (text === undefined) throw new UsageError(`--${name} needs a value`);
    }
    const values = parsed.get(name) ?? [];
    if (values.length > 0 && !spec.repeatable) throw new UsageError(`--${name} given more than once`);
    values.push(parseValue(name, spec.kind, text ?? ''));
    parsed.set(name, values);
  }
  for (const [name, spec] of Object.entries(specs)) {
    if (!parsed.has(name) && spec.default !== undefined) parsed.set(name, [parseValue(name, spec.kind, spec.default)]);
  }
  return parsed;
}

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
