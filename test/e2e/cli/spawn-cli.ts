import { spawn, type ChildProcess } from 'node:child_process';
import { CLI_MAIN } from '../../support/build';
import { NODE, REPO_ROOT } from '../../support/repo';

/**
 * The built CLI as a separate process, run without blocking this one (which may run a cluster's kubelet
 * stand-in, or a proxy the CLI talks to). Every process started and not yet exited is killed by
 * `stopAll`, which a suite calls in afterEach, so a failing test leaves nothing behind.
 */

export interface Finished {
  status: number | null;
  stdout: string;
  stderr: string;
}

const running = new Set<ChildProcess>();

export function stopAll(): void {
  for (const child of running) child.kill('SIGKILL');
}

export interface SpawnOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Replaces the whole command line: e.g. `script` around the CLI, to give it a terminal. */
  command?: readonly [string, ...string[]];
}

export function spawnDrainguard(args: readonly string[], options: SpawnOptions = {}): Promise<Finished> & { child: ChildProcess } {
  const [file, ...fileArgs] = options.command ?? [NODE, CLI_MAIN, ...args];
  const child = spawn(file, fileArgs, { cwd: options.cwd ?? REPO_ROOT, env: { PATH: process.env.PATH ?? '', ...options.env } });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const finished = new Promise<Finished>((resolve) =>
    child.once('close', (status) => {
      running.delete(child);
      resolve({ status, stdout, stderr });
    }),
  );
  return Object.assign(finished, { child });
}

/** A shell-quoted command line for `script -c` (which runs it with sh). */
export function shellLine(words: readonly string[]): string {
  return words.map((word) => `'${word.replaceAll("'", "'\\''")}'`).join(' ');
}

/** The CLI under a pseudo-terminal (util-linux `script`), as a person runs it: stdout and stderr are that terminal. */
export function underTerminal(args: readonly string[]): readonly [string, ...string[]] {
  return ['script', '--quiet', '--return', '--command', shellLine([NODE, CLI_MAIN, ...args]), '/dev/null'];
}
