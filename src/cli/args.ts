import { parseArgs } from 'node:util';
import { UsageError } from './errors';
import { didYouMean } from './suggest';

/**
 * A strict flag parser shared by every subcommand: a thin layer over `node:util` parseArgs that turns
 * its errors into UsageErrors naming the subcommand, and also rejects what parseArgs silently accepts
 * (a single-valued flag given twice, positional arguments).
 */

export interface FlagSpec {
  type: 'boolean' | 'string';
  /** One-letter alias, e.g. `f` for `-f`. */
  short?: string;
  /** String flags only: may be repeated, values collected in order. */
  multiple?: boolean;
  /** Placeholder shown in help, e.g. `FILE`; `FILE` values complete as file names. */
  valueName?: string;
  /** The values a string flag accepts, when there are few (`-o text|json`): offered by completion. */
  values?: readonly string[];
  description: string;
}

export type FlagSpecs = Record<string, FlagSpec>;

export type ParsedFlags<S extends FlagSpecs> = {
  [K in keyof S]: S[K]['type'] extends 'boolean'
    ? boolean
    : S[K]['multiple'] extends true
      ? string[]
      : string | undefined;
};

/** `command` is how the user typed the subcommand (`drainguard inject`), used in messages. */
export function parseFlags<S extends FlagSpecs>(command: string, argv: readonly string[], specs: S): ParsedFlags<S> {
  const options: Record<string, { type: 'boolean' | 'string'; short?: string; multiple?: boolean }> = {};
  for (const [name, spec] of Object.entries(specs)) {
    options[name] = { type: spec.type, multiple: spec.multiple ?? false, ...(spec.short ? { short: spec.short } : {}) };
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false, tokens: true });
  } catch (error) {
    throw new UsageError(`${command}: ${describeParseError(error, specs)} (see '${command} --help')`);
  }

  const seen = new Set<string>();
  for (const token of parsed.tokens ?? []) {
    if (token.kind !== 'option') continue;
    const spec = specs[token.name];
    if (spec && spec.type === 'string' && !spec.multiple && seen.has(token.name)) {
      throw new UsageError(`${command}: ${token.rawName} may be given only once (see '${command} --help')`);
    }
    seen.add(token.name);
  }

  const result: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const value = parsed.values[name];
    if (spec.type === 'boolean') result[name] = value === true;
    else if (spec.multiple) result[name] = Array.isArray(value) ? value : [];
    else result[name] = value;
  }
  return result as ParsedFlags<S>;
}

/** Every way to write the flags of `specs`: `--name`, and `-x` for those with a short form. */
export function flagForms(specs: FlagSpecs): string[] {
  return Object.entries(specs).flatMap(([name, spec]) => [`--${name}`, ...(spec.short ? [`-${spec.short}`] : [])]);
}

function describeParseError(error: unknown, specs: FlagSpecs): string {
  const code = (error as { code?: unknown }).code;
  // Read by shape, not `instanceof Error`: an error from another realm (jest's module sandbox) is no
  // instance of this realm's Error, and String() would add its class and code to the message.
  const raw = (error as { message?: unknown } | null)?.message;
  const message = typeof raw === 'string' ? raw : String(error);
  // parseArgs' messages are fine except for a multi-line hint aimed at library users; keep the first line.
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const flag = /'([^']+)'/.exec(message)?.[1];
    return `unknown flag ${flag ?? message}${flag === undefined ? '' : didYouMean(flag.split('=')[0]!, flagForms(specs))}`;
  }
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    const arg = /'([^']+)'/.exec(message)?.[1];
    return `unexpected argument '${arg ?? message}' (this command takes only flags)`;
  }
  return (message.split('\n')[0] ?? message).replace(/^Option /, 'flag ');
}

/** Aligned `  -f, --file FILE   description` lines for a usage text. */
export function formatFlagHelp(specs: FlagSpecs): string {
  const rows = Object.entries(specs).map(([name, spec]) => {
    const names = `${spec.short ? `-${spec.short}, ` : '    '}--${name}`;
    return [spec.type === 'string' ? `${names} ${spec.valueName ?? 'VALUE'}` : names, spec.description] as const;
  });
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, description]) => `  ${left.padEnd(width)}   ${description}`).join('\n');
}
