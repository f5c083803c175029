/**
 * `drainguard completion bash|zsh|fish`, printed by the built CLI and run in the real shells: what
 * completes is what the command table says, so every command and every flag of every command is
 * offered, and the values of flags that have few.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMMANDS } from '../../../src/cli/commands';
import { assertDistBuilt } from '../../support/build';
import { spawnDrainguard, stopAll } from './spawn-cli';

const directory = mkdtempSync(join(tmpdir(), 'drainguard-completion-'));
const scripts: Record<string, string> = {};
beforeAll(async () => {
  assertDistBuilt();
  for (const shell of ['bash', 'zsh', 'fish']) {
    const printed = await spawnDrainguard(['completion', shell]);
    expect(printed.stderr).toBe('');
    expect(printed.status).toBe(0);
    scripts[shell] = join(directory, `drainguard.${shell}`);
    writeFileSync(scripts[shell]!, printed.stdout);
  }
  // A file and a directory for file-name completion.
  writeFileSync(join(directory, 'envoy.yaml'), '');
});
afterEach(() => stopAll());
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function run(shell: string, args: string[], script: string): string {
  const result = spawnSync(shell, [...args, script], { cwd: directory, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: directory } });
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  return result.stdout;
}

const allFlags = (name: string) =>
  Object.entries(COMMANDS.find((command) => command.name === name)!.flags).flatMap(([flag, spec]) => [`--${flag}`, ...(spec.short ? [`-${spec.short}`] : [])]);

describe('bash', () => {
  /** COMPREPLY for the words typed so far, the last one being completed, as bash's completion calls the function. */
  const complete = (...words: string[]): string[] => {
    const assignments = `COMP_WORDS=(${words.map((word) => `'${word}'`).join(' ')}); COMP_CWORD=${words.length - 1}`;
    const out = run('bash', ['--norc', '--noprofile', '-c'], `source '${scripts.bash}'; ${assignments}; _drainguard; printf '%s\\n' "\${COMPREPLY[@]}"`);
    return out.split('\n').filter(Boolean);
  };

  test('registers the function for drainguard', () => {
    expect(run('bash', ['--norc', '--noprofile', '-c'], `source '${scripts.bash}'; complete -p drainguard`).trim()).toBe('complete -o filenames -F _drainguard drainguard');
  });

  test('commands, then every flag of each command', () => {
    expect(complete('drainguard', '')).toEqual(COMMANDS.map((command) => command.name));
    expect(complete('drainguard', 'ch')).toEqual(['check']);
    for (const command of COMMANDS) expect(complete('drainguard', command.name, '-').sort()).toEqual(allFlags(command.name).sort());
    expect(complete('drainguard', 'check', '--all')).toEqual(['--all-namespaces']);
  });

  test('flag values: the few a flag accepts, file names for FILE, nothing for free text; --flag=value too', () => {
    expect(complete('drainguard', 'check', '-o', '')).toEqual(['text', 'json']);
    expect(complete('drainguard', 'check', '--pre', '--tls-mode', 'c')).toEqual(['certManager']);
    expect(complete('drainguard', 'serve', '--tls-mode', '')).toEqual(['files', 'self']);
    expect(complete('drainguard', 'serve', '--log-level', '')).toEqual(['trace', 'debug', 'info', 'warn', 'error', 'fatal']);
    expect(complete('drainguard', 'report', '--log-level', 'w')).toEqual(['warn']);
    expect(complete('drainguard', 'check', '--output', '=', 'j')).toEqual(['json']);
    expect(complete('drainguard', 'inject', '-f', 'env')).toEqual(['envoy.yaml']);
    expect(complete('drainguard', 'check', '-n', '')).toEqual([]);
  });

  test('the argument of completion and help', () => {
    expect(complete('drainguard', 'completion', '')).toEqual(['bash', 'zsh', 'fish']);
    expect(complete('drainguard', 'help', 'in')).toEqual(['inject']);
    // Once the argument is given, only flags are left.
    expect(complete('drainguard', 'completion', 'bash', '')).toEqual(['--help', '-h']);
  });
});

describe('zsh', () => {
  // Outside a completion widget zsh's compadd and _describe cannot run: stand-ins print what the script
  // hands them, and the rest of the script runs in the real zsh.
  const STAND_INS = `compadd() { [[ $1 == -- ]] && shift; print -rl -- "$@" }; _describe() { local name=\${@[-1]}; print -rl -- \${(P)name} }; _files() { print -- '<files>' }`;
  const complete = (...words: string[]): string[] => {
    const out = run('zsh', ['-f', '-c'], `${STAND_INS}; source '${scripts.zsh}'; words=(${words.map((word) => `'${word}'`).join(' ')}); CURRENT=${words.length}; _drainguard`);
    return out.split('\n').filter(Boolean);
  };

  test('registers with compinit', () => {
    expect(run('zsh', ['-f', '-c'], `autoload -U compinit; compinit -u -D; source '${scripts.zsh}'; print -- $_comps[drainguard]`).trim()).toBe('_drainguard');
  });

  test('commands with their summaries, flags with their descriptions, flag values, files', () => {
    expect(complete('drainguard', '')).toEqual(COMMANDS.map((command) => `${command.name}:${command.summary.replaceAll(':', '\\:')}`));
    const flags = complete('drainguard', 'check', '-').map((entry) => entry.split(':')[0]);
    expect(flags.sort()).toEqual(allFlags('check').sort());
    expect(complete('drainguard', 'check', '-o', '')).toEqual(['text', 'json']);
    expect(complete('drainguard', 'serve', '--tls-mode', '')).toEqual(['files', 'self']);
    expect(complete('drainguard', 'inject', '--config', '')).toEqual(['<files>']);
    expect(complete('drainguard', 'completion', '')).toEqual(['bash', 'zsh', 'fish']);
  });
});

describe('fish', () => {
  /** What fish itself completes for a command line: `complete -C`, one `candidate<TAB>description` per line. */
  const complete = (line: string): string[] => {
    const out = run('fish', ['--no-config', '-c'], `source '${scripts.fish}'; complete -C '${line}'`);
    return out
      .split('\n')
      .filter(Boolean)
      .map((entry) => entry.split('\t')[0]!);
  };

  test('commands, flags, values, the completion argument', () => {
    expect(complete('drainguard ').sort()).toEqual(COMMANDS.map((command) => command.name).sort());
    expect(complete('drainguard che')).toEqual(['check']);
    const longFlags = Object.keys(COMMANDS.find((command) => command.name === 'inject')!.flags).map((flag) => `--${flag}`);
    expect(complete('drainguard inject --').sort()).toEqual(longFlags.sort());
    expect(complete('drainguard check -o ').sort()).toEqual(['json', 'text']);
    expect(complete('drainguard check --tls-mode ').sort()).toEqual(['certManager', 'secret', 'self']);
    expect(complete('drainguard serve --tls-mode ').sort()).toEqual(['files', 'self']);
    expect(complete('drainguard serve --log-level ').sort()).toEqual(['debug', 'error', 'fatal', 'info', 'trace', 'warn']);
    expect(complete('drainguard completion ').sort()).toEqual(['bash', 'fish', 'zsh']);
    expect(complete('drainguard inject -f env')).toEqual(['envoy.yaml']);
  });
});
