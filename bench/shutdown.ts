/**
 * `envoy-shutdown`, the built static executables (dist/envoy-shutdown/linux-<arch>), each run as its
 * own process as Envoy's preStop would run it, against a stub admin API over a unix socket
 * (bench/lib/admin-stub.ts) whose stats answer is that of an Envoy with 10,000 listeners (30,000
 * listener gauges in every answer). The other architecture's executable runs under qemu-user: its times
 * and memory include the emulator and say nothing about a real arm64 node, only that it works.
 *
 * Figures per architecture: size, `install` time, start-up (spawn → the stub records the first admin
 * request), peak RSS (VmHWM, sampled until exit), and reaction (the bench sets the stub's connection
 * count to the threshold 0 → the process has exited). The count drops at a different point of the 1 s
 * poll cycle in each run, so median and max cover the whole cycle.
 *
 *   npm run bench                        (with the other benchmarks)
 *   tsc -p tsconfig.bench.json && node node_modules/.cache/drainguard-bench/bench/shutdown.js [--quick] [--host-only]
 *   … bench/shutdown.js --instructions   (one poll's instructions under valgrind: independent of the load)
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { AdminStub, type StubRequest } from './lib/admin-stub';
import { exited, readCpuSeconds, sampleMemory, spawnTracked } from './lib/processes';
import { buildIfChanged, drainSummary, shutdownExecutables, type ShutdownExecutable } from './lib/shutdown-executables';
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
  /** One stats poll of the whole answer, back to back (see `pollCost`). */
  poll: PollCost;
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
  poll: PollCost;
  /** Listeners in the stub's stats answer (each with per-worker gauges). */
  listeners: number;
  architectures: ArchFigures[];
}

export const POLL_INTERVAL_MS = 1000;
export const LISTENERS = 10_000;
/** A listener gauges poll, whatever format and filter it asks for. */
const GAUGES = /^\/stats\?/;
/** How long `pollCost` lets the program poll back to back. */
const POLL_COST_WINDOW_MS = 3000;

function spread(values: number[]): Spread {
  return { runs: values.length, median: quantile(values, 0.5), max: Math.max(...values) };
}

