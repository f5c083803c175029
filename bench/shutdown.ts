/**
 * `envoy-shutdown`, the built program (dist/envoy-shutdown), run as its own process against the Envoy
 * admin simulator over a unix socket, as Envoy's preStop would run it in a pod.
 *
 * Each drain run yields three figures: start-up (spawn → the simulator records the first admin
 * request), peak RSS (VmHWM, sampled until exit), and reaction (the last client connection closes,
 * so the count reaches the threshold 0 → the process has exited). The close is placed at a different
 * point of the 1 s poll cycle in each run, so median and max cover the whole cycle.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { EnvoyAdminSimulator } from '../test/support/envoy-admin-simulator';
import { parseLogLines } from '../test/support/envoy/shutdown-executable';
import { repoPath } from './lib/pods';
import { buildShutdownIfStale, shutdownExecutable } from '../test/support/build';
import { exited, sampleMemory, spawnTracked } from './lib/processes';
import { quantile } from './lib/stats';

export interface Spread {
  runs: number;
  median: number;
  max: number;
}

export interface ShutdownReport {
  executable: string;
  /** Executable plus lib/ (whatever `install` copies). */
  sizeBytes: number;
  files: { path: string; bytes: number }[];
  installMs: Spread;
  firstAdminRequestMs: Spread;
  /** Peak resident set size (VmHWM) in MB (10^6 bytes, the unit of the goal). */
  peakRssMB: Spread;
  pollIntervalMs: number;
  reactionMs: Spread;
}

export const POLL_INTERVAL_MS = 1000;
const GAUGES = /^\/stats\?format=json&type=Gauges/;

function spread(values: number[]): Spread {
  return { runs: values.length, median: quantile(values, 0.5), max: Math.max(...values) };
}

/** The built program, rebuilt first if it is missing or older than its sources (as the tests do). */
export function builtExecutable(progress: (line: string) => void): string {
  buildShutdownIfStale((line) => progress(`envoy-shutdown: ${line}`));
  return shutdownExecutable('amd64');
}

function filesUnder(dir: string): { path: string; bytes: number }[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => {
      const path = join(entry.parentPath, entry.name);
      return { path: path.slice(dir.length + 1), bytes: statSync(path).size };
    });
}

async function timeInstall(executable: string, workDir: string, run: number): Promise<number> {
  const started = performance.now();
  const child = spawnTracked(executable, ['install', '--to', join(workDir, `install-${run}`, 'drainguard')], { stdio: 'ignore' });
  const { code } = await exited(child);
  if (code !== 0) throw new Error(`envoy-shutdown install exited ${code}`);
  return performance.now() - started;
}

interface DrainRun {
  firstAdminRequestMs: number;
  peakRssMB: number;
  reactionMs: number;
}

/** Resolves once the simulator has answered a gauges poll after the health check was failed. */
async function waitForDrainPolling(sim: EnvoyAdminSimulator): Promise<void> {
  await sim.waitFor(() => {
    const failedAt = sim.requests.findIndex((r) => r.path === '/healthcheck/fail');
    return failedAt >= 0 && sim.requests.slice(failedAt + 1).some((r) => GAUGES.test(r.path));
  });
}

async function drainOnce(executable: string, workDir: string, run: number, runs: number): Promise<DrainRun> {
  const sim = await EnvoyAdminSimulator.start({ unixSocketPath: join(workDir, `admin-${run}.sock`) });
  const client: Socket = connect(sim.listenerPorts[0] as number, '127.0.0.1');
  client.on('error', () => undefined);
  let child: ChildProcess | undefined;
  try {
    await sim.waitFor(() => sim.activeConnections() === 1);
    const spawnedAt = performance.now();
    child = spawnTracked(
      executable,
      ['drain', '--admin', sim.adminAddress, '--deadline', '30s', '--min-drain', '0s', '--min-connections', '0', '--poll-interval', `${POLL_INTERVAL_MS}ms`],
      { env: { PATH: process.env.PATH, ENVOY_SHUTDOWN_LOG: 'stderr' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const memory = sampleMemory(child.pid as number);
    const exit = exited(child).then(() => performance.now());
    // The summary line may still be in the pipe when 'exit' fires; 'close' means stderr is complete.
    const outputComplete = new Promise((resolve) => child?.once('close', resolve));

    const firstRequest = await sim.waitFor(() => sim.requests.length > 0).then(() => sim.requests[0]!.at);
    await waitForDrainPolling(sim);
    // Spread the close over the poll cycle: run k closes k/runs of an interval after a poll.
    const lastPoll = [...sim.requests].reverse().find((r) => GAUGES.test(r.path))!.at;
    const closeAt = lastPoll + (POLL_INTERVAL_MS * run) / runs;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, closeAt - performance.now())));
    client.destroy();
    await sim.waitFor(() => sim.activeConnections() === 0);
    const thresholdReachedAt = performance.now();
    const exitedAt = await exit;
    memory.stop();
    await outputComplete;

    const summary = parseLogLines(stderr).find((line) => line.phase === 'summary');
    if (summary?.reason !== 'drained') throw new Error(`drain did not end as drained: ${JSON.stringify(summary)}\n${stderr}`);
    const peakKiB = memory.last()?.peakKiB ?? NaN;
    return { firstAdminRequestMs: firstRequest - spawnedAt, peakRssMB: (peakKiB * 1024) / 1e6, reactionMs: exitedAt - thresholdReachedAt };
  } finally {
    client.destroy();
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await sim.stop();
  }
}

export async function benchShutdown(progress: (line: string) => void, runs = 7, installRuns = 10): Promise<ShutdownReport> {
  const executable = builtExecutable(progress);
  const distDir = repoPath('dist/envoy-shutdown');
  const files = filesUnder(distDir);
  const workDir = mkdtempSync(join(tmpdir(), 'drainguard-bench-shutdown-'));
  try {
    progress(`envoy-shutdown: install × ${installRuns}`);
    const installs: number[] = [];
    for (let run = 0; run < installRuns; run += 1) installs.push(await timeInstall(executable, workDir, run));

    const drains: DrainRun[] = [];
    for (let run = 0; run < runs; run += 1) {
      progress(`envoy-shutdown: drain ${run + 1}/${runs}`);
      drains.push(await drainOnce(executable, workDir, run, runs));
    }
    return {
      executable: 'dist/envoy-shutdown/envoy-shutdown',
      sizeBytes: files.reduce((sum, file) => sum + file.bytes, 0),
      files,
      installMs: spread(installs),
      firstAdminRequestMs: spread(drains.map((d) => d.firstAdminRequestMs)),
      peakRssMB: spread(drains.map((d) => d.peakRssMB)),
      pollIntervalMs: POLL_INTERVAL_MS,
      reactionMs: spread(drains.map((d) => d.reactionMs)),
    };
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}
