import type { FlagSpec, FlagSpecs } from './args';

/**
 * Shell completion scripts for bash, zsh and fish, written from the same command and flag table that
 * parses the command line and prints `--help` (src/cli/commands.ts), so a flag cannot be completed
 * that the parser refuses, nor the reverse. The scripts are static: completing never runs drainguard.
 *
 * What completes: the command after `drainguard`; a command's flags (long and short forms); after a
 * flag that takes a value, its values when there are few (`-o text|json`), file names for FILE, and
 * nothing otherwise; the argument of `help` (a command) and of `completion` (a shell).
 */

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

export interface CompletedCommand {
  name: string;
  summary: string;
  flags: FlagSpecs;
  /** The values of the command's one positional argument, if it takes one. */
  argument?: readonly string[];
}

export function completionScript(shell: Shell, program: string, commands: readonly CompletedCommand[]): string {
  switch (shell) {
    case 'bash':
      return bashScript(program, commands);
    case 'zsh':
      return zshScript(program, commands);
    case 'fish':
      return fishScript(program, commands);
  }
}

/** A shell function name for the program: `drainguard` → `_drainguard`. */
function functionName(program: string): string {
  return `_${program.replace(/[^A-Za-z0-9_]/g, '_')}`;
}

const takesValue = (spec: FlagSpec) => spec.type === 'string';
const completesFiles = (spec: FlagSpec) => spec.valueName === 'FILE';

function forms(name: string, spec: FlagSpec): string[] {
  return [`--${name}`, ...(spec.short ? [`-${spec.short}`] : [])];
}

/** Single-quoted for sh, bash, zsh and fish alike: every value here is a plain word or a description. */
function quote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

function fishQuote(text: string): string {
  // fish's single quotes escape only \ and '.
  return `'${text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}

function bashScript(program: string, commands: readonly CompletedCommand[]): string {
  const fn = functionName(program);
  const valueCases = (command: CompletedCommand) =>
    Object.entries(command.flags)
      .filter(([, spec]) => takesValue(spec))
      .map(([name, spec]) => {
        const pattern = forms(name, spec).join('|');
        const reply = completesFiles(spec)
          ? 'COMPREPLY=($(compgen -f -- "$cur"))'
          : spec.values
            ? `COMPREPLY=($(compgen -W ${quote(spec.values.join(' '))} -- "$cur"))`
            : 'COMPREPLY=()';
        return `        ${pattern}) ${reply}; return ;;`;
      });
  const commandCases = commands.map((command) => {
    const flags = Object.entries(command.flags).flatMap(([name, spec]) => forms(name, spec));
    const argument = command.argument
      ? `      if [[ "$cur" != -* && $positionals -eq 0 ]]; then COMPREPLY=($(compgen -W ${quote(command.argument.join(' '))} -- "$cur")); return; fi`
      : '';
    return [
      `    ${command.name})`,
      '      case "$flag" in',
      ...valueCases(command),
      '      esac',
      ...(argument ? [argument] : []),
      `      COMPREPLY=($(compgen -W ${quote(flags.join(' '))} -- "$cur"))`,
      '      ;;',
    ].join('\n');
  });
  return `# ${program} completion for bash. Load it with:
