/**
 * Runs the release's executables (and kubectl, helm, curl) as separate processes without blocking this
 * one, which may serve the download server they talk to. Every process a test starts is killed after
 * it, even when the test failed. Also used by the kube lane's test/kube/release-cli.test.ts, which runs
 * them against the real API server.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { hostArch, launcherFor, RELEASE_ARCHES, type ReleaseArch } from '../../release/pinned-node';
import { executableName } from '../../release/release';
import { CLI_MAIN } from '../support/build';
import { releasePath } from '../support/release';
import { NODE } from '../support/repo';

export interface Finished {
  status: number | null;
  stdout: string;
  stderr: string;
}

const running = new Set<ChildProcess>();
afterEach(() => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * `command` with `args`, an environment of exactly `env` (nothing inherited), and `input` on stdin, else
 * /dev/null (bash takes a socket on stdin for an ssh session and reads /etc/bash.bashrc).
 */
export function run(command: string, args: readonly string[], options: { env: NodeJS.ProcessEnv; cwd?: string; input?: string }): Promise<Finished> {
  const child = spawn(command, args, {
    env: options.env,
    stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin?.end(options.input);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (status) => {
      running.delete(child);
      resolve({ status, stdout, stderr });
    });
  });
}

/**
 * A directory for PATH holding qemu-user's emulators and nothing else, so no `node` can be found: where
 * the executables run, natively or (the other architecture) under qemu-user.
 */
export function emulatorsOnlyPath(directory: string): string {
  const bin = join(directory, 'bin');
  mkdirSync(bin);
  for (const arch of RELEASE_ARCHES) {
    const [emulator] = launcherFor(arch).command;
    if (emulator !== undefined) symlinkSync(execFileSync('sh', ['-c', `command -v ${emulator}`], { encoding: 'utf8' }).trim(), join(bin, emulator));
  }
  return bin;
}

/** The release's executable of `arch`, with exactly `bin` on PATH and `directory` as HOME and working directory. */
export function runExecutable(arch: ReleaseArch, args: readonly string[], where: { bin: string; directory: string }, env: NodeJS.ProcessEnv = {}): Promise<Finished> {
  const launcher = launcherFor(arch);
  const [command, ...prefix] = [...launcher.command, releasePath(executableName(arch))];
  return run(command!, [...prefix, ...args], { cwd: where.directory, env: { PATH: where.bin, HOME: where.directory, ...launcher.env, ...env } });
}

/** The same command through the built CLI on the pinned Node: what the executable must equal. */
export function runDistCli(args: readonly string[], where: { bin: string; directory: string }, env: NodeJS.ProcessEnv = {}): Promise<Finished> {
  return run(NODE, [CLI_MAIN, ...args], { cwd: where.directory, env: { PATH: where.bin, HOME: where.directory, ...env } });
}

/** The machine's real kubectl, which finds plugins on PATH. */
export const KUBECTL = '/usr/bin/kubectl';

/**
 * The README's PATH install in `directory`/plugins: this machine's executable as `drainguard`, and
 * `kubectl-drainguard` linked to it. Returns the directory.
 */
export function installPlugin(directory: string): string {
  const pluginDir = join(directory, 'plugins');
  mkdirSync(pluginDir);
  copyFileSync(releasePath(executableName(hostArch())), join(pluginDir, 'drainguard'));
  chmodSync(join(pluginDir, 'drainguard'), 0o755);
  symlinkSync('drainguard', join(pluginDir, 'kubectl-drainguard'));
  return pluginDir;
}

/** kubectl with a PATH of `pluginDir` and the system's directories (where kubectl's own helpers live). */
export function kubectlWithPlugins(args: readonly string[], pluginDir: string, where: { home: string; directory: string }, env: NodeJS.ProcessEnv = {}): Promise<Finished> {
  return run(KUBECTL, args, { cwd: where.directory, env: { PATH: `${pluginDir}:/usr/bin:/bin`, HOME: where.home, ...env } });
}
