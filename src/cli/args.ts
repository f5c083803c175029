import { parseFlags as parseContractFlags, UsageError, type FlagSpec as ContractFlagSpec } from '../drain-contract';
import { didYouMean } from './suggest';

/**
 * The flags of every drainguard subcommand, parsed by the drain contract's strict parser (the one the
 * drain program uses: src/drain-contract/flags.ts) with the CLI's additions turned on: short flags
 * (`-f`, `-n`, `-A`, `-o`) and no value that looks like a flag taken for one (`--port -1`). This file
 * only maps the CLI's flag table onto it and words the errors for the subcommand, with a "did you
 * mean" for an unknown flag.
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

function contractSpec(spec: FlagSpec): ContractFlagSpec {
  return {
    kind: spec.type === 'boolean' ? 'boolean' : 'string',
    help: spec.description,
    ...(spec.multiple ? { repeatable: true } : {}),
    ...(spec.short ? { short: spec.short } : {}),
    ...(spec.valueName ? { placeholder: spec.valueName } : {}),
  };
}

/** `command` is how the user typed the subcommand (`drainguard inject`), used in messages. */
export function parseFlags<S extends FlagSpecs>(command: string, argv: readonly string[], specs: S): ParsedFlags<S> {
  const contractSpecs: Record<string, ContractFlagSpec> = {};
  for (const [name, spec] of Object.entries(specs)) contractSpecs[name] = contractSpec(spec);
  let parsed: ReturnType<typeof parseContractFlags>;
  try {
    parsed = parseContractFlags(argv, contractSpecs, { flagLikeValues: 'refuse' });
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    const unknown = /^unknown flag (\S+)$/.exec(error.message)?.[1];
    const hint = unknown === undefined ? '' : didYouMean(unknown, flagForms(specs));
    throw new UsageError(`${command}: ${error.message}${hint} (see '${command} --help')`);
  }
  const result: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const values = parsed.get(name) ?? [];
    if (spec.type === 'boolean') result[name] = values.length > 0;
    else if (spec.multiple) result[name] = values as string[];
    else result[name] = values[0] as string | undefined;
  }
  return result as ParsedFlags<S>;
}

/** Every way to write the flags of `specs`: `--name`, and `-x` for those with a short form. */
export function flagForms(specs: FlagSpecs): string[] {
  return Object.entries(specs).flatMap(([name, spec]) => [`--${name}`, ...(spec.short ? [`-${spec.short}`] : [])]);
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
