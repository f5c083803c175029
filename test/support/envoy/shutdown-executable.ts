/**
 * Helpers for end-to-end tests of the built `envoy-shutdown` executable: build it when stale, install
 * it, run it as a separate process and read back its JSON log lines.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

export const ROOT = join(__dirname, '../../..');
export const BUILT_DIR = join(ROOT, 'dist/envoy-shutdown');
export const BUILT_EXECUTABLE = join(BUILT_DIR, 'envoy-shutdown');
const NODE = join(ROOT, 'node_modules/.bin/node');
const LOCK = join(ROOT, 'dist/.envoy-shutdown.build-lock');

function newestSourceMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSourceMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

function isFresh(): boolean {
  if (!existsSync(BUILT_EXECUTABLE)) return false;
  const sources = Math.max(newestSourceMtime(join(ROOT, 'src/shutdown')), statSync(join(ROOT, 'src/version.ts')).mtimeMs);
  return statSync(BUILT_EXECUTABLE).mtimeMs >= sources;
}

/**
 * Builds `dist/envoy-shutdown` unless it is newer than every source file. Jest runs suites in parallel
 * workers, so one worker builds under an exclusive lock file while the others wait for it.
 */
export async function ensureBuilt(): Promise<void> {
  if (isFresh()) return;
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  let lock: number;
  try {
    lock = openSync(LOCK, 'wx');
  } catch {
    const giveUpAt = performance.now() + 120_000;
    while (existsSync(LOCK) && performance.now() < giveUpAt) await new Promise((r) => setTimeout(r, 100));
    if (!isFresh()) throw new Error('envoy-shutdown build by another jest worker did not finish');
    return;
  }
  try {
    execFileSync(NODE, [join(ROOT, 'src/shutdown/build/build-executable.mjs')], { stdio: 'pipe' });
  } finally {
    closeSync(lock);
    rmSync(LOCK, { force: true });
  }
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
  return { child, spawnedAt, finished };
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
