/**
 * `drainguard serve`'s memory as the chart runs it (its Node settings, lib/chart-runtime.ts), in both
 * ways it gets its certificate: files (a mounted Secret) and self (its own CA, kept in a Secret through
 * the Kubernetes API: the chart's default, against bench/lib/self-mode-stub.ts). Resident memory after
 * start, after a fixed rate of Contour reviews over keep-alive connections, and after idling; the peak
 * (VmHWM) throughout.
 *
 * Then, in files mode, what a decision worker costs: reviews over 64 KiB are decided by one, started
 * when the first arrives (src/server/decision-pool.ts). Two such reviews one after the other: the
 * first pays the worker's start, the second finds it running, so their difference in the server's CPU
 * is the start, and the resident memory after the first, less before it, is the worker and its decision.
 *
 *   npm run bench                 (with the other benchmarks)
 *   tsc -p tsconfig.bench.json && node node_modules/.cache/drainguard-bench/bench/serve-memory.js [--quick]
 */
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { chartRuntimeEnv, measuredEnv } from './lib/chart-runtime';
import { createHttpsClient, type ClientTarget } from './lib/https-client';
import { pacedLoad } from './lib/paced-load';
import { readCpuSeconds, readMemory, spawnTracked, stopProcess, waitForFileLine } from './lib/processes';
import { SELF_MODE_NAMESPACE, SELF_MODE_SECRET, SELF_MODE_WEBHOOK, startSelfModeStub } from './lib/self-mode-stub';
import { parseJsonLine } from './lib/servers';
import { table } from './lib/stats';
import { createBenchCertificates, type BenchCertificates } from './lib/tls';
import { contourPod } from '../test/support/generators/pods';
import { largeReviewBody } from '../test/support/generators/pod-content';
import { reviewBody } from '../test/support/generators/review';
import { REPO_ROOT } from '../test/support/repo';

export interface ServeMemorySettings {
  ratePerSecond: number;
  loadSeconds: number;
  idleSeconds: number;
  connections: number;
}

export const DEFAULT_SERVE_MEMORY_SETTINGS: ServeMemorySettings = { ratePerSecond: 300, loadSeconds: 30, idleSeconds: 10, connections: 4 };
export const QUICK_SERVE_MEMORY_SETTINGS: ServeMemorySettings = { ratePerSecond: 300, loadSeconds: 10, idleSeconds: 3, connections: 4 };

export type TlsMode = 'files' | 'self';

export interface ServeMemoryFigures {
  mode: TlsMode;
  /** Resident after start (certificate in use) and a second's pause. */
  rssStartMiB: number;
  rssAfterLoadMiB: number;
  rssAfterIdleMiB: number;
  /** VmHWM over the whole run. */
  peakMiB: number;
  answered: number;
  statuses: Record<string, number>;
  failures: number;
  latencyP99Ms: number;
  cpuMicrosPerReview: number;
}

export interface DecisionWorkerCost {
  reviewBytes: number;
  /** Server CPU of the first large review less that of the second: the worker's start. */
  startCpuMs: number;
  /** Resident after the first large review less before it: the worker, idle, with its decision's heap. */
  rssMiB: number;
  /** Workers the chart allows (server.maxConcurrentAdmissions), each started only when needed. */
}

export interface ServeMemoryReport {
  settings: ServeMemorySettings;
  runtime: Record<string, string>;
  modes: ServeMemoryFigures[];
  worker?: DecisionWorkerCost;
}

const MiB = (kib: number) => Math.round((kib / 1024) * 10) / 10;
const SERVICE = 'drainguard';

interface Started {
  pid: number;
  target: ClientTarget;
  stop(): Promise<void>;
}

