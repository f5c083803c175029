/**
 * `envoy-shutdown`, the built static executables (dist/envoy-shutdown/linux-<arch>), each run as its
 * own process against the Envoy admin simulator over a unix socket, as Envoy's preStop would run it —
 * the simulated Envoy has 10,000 listeners (30,000 listener gauges in every stats answer). The other
 * architecture's executable runs under qemu-user: its times and memory include the emulator and say
 * nothing about a real arm64 node, only that it works.
 *
 * Figures per architecture: size, `install` time, start-up (spawn → the simulator records the first
 * admin request), peak RSS (VmHWM, sampled until exit), and reaction (the last client connection
 * closes, so the count reaches the threshold 0 → the process has exited). The close is placed at a
 * different point of the 1 s poll cycle in each run, so median and max cover the whole cycle.
 *
 *   npm run bench                        (with the other benchmarks)
 *   tsc -p tsconfig.bench.json && node node_modules/.cache/drainguard-bench/bench/shutdown.js [--quick]
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { EnvoyAdminSimulator } from '../test/support/envoy-admin-simulator';
import { commandFor, HOST_TARGET, parseLogLines, TARGETS, type ShutdownTarget } from '../test/support/envoy/shutdown-executable';
import { buildShutdownIfStale } from '../test/support/build';
import { exited, sampleMemory, spawnTracked } from './lib/processes';
import { quantile, table } from './lib/stats';

export interface Spread {
  runs: number;
  median: number;
  max: number;
}

export interface ArchFigures {
  arch: string;
  /** The qemu-user binary it ran under on this host, if not native. */
  emulator: string | undefined;
  sizeBytes: number;
  installMs: Spread;
  firstAdminRequestMs: Spread;
  /** Peak resident set size (VmHWM) in MB (10^6 bytes); under emulation the emulator's. */
  peakRssMB: Spread;
  reactionMs: Spread;
}

/** The host architecture's figures at the top level (what bench/lib/goals.ts reads), all architectures below. */
export interface ShutdownReport {
  executable: string;
  /** The executable alone: it is static, nothing ships beside it. */
  sizeBytes: number;
  files: { path: string; bytes: number }[];
  installMs: Spread;
  firstAdminRequestMs: Spread;
  peakRssMB: Spread;
  pollIntervalMs: number;
  reactionMs: Spread;
  /** Listeners of the simulated Envoy (each with per-worker gauges). */
  listeners: number;
  architectures: ArchFigures[];
}

export const POLL_INTERVAL_MS = 1000;
export const LISTENERS = 10_000;
const GAUGES = /^\/stats\?format=json&type=Gauges/;

function spread(values: number[]): Spread {
  return { runs: values.length, median: quantile(values, 0.5), max: Math.max(...values) };
}

async function timeInstall(target: ShutdownTarget, workDir: string, run: number): Promise<number> {
  const [command, args] = commandFor(target, target.built, ['install', '--to', join(workDir, `install-${target.arch}-${run}`, 'drainguard')]);
  const started = performance.now();
  const child = spawnTracked(command, args, { stdio: 'ignore' });
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
  }, 120_000);
}

