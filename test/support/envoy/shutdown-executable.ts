/**
 * Helpers for end-to-end tests of the built `envoy-shutdown` executables: one target per architecture
 * (the one of this host runs directly, the other under Debian's qemu-user-static), install, run as a
 * separate process, read back the JSON log lines.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { assertShutdownBuilt, SHUTDOWN_ARCHES, shutdownDir, shutdownExecutable, type ShutdownArch } from '../drain-executables';
import { REPO_ROOT } from '../repo';
import { inRootCommand } from './roots';

export const ROOT = REPO_ROOT;

const QEMU_NAME: Record<ShutdownArch, string> = { amd64: 'x86_64', arm64: 'aarch64' };
const HOST_NAME: Record<ShutdownArch, string> = { amd64: 'x86-64', arm64: 'arm64' };
export const HOST_ARCH: ShutdownArch = process.arch === 'arm64' ? 'arm64' : 'amd64';

/** One architecture's build, and how this host runs it. */
export interface ShutdownTarget {
  arch: ShutdownArch;
  /** dist/envoy-shutdown/linux-<arch>: the executable alone. */
  builtDir: string;
  built: string;
  /** The qemu-user binary that runs it here, when it is not this host's architecture. */
  emulator: string | undefined;
  /** For describe blocks: says whether the tests depend on the host's architecture. */
  title: string;
  /**
   * Run inside an empty root (no libc; only the static qemu binary when emulated), chrooted as uid
   * 65534 with /proc and /dev mounted privately, as in a scratch image. The e2e harness builds the root.
   */
  inEmptyRoot: boolean;
}

export const TARGETS: ShutdownTarget[] = SHUTDOWN_ARCHES.map((arch) => {
  const emulator = arch === HOST_ARCH ? undefined : `qemu-${QEMU_NAME[arch]}-static`;
  return {
    arch,
    builtDir: shutdownDir(arch),
    built: shutdownExecutable(arch),
    emulator,
    title: `linux/${arch} executable, ${emulator ? `under ${emulator} on this ${HOST_NAME[HOST_ARCH]} host` : `native on this ${HOST_NAME[HOST_ARCH]} host`}`,
    inEmptyRoot: false,
  };
});

/**
 * What the end-to-end drain suites run against: the host's executable directly, and the other
 * architecture's under qemu-user in an empty root (no libc) as uid 65534.
 */
export const E2E_TARGETS: ShutdownTarget[] = TARGETS.map((target) =>
  target.emulator ? { ...target, inEmptyRoot: true, title: `${target.title}, in an empty root (no libc) as uid 65534` } : target,
);

export const HOST_TARGET = TARGETS.find((t) => t.arch === HOST_ARCH) as ShutdownTarget;

/**
 * The Envoy releases the drain suites play against, on each target: the last release before 1.40's
 * drain changes (PR #47042) and 1.40 itself. The simulator answers as the release it plays.
 */
export const PLAYED_ENVOY_RELEASES = ['1.39.0', '1.40.0'] as const;

/** A target with the Envoy release its simulators play. */
export interface E2ECase extends ShutdownTarget {
  envoyRelease: string;
}

/** Each E2E target against each played release. */
export const E2E_CASES: E2ECase[] = E2E_TARGETS.flatMap((target) =>
  PLAYED_ENVOY_RELEASES.map((envoyRelease) => ({ ...target, envoyRelease, title: `${target.title}, against Envoy ${envoyRelease}` })),
);

/** The command line that runs `program` (built for `target`) with `args` on this host. */
export function commandFor(target: ShutdownTarget, program: string, args: readonly string[]): [string, string[]] {
  return target.emulator ? [target.emulator, [program, ...args]] : [program, [...args]];
}

/** jest's globalSetup builds the executables before any worker starts; this only checks they are there. */
export async function ensureBuilt(): Promise<void> {
  assertShutdownBuilt();
}

/** `envoy-shutdown install --to DIR` with the target's built executable; returns the installed path. */
export function installTo(dir: string, target: ShutdownTarget = HOST_TARGET): string {
  const [command, args] = commandFor(target, target.built, ['install', '--to', dir]);
  execFileSync(command, args, { stdio: 'pipe' });
  return join(dir, 'envoy-shutdown');
}

/** The user the rooted targets run as (distroless's nobody). */
export const NOBODY = '65534:65534';

/**
 * Starts the installed `program` of `target` (see `start`). For a target that runs in an empty root,
 * `root` is that root: paths under it, in arguments and environment values (`unix:` addresses too), are
 * passed as the program sees them from inside.
 */
export function startProgram(target: ShutdownTarget, program: string, args: readonly string[], env: NodeJS.ProcessEnv = {}, root?: string): RunningProcess {
  if (!target.inEmptyRoot) {
    const [command, commandArgs] = commandFor(target, program, args);
    return start(command, commandArgs, env);
  }
  if (!root) throw new Error(`${target.title}: startProgram needs the root`);
  // The same translation as the harness's `seen`.
  const inside = (value: string): string => value.split(`${root}/`).join('/');
  const translatedEnv = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === undefined ? v : inside(v)]));
  return start(...inRootCommand(root, target, NOBODY, [inside(program), ...args.map(inside)]), translatedEnv);
}

export interface LogLine {
  phase: string;
  [field: string]: unknown;
}

export interface FinishedRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** performance.now() in the test process when the process was spawned and when it exited. */
  spawnedAt: number;
  exitedAt: number;
  logs: LogLine[];
  stderr: string;
  stdout: string;
}

export interface RunningProcess {
  child: ChildProcess;
  spawnedAt: number;
  finished: Promise<FinishedRun>;
}

/** Processes started by `start` that have not exited yet. */
const started = new Set<RunningProcess>();

/**
 * Kills every process `start` started that is still running and waits for it to exit. Suites call it in
 * afterEach, so a failed assertion never leaves a drain program behind.
 */
export async function stopStarted(): Promise<void> {
  const running = [...started];
  for (const run of running) run.child.kill('SIGKILL');
  await Promise.allSettled(running.map((run) => run.finished));
}

/** Starts a process with drain logs on stderr (never the test machine's PID 1 stdout). */
export function start(command: string, args: string[], env: NodeJS.ProcessEnv = {}): RunningProcess {
  const spawnedAt = performance.now();
  const child = spawn(command, args, { env: { PATH: process.env.PATH, ENVOY_SHUTDOWN_LOG: 'stderr', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const finished = new Promise<FinishedRun>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      const exitedAt = performance.now();
      child.on('close', () => resolve({ code, signal, spawnedAt, exitedAt, logs: parseLogLines(stderr), stderr, stdout }));
    });
  });
  const running = { child, spawnedAt, finished };
  started.add(running);
  void finished.finally(() => started.delete(running)).catch(() => undefined);
  return running;
}

export function parseLogLines(text: string): LogLine[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

export function summaryOf(run: FinishedRun): LogLine {
  const summary = run.logs.find((line) => line.phase === 'summary');
  if (!summary) throw new Error(`no summary line; stderr:\n${run.stderr}`);
  return summary;
}