#   source <(${program} completion bash)
# or write it to a file bash-completion reads (e.g. ~/.local/share/bash-completion/completions/${program}).
${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" flag="\${COMP_WORDS[COMP_CWORD-1]}"
  # With '=' in COMP_WORDBREAKS, --output=js is three words: --output, =, js.
  if [[ "$cur" == "=" ]]; then cur=""; fi
  if [[ "$flag" == "=" && $COMP_CWORD -ge 2 ]]; then flag="\${COMP_WORDS[COMP_CWORD-2]}"; fi
  if [[ $COMP_CWORD -le 1 ]]; then
    COMPREPLY=($(compgen -W ${quote(commands.map((c) => c.name).join(' '))} -- "$cur"))
    return
  fi
  # Arguments already given after the command that are not flags (the positional argument).
  local positionals=0 i
  for ((i = 2; i < COMP_CWORD; i++)); do
    [[ "\${COMP_WORDS[i]}" == -* || "\${COMP_WORDS[i-1]}" == -* ]] || positionals=$((positionals + 1))
  done
  case "\${COMP_WORDS[1]}" in
${commandCases.join('\n')}
  esac
}
complete -o filenames -F ${fn} ${program}
`;
}

function zshScript(program: string, commands: readonly CompletedCommand[]): string {
  const fn = functionName(program);
  const describe = (text: string) => text.replaceAll(':', '\\:');
  const commandCases = commands.map((command) => {
    const valueCases = Object.entries(command.flags)
      .filter(([, spec]) => takesValue(spec))
      .map(([name, spec]) => {
        const pattern = forms(name, spec).join('|');
        const action = completesFiles(spec) ? "_files" : spec.values ? `compadd -- ${spec.values.map(quote).join(' ')}` : ':';
        return `        ${pattern}) ${action}; return ;;`;
      });
    const flags = Object.entries(command.flags).flatMap(([name, spec]) => forms(name, spec).map((form) => quote(`${form}:${describe(spec.description)}`)));
    const argument = command.argument
      ? `      if [[ "$current" != -* && $positionals -eq 0 ]]; then compadd -- ${command.argument.map(quote).join(' ')}; return; fi`
      : '';
    return [
      `    ${command.name})`,
      '      case "$previous" in',
      ...valueCases,
      '      esac',
      ...(argument ? [argument] : []),
      `      local -a flags=(${flags.join(' ')})`,
      "      _describe -t flags 'flag' flags",
      '      ;;',
    ].join('\n');
  });
  const commandList = commands.map((command) => quote(`${command.name}:${describe(command.summary)}`)).join(' ');
  return `#compdef ${program}
# ${program} completion for zsh. Load it with:
#   source <(${program} completion zsh)
# after compinit, or write it as _${program} to a directory in $fpath.
${fn}() {
  local current="\${words[CURRENT]}" previous="\${words[CURRENT-1]}"
  if (( CURRENT <= 2 )); then
    local -a commands=(${commandList})
    _describe -t commands 'command' commands
    return
  fi
  local positionals=0 i
  for (( i = 3; i < CURRENT; i++ )); do
    [[ "\${words[i]}" == -* || "\${words[i-1]}" == -* ]] || (( positionals++ ))
  done
  case "\${words[2]}" in
${commandCases.join('\n')}
  esac
}
if (( $+functions[compdef] )); then
  compdef ${fn} ${program}
fi
`;
}

function fishScript(program: string, commands: readonly CompletedCommand[]): string {
  const names = commands.map((command) => command.name).join(' ');
  const lines = [
    `# ${program} completion for fish. Load it with:`,
    `#   ${program} completion fish | source`,
    `# or write it to ~/.config/fish/completions/${program}.fish.`,
    `complete -c ${program} -f`,
    ...commands.map(
      (command) => `complete -c ${program} -n ${fishQuote(`not __fish_seen_subcommand_from ${names}`)} -a ${command.name} -d ${fishQuote(command.summary)}`,
    ),
  ];
  for (const command of commands) {
    const when = `-n ${fishQuote(`__fish_seen_subcommand_from ${command.name}`)}`;
    if (command.argument) lines.push(`complete -c ${program} ${when} -a ${fishQuote(command.argument.join(' '))}`);
    for (const [name, spec] of Object.entries(command.flags)) {
      const short = spec.short ? ` -s ${spec.short}` : '';
      const value = !takesValue(spec) ? '' : completesFiles(spec) ? ' -r -F' : spec.values ? ` -x -a ${fishQuote(spec.values.join(' '))}` : ' -x';
      lines.push(`complete -c ${program} ${when}${short} -l ${name}${value} -d ${fishQuote(spec.description)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