async function drainOnce(target: ShutdownTarget, workDir: string, run: number, runs: number): Promise<DrainRun> {
  const sim = await EnvoyAdminSimulator.start({ unixSocketPath: join(workDir, `admin-${target.arch}-${run}.sock`), idleListeners: LISTENERS });
  const client: Socket = connect(sim.listenerPorts[0] as number, '127.0.0.1');
  client.on('error', () => undefined);
  let child: ChildProcess | undefined;
  try {
    await sim.waitFor(() => sim.activeConnections() === 1);
    // Emulated, a stats answer of 30,000 gauges takes seconds to read: give it the time.
    const requestTimeout = target.emulator ? '20s' : '1s';
    const [command, args] = commandFor(target, target.built, [
      'drain', '--admin', sim.adminAddress, '--deadline', '120s', '--min-drain', '0s', '--min-connections', '0',
      '--poll-interval', `${POLL_INTERVAL_MS}ms`, '--request-timeout', requestTimeout,
    ]);
    const spawnedAt = performance.now();
    child = spawnTracked(command, args, { env: { PATH: process.env.PATH, ENVOY_SHUTDOWN_LOG: 'stderr' }, stdio: ['ignore', 'ignore', 'pipe'] });
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

async function benchTarget(target: ShutdownTarget, workDir: string, progress: (line: string) => void, runs: number, installRuns: number): Promise<ArchFigures> {
  const label = `envoy-shutdown ${target.arch}${target.emulator ? ` (${target.emulator})` : ''}`;
  progress(`${label}: install × ${installRuns}`);
  const installs: number[] = [];
  for (let run = 0; run < installRuns; run += 1) installs.push(await timeInstall(target, workDir, run));
  const drains: DrainRun[] = [];
  for (let run = 0; run < runs; run += 1) {
    progress(`${label}: drain ${run + 1}/${runs} (${LISTENERS} listeners)`);
    drains.push(await drainOnce(target, workDir, run, runs));
  }
  return {
    arch: target.arch,
    emulator: target.emulator,
    sizeBytes: statSync(target.built).size,
    installMs: spread(installs),
    firstAdminRequestMs: spread(drains.map((d) => d.firstAdminRequestMs)),
    peakRssMB: spread(drains.map((d) => d.peakRssMB)),
    reactionMs: spread(drains.map((d) => d.reactionMs)),
  };
}

export async function benchShutdown(progress: (line: string) => void, runs = 7, installRuns = 10): Promise<ShutdownReport> {
  buildShutdownIfStale((line) => progress(`envoy-shutdown: ${line}`));
  const workDir = mkdtempSync(join(tmpdir(), 'drainguard-bench-shutdown-'));
  try {
    const architectures: ArchFigures[] = [];
    for (const target of TARGETS) {
      // Emulated runs are slow and measure the emulator more than the program: fewer of them.
      architectures.push(await benchTarget(target, workDir, progress, target.emulator ? Math.min(runs, 3) : runs, target.emulator ? Math.min(installRuns, 3) : installRuns));
    }
    const host = architectures.find((a) => a.arch === HOST_TARGET.arch) as ArchFigures;
    return {
      executable: `dist/envoy-shutdown/linux-${host.arch}/envoy-shutdown`,
      sizeBytes: host.sizeBytes,
      files: [{ path: 'envoy-shutdown', bytes: host.sizeBytes }],
      installMs: host.installMs,
      firstAdminRequestMs: host.firstAdminRequestMs,
      peakRssMB: host.peakRssMB,
      pollIntervalMs: POLL_INTERVAL_MS,
      reactionMs: host.reactionMs,
      listeners: LISTENERS,
      architectures,
    };
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** The per-architecture figures as a table. */
export function shutdownTable(report: ShutdownReport): string {
  const ms = (s: Spread) => `${s.median.toFixed(1)} / ${s.max.toFixed(1)}`;
  return table([
    ['arch', 'runs on this host', 'size', 'install ms (median / max)', 'start → first admin request ms', 'peak RSS MiB', `reaction ms (poll ${report.pollIntervalMs})`],
    ...report.architectures.map((a) => [
      a.arch,
      a.emulator ?? 'native',
      `${(a.sizeBytes / 1e6).toFixed(2)} MB`,
      ms(a.installMs),
      ms(a.firstAdminRequestMs),
      `${((a.peakRssMB.median * 1e6) / 2 ** 20).toFixed(2)} / ${((a.peakRssMB.max * 1e6) / 2 ** 20).toFixed(2)}`,
      ms(a.reactionMs),
    ]),
  ]);
}

if (require.main === module) {
  const quick = process.argv.includes('--quick');
  benchShutdown((line) => process.stderr.write(`${line}\n`), quick ? 2 : 7, quick ? 3 : 10).then(
    (report) => {
      process.stdout.write(`envoy-shutdown against a simulated Envoy with ${report.listeners} listeners\n${shutdownTable(report)}\n`);
      process.exit(0);
    },
    (error: unknown) => {
      process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
      process.exit(1);
    },
  );
}
