/**
 * Helpers for end-to-end tests of the built `envoy-shutdown` executable: install it, run it as a
 * separate process and read back its JSON log lines.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { assertBuilt, REPO_ROOT, SHUTDOWN_DIR, SHUTDOWN_EXECUTABLE } from '../build';

export const ROOT = REPO_ROOT;
export const BUILT_DIR = SHUTDOWN_DIR;
export const BUILT_EXECUTABLE = SHUTDOWN_EXECUTABLE;

/** jest's globalSetup builds the executable before any worker starts; this only checks it is there. */
export async function ensureBuilt(): Promise<void> {
  assertBuilt();
}

export function installTo(dir: string, executable = BUILT_EXECUTABLE): string {
  execFileSync(executable, ['install', '--to', dir], { stdio: 'pipe' });
  return join(dir, 'envoy-shutdown');
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