async function timeInstall(executable: ShutdownExecutable, workDir: string, run: number): Promise<number> {
  const [command, args] = executable.command(['install', '--to', join(workDir, `install-${executable.arch}-${run}`, 'drainguard')]);
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

const isGaugesPoll = (request: StubRequest) => GAUGES.test(request.path);

async function drainOnce(executable: ShutdownExecutable, workDir: string, run: number, runs: number): Promise<DrainRun> {
  const stub = await AdminStub.start({ socketPath: join(workDir, `admin-${executable.arch}-${run}.sock`), listeners: LISTENERS });
  // One client connection open when the drain starts.
  stub.setActiveConnections(1);
  let child: ChildProcess | undefined;
  try {
    // Emulated, a stats answer of 30,000 gauges takes seconds to read: give it the time.
    const requestTimeout = executable.emulator ? '20s' : '1s';
    const [command, args] = executable.command([
      'drain', '--admin', stub.address, '--deadline', '120s', '--min-drain', '0s', '--min-connections', '0',
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

    const firstRequest = await stub.request(() => true);
    // Draining: a gauges poll after the health check was failed.
    const failed = await stub.request((r) => r.path === '/healthcheck/fail');
    await stub.request((r) => isGaugesPoll(r) && r.at > failed.at);
    // Spread the drop over the poll cycle: run k drops the count k/runs of an interval after a poll.
    const lastPoll = stub.requests.findLast(isGaugesPoll) as StubRequest;
    await sleep(Math.max(0, lastPoll.at + (POLL_INTERVAL_MS * run) / runs - performance.now()));
    stub.setActiveConnections(0);
    const thresholdReachedAt = performance.now();
    const exitedAt = await exit;
    memory.stop();
    await outputComplete;

    const summary = drainSummary(stderr);
    if (summary?.reason !== 'drained') throw new Error(`drain did not end as drained: ${JSON.stringify(summary)}\n${stderr}`);
    const peakKiB = memory.last()?.peakKiB ?? NaN;
    return { firstAdminRequestMs: firstRequest.at - spawnedAt, peakRssMB: (peakKiB * 1024) / 1e6, reactionMs: exitedAt - thresholdReachedAt };
  } finally {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await stub.stop();
  }
}

/** What one poll of the stats answer costs the program: wall time request to request, and its CPU time. */
export interface PollCost {
  polls: number;
  /** Mean time from one stats request to the next when the program polls back to back (1 ms interval). */
  wallMs: number;
  /** Mean CPU time (user + system) per poll; 10 ms clock-tick resolution over the whole window. */
  cpuMs: number;
}

/**
 * The program drains with a 1 ms poll interval while the stub keeps one connection open, so it reads the
 * 30,000-gauge answer back to back for POLL_COST_WINDOW_MS: each request-to-request gap is one whole
 * poll (connect, request, read and scan ~2 MB, close) plus at most the 1 ms interval.
 */
async function pollCost(executable: ShutdownExecutable, workDir: string): Promise<PollCost> {
  const stub = await AdminStub.start({ socketPath: join(workDir, `admin-${executable.arch}-poll.sock`), listeners: LISTENERS });
  stub.setActiveConnections(1);
  let child: ChildProcess | undefined;
  try {
    const [command, args] = executable.command([
      'drain', '--admin', stub.address, '--deadline', '120s', '--min-drain', '0s', '--min-connections', '0',
      '--poll-interval', '1ms', '--request-timeout', executable.emulator ? '20s' : '1s',
    ]);
    child = spawnTracked(command, args, { env: { PATH: process.env.PATH, ENVOY_SHUTDOWN_LOG: 'stderr' }, stdio: 'ignore' });
    const pid = child.pid as number;
    const failed = await stub.request((r) => r.path === '/healthcheck/fail');
    const first = await stub.request((r) => isGaugesPoll(r) && r.at > failed.at);
    const cpuAtFirst = readCpuSeconds(pid) ?? NaN;
    await sleep(POLL_COST_WINDOW_MS);
    const cpuAtEnd = readCpuSeconds(pid) ?? NaN;
    const polls = stub.requests.filter((r) => isGaugesPoll(r) && r.at >= first.at);
    const last = polls[polls.length - 1] as StubRequest;
    // The CPU window runs from the first poll's request to now, in which polls.length polls started.
    return { polls: polls.length - 1, wallMs: (last.at - first.at) / (polls.length - 1), cpuMs: ((cpuAtEnd - cpuAtFirst) * 1000) / polls.length };
  } finally {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await stub.stop();
  }
}

/** Instructions per poll: load-independent, unlike the CPU time (see `pollInstructions`). */
export interface PollInstructions {
  /** Polls in the shorter and the longer drain. */
  polls: [number, number];
  /** Instructions the program executed in each whole drain (valgrind's callgrind, `Ir`). */
  instructions: [number, number];
  /** The difference per extra poll: one poll's instructions, start-up and exit cancelled out. */
  perPoll: number;
}

/** The whole drain's instructions under callgrind, against a stub that reports no connections after `polls` polls. */
async function drainInstructions(executable: ShutdownExecutable, workDir: string, polls: number): Promise<number> {
  const stub = await AdminStub.start({ socketPath: join(workDir, `admin-instructions-${polls}.sock`), listeners: LISTENERS, drainedAfterPolls: polls });
  stub.setActiveConnections(1);
  const out = join(workDir, `callgrind-${polls}.out`);
  try {
    const child = spawnTracked('valgrind', [
      '--tool=callgrind', `--callgrind-out-file=${out}`, executable.path,
      // Generous timeouts: under callgrind the program runs some 50 times slower.
      'drain', '--admin', stub.address, '--deadline', '600s', '--min-drain', '0s', '--min-connections', '0',
      '--poll-interval', '1ms', '--request-timeout', '60s',
    ], { env: { PATH: process.env.PATH, ENVOY_SHUTDOWN_LOG: 'stderr' }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const { code } = await exited(child);
    const summary = drainSummary(stderr);
    if (code !== 0 || summary?.reason !== 'drained') throw new Error(`callgrind run (${polls} polls) did not drain: exit ${code}\n${stderr.slice(-2000)}`);
    const totals = /^(?:totals|summary): (\d+)/m.exec(readFileSync(out, 'utf8'));
    if (!totals) throw new Error(`no totals in ${out}`);
    return Number(totals[1]);
  } finally {
    await stub.stop();
  }
}

/**
 * One poll's instructions, which do not depend on the machine's load: the host executable drains twice
 * under valgrind's callgrind, polling `short + 1` and `long + 1` times, and the difference is divided by
 * the extra polls. Needs valgrind (Debian's `valgrind`); not part of `npm run bench`.
 */
export async function pollInstructions(executable: ShutdownExecutable, workDir: string, short = 2, long = 12): Promise<PollInstructions> {
  const few = await drainInstructions(executable, workDir, short);
  const many = await drainInstructions(executable, workDir, long);
  return { polls: [short + 1, long + 1], instructions: [few, many], perPoll: (many - few) / (long - short) };
}

async function benchExecutable(executable: ShutdownExecutable, workDir: string, progress: (line: string) => void, runs: number, installRuns: number): Promise<ArchFigures> {
  const label = `envoy-shutdown ${executable.arch}${executable.emulator ? ` (${executable.emulator})` : ''}`;
  progress(`${label}: install × ${installRuns}`);
  const installs: number[] = [];
  for (let run = 0; run < installRuns; run += 1) installs.push(await timeInstall(executable, workDir, run));
  progress(`${label}: polls back to back for ${POLL_COST_WINDOW_MS} ms`);
  const poll = await pollCost(executable, workDir);
  const drains: DrainRun[] = [];
  for (let run = 0; run < runs; run += 1) {
    progress(`${label}: drain ${run + 1}/${runs} (${LISTENERS} listeners)`);
    drains.push(await drainOnce(executable, workDir, run, runs));
  }
  return {
    arch: executable.arch,
    emulator: executable.emulator,
    sizeBytes: statSync(executable.path).size,
    installMs: spread(installs),
    firstAdminRequestMs: spread(drains.map((d) => d.firstAdminRequestMs)),
    peakRssMB: spread(drains.map((d) => d.peakRssMB)),
    reactionMs: spread(drains.map((d) => d.reactionMs)),
    poll,
  };
}

/** `onlyHost`: skip the emulated architectures (a quick look at the native figures). */
export async function benchShutdown(progress: (line: string) => void, runs = 7, installRuns = 10, onlyHost = false): Promise<ShutdownReport> {
  const executables = await shutdownExecutables();
  const host = executables.host;
  const all = onlyHost ? [host] : executables.all;
  buildIfChanged(all, (line) => progress(`envoy-shutdown: ${line}`));
  const workDir = mkdtempSync(join(tmpdir(), 'drainguard-bench-shutdown-'));
  try {
    const architectures: ArchFigures[] = [];
    for (const executable of all) {
      // Emulated runs are slow and measure the emulator more than the program: fewer of them.
      const fewer = executable.emulator !== undefined;
      architectures.push(await benchExecutable(executable, workDir, progress, fewer ? Math.min(runs, 3) : runs, fewer ? Math.min(installRuns, 3) : installRuns));
    }
    const hostFigures = architectures.find((a) => a.arch === host.arch) as ArchFigures;
    return {
      executable: host.relativePath,
      sizeBytes: hostFigures.sizeBytes,
      files: [{ path: 'envoy-shutdown', bytes: hostFigures.sizeBytes }],
      installMs: hostFigures.installMs,
      firstAdminRequestMs: hostFigures.firstAdminRequestMs,
      peakRssMB: hostFigures.peakRssMB,
      pollIntervalMs: POLL_INTERVAL_MS,
      reactionMs: hostFigures.reactionMs,
      poll: hostFigures.poll,
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
    ['arch', 'runs on this host', 'size', 'install ms (median / max)', 'start → first admin request ms', 'peak RSS MiB', `reaction ms (poll ${report.pollIntervalMs})`, 'one poll ms (wall / CPU)'],
    ...report.architectures.map((a) => [
      a.arch,
      a.emulator ?? 'native',
      `${(a.sizeBytes / 1e6).toFixed(2)} MB`,
      ms(a.installMs),
      ms(a.firstAdminRequestMs),
      `${((a.peakRssMB.median * 1e6) / 2 ** 20).toFixed(2)} / ${((a.peakRssMB.max * 1e6) / 2 ** 20).toFixed(2)}`,
      ms(a.reactionMs),
      `${a.poll.wallMs.toFixed(1)} / ${a.poll.cpuMs.toFixed(1)}`,
    ]),
  ]);
}

if (require.main === module && process.argv.includes('--instructions')) {
  void (async () => {
    const { host } = await shutdownExecutables();
    buildIfChanged([host], (line) => process.stderr.write(`envoy-shutdown: ${line}\n`));
    const workDir = mkdtempSync(join(tmpdir(), 'drainguard-bench-instructions-'));
    try {
      const figures = await pollInstructions(host, workDir);
      process.stdout.write(`envoy-shutdown ${host.arch}, ${LISTENERS} listeners: ${(figures.perPoll / 1e6).toFixed(2)} M instructions per poll (${JSON.stringify(figures)})\n`);
    } finally {
      rmSync(workDir, { recursive: true, force: true });
    }
  })().catch((error: unknown) => {
    process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  });
} else if (require.main === module) {
  const quick = process.argv.includes('--quick');
  const onlyHost = process.argv.includes('--host-only');
  benchShutdown((line) => process.stderr.write(`${line}\n`), quick ? 2 : 7, quick ? 3 : 10, onlyHost).then(
    (report) => {
      process.stdout.write(`envoy-shutdown against a stub admin API with ${report.listeners} listeners\n${shutdownTable(report)}\n`);
      process.exit(0);
    },
    (error: unknown) => {
      process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
      process.exit(1);
    },
  );
}