/** `drainguard serve` of the checkout at `root` in `mode`, once it serves its certificate. */
async function startServe(mode: TlsMode, certs: BenchCertificates, root: string, runtime: Record<string, string>): Promise<Started> {
  const directory = mkdtempSync(join(tmpdir(), 'drainguard-bench-serve-'));
  const logPath = join(directory, 'serve.log');
  const stub = mode === 'self' ? await startSelfModeStub(certs) : undefined;
  const tls = stub
    ? (writeFileSync(join(directory, 'kubeconfig'), stub.kubeconfig, { mode: 0o600 }),
      ['--tls-mode', 'self', '--namespace', SELF_MODE_NAMESPACE, '--secret-name', SELF_MODE_SECRET, '--webhook-config-name', SELF_MODE_WEBHOOK, '--service-name', SERVICE, '--kubeconfig', join(directory, 'kubeconfig')])
    : ['--tls-mode', 'files', '--tls-cert', certs.certPath, '--tls-key', certs.keyPath];
  const logFd = openSync(logPath, 'w');
  const child = spawnTracked(process.execPath, [join(root, 'dist', 'cli', 'main.js'), 'serve', ...tls, '--host', '127.0.0.1', '--port', '0', '--shutdown-delay', '0s'], {
    stdio: ['ignore', logFd, 'pipe'],
    env: measuredEnv(runtime),
  });
  closeSync(logFd);
  const stop = async () => {
    await stopProcess(child);
    await stub?.close();
    rmSync(directory, { recursive: true, force: true });
  };
  try {
    const port = await waitForFileLine(child, logPath, (line) => {
      const entry = parseJsonLine(line);
      return entry?.msg === 'listening' && typeof entry.port === 'number' ? entry.port : undefined;
    });
    // Self mode: its certificate is in use once it logged it (after writing the Secret and the caBundle).
    await waitForFileLine(child, logPath, (line) => (parseJsonLine(line)?.msg === 'serving certificate loaded' ? true : undefined), 60_000);
    const target: ClientTarget = stub
      ? { port, ca: stub.caBundle ?? '', servername: `${SERVICE}.${SELF_MODE_NAMESPACE}.svc` }
      : { port, ca: certs.ca, servername: certs.servername };
    return { pid: child.pid!, target, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

function checkAnswer(status: number, body: Buffer): void {
  if (status !== 200 || !body.includes('"patchType":"JSONPatch"')) throw new Error(`HTTP ${status}: ${body.toString('utf8').slice(0, 200)}`);
}

async function measureMode(mode: TlsMode, settings: ServeMemorySettings, certs: BenchCertificates, root: string, runtime: Record<string, string>, progress: (line: string) => void): Promise<{ figures: ServeMemoryFigures; worker?: DecisionWorkerCost }> {
  const server = await startServe(mode, certs, root, runtime);
  try {
    await sleep(1000);
    const start = readMemory(server.pid)!;
    progress(`serve (${mode}): ${MiB(start.rssKiB)} MiB after start; ${settings.ratePerSecond} reviews/s for ${settings.loadSeconds} s`);
    const cpuBefore = readCpuSeconds(server.pid)!;
    const load = await pacedLoad({
      target: server.target,
      request: { path: '/mutate', headers: { 'content-type': 'application/json' }, body: reviewBody(contourPod(), 'b3c0ffee-0000-4000-8000-00000000000a') },
      ratePerSecond: settings.ratePerSecond,
      durationSeconds: settings.loadSeconds,
      connections: settings.connections,
      check: checkAnswer,
    });
    const cpuAfter = readCpuSeconds(server.pid)!;
    const afterLoad = readMemory(server.pid)!;
    await sleep(settings.idleSeconds * 1000);
    const afterIdle = readMemory(server.pid)!;
    progress(`serve (${mode}): ${MiB(afterLoad.rssKiB)} MiB after the load, ${MiB(afterIdle.rssKiB)} MiB after ${settings.idleSeconds} s idle`);
    const figures: ServeMemoryFigures = {
      mode,
      rssStartMiB: MiB(start.rssKiB),
      rssAfterLoadMiB: MiB(afterLoad.rssKiB),
      rssAfterIdleMiB: MiB(afterIdle.rssKiB),
      peakMiB: MiB(afterIdle.peakKiB),
      answered: load.answered,
      statuses: load.statuses,
      failures: load.failures,
      latencyP99Ms: Math.round(load.latencyP99Ms * 100) / 100,
      cpuMicrosPerReview: Math.round(((cpuAfter - cpuBefore) / load.answered) * 1e6),
    };
    return { figures, ...(mode === 'files' ? { worker: await workerCost(server) } : {}) };
  } finally {
    await server.stop();
  }
}

/** Two reviews of 256 KiB (a decision worker's, not the main thread's) one after the other. */
async function workerCost(server: Started): Promise<DecisionWorkerCost> {
  const client = createHttpsClient(server.target, 1);
  try {
    const decide = async (uid: string) => {
      const body = largeReviewBody('env', uid, 256 * 1024);
      const cpu = readCpuSeconds(server.pid)!;
      const started = performance.now();
      const answer = await client.send({ path: '/mutate', headers: { 'content-type': 'application/json' }, body }, 60_000);
      checkAnswer(answer.status, answer.body);
      return { cpuMs: (readCpuSeconds(server.pid)! - cpu) * 1000, ms: performance.now() - started, bytes: Buffer.byteLength(body) };
    };
    const before = readMemory(server.pid)!.rssKiB;
    const first = await decide('worker-start');
    const after = readMemory(server.pid)!.rssKiB;
    const second = await decide('worker-running');
    return { reviewBytes: first.bytes, startCpuMs: Math.round(first.cpuMs - second.cpuMs), rssMiB: MiB(after - before) };
  } finally {
    client.close();
  }
}

/** `root`: the checkout whose CLI and chart settings run (this one unless bench/versus.ts compares another). */
export async function benchServeMemory(progress: (line: string) => void, settings: ServeMemorySettings, certs: BenchCertificates, { root = REPO_ROOT, modes = ['files', 'self'] as TlsMode[] } = {}): Promise<ServeMemoryReport> {
  const runtime = chartRuntimeEnv('server', root);
  const results: ServeMemoryFigures[] = [];
  let worker: DecisionWorkerCost | undefined;
  for (const mode of modes) {
    const measured = await measureMode(mode, settings, certs, root, runtime, progress);
    results.push(measured.figures);
    worker ??= measured.worker;
  }
  return { settings, runtime, modes: results, ...(worker ? { worker } : {}) };
}

export function serveMemoryTable(report: ServeMemoryReport): string[][] {
  const s = report.settings;
  return [
    ['tls mode', 'after start', `after ${s.loadSeconds} s at ${s.ratePerSecond}/s`, `after ${s.idleSeconds} s idle`, 'peak (VmHWM)', 'p99 at that rate', 'CPU per review'],
    ...report.modes.map((m) => [
      m.mode,
      `${m.rssStartMiB} MiB`,
      `${m.rssAfterLoadMiB} MiB`,
      `${m.rssAfterIdleMiB} MiB`,
      `${m.peakMiB} MiB`,
      `${m.latencyP99Ms} ms`,
      `${m.cpuMicrosPerReview} µs`,
    ]),
  ];
}

if (require.main === module) {
  const quick = process.argv.includes('--quick');
  const certs = createBenchCertificates();
  benchServeMemory((line) => process.stderr.write(`${line}\n`), quick ? QUICK_SERVE_MEMORY_SETTINGS : DEFAULT_SERVE_MEMORY_SETTINGS, certs)
    .then((report) => {
      process.stdout.write(`${table(serveMemoryTable(report))}\n`);
      if (report.worker) process.stdout.write(`decision worker: ${report.worker.startCpuMs} ms CPU to start, ${report.worker.rssMiB} MiB resident with a ${report.worker.reviewBytes}-byte review decided\n`);
    })
    .catch((error: unknown) => {
      process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
      process.exitCode = 1;
    })
    .finally(() => certs.remove());
}
