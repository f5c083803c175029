/**
 * `npm run bench:memory`: does `drainguard serve` stay inside the memory its chart gives it when
 * clients send as much as they can? 8 clients send valid reviews of about 3 MiB (each kind of large pod
 * content in turn) for 20 s, more than the server's admission slots take at once. Reports the server's
 * peak resident and anonymous memory against the limit the chart derives from the body limit and the
 * concurrency (src/server/sizing.ts), the answers by status, and how /healthz answered meanwhile.
 *
 * When the machine allows it (`systemd-run --scope` with a working systemd), the server runs under a
 * real memory cap of that limit and the run fails if the kernel kills it; otherwise the peak is
 * measured from /proc and the margin to the limit is reported.
 *
 *   npm run bench:memory [-- --seconds 20] [-- --clients 8]
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admissionLimits, memoryLimitMiB, type AdmissionLimits } from '../src/server/sizing';
import { describeHealthz, startHealthzProbe, type HealthzFigures } from './fuzz/healthz-probe';
import { chartRuntimeEnv, measuredEnv } from './lib/chart-runtime';
import { watchMemory, type MemoryFigures } from './fuzz/memory-watch';
import { createHttpsClient, type ClientTarget } from './lib/https-client';
import { describeMachine } from './lib/machine';
import { CONTENT_KINDS, largeReviewBody } from '../test/support/generators/pod-content';
import { repoPath } from '../test/support/repo';
import { spawnTracked, stopProcess, waitForFileLine } from './lib/processes';
import { currentLoad, progress } from './lib/results';
import { table } from './lib/stats';
import { createBenchCertificates, type BenchCertificates } from './lib/tls';

export interface MemoryReport {
  limits: AdmissionLimits;
  /** What the chart sets as the memory limit for these limits. */
  memoryLimitMiB: number;
  cap: 'systemd-run MemoryMax' | 'none (measured only)';
  clients: number;
  seconds: number;
  requests: number;
  byStatus: Record<string, number>;
  /** 200 answers that were drainguard's own failure (a decision past its deadline or its heap). */
  internalErrors: number;
  memory: MemoryFigures;
  /** memoryLimitMiB − peak resident memory. */
  marginMiB: number;
  healthz: HealthzFigures;
  serverAliveAtEnd: boolean;
}

function numberFlag(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index < 0 ? fallback : Number(process.argv[index + 1]);
}

function systemdRunWorks(): boolean {
  const probe = spawnSync('systemd-run', ['--scope', '--quiet', '-p', 'MemoryMax=64M', 'true'], { stdio: 'ignore' });
  return probe.status === 0;
}

/** `drainguard serve` from dist/ with the default limits, under a memory cap when one can be had. */
async function startServer(certs: BenchCertificates, capMiB: number, capped: boolean) {
  const logDirectory = mkdtempSync(join(tmpdir(), 'drainguard-memory-'));
  const logPath = join(logDirectory, 'drainguard.log');
  const logFd = openSync(logPath, 'w');
  const serve = [repoPath('dist/cli/main.js'), 'serve', '--tls-mode', 'files', '--tls-cert', certs.certPath, '--tls-key', certs.keyPath, '--host', '127.0.0.1', '--port', '0', '--shutdown-delay', '0s'];
  const [command, args] = capped
    ? ['systemd-run', ['--scope', '--quiet', '-p', `MemoryMax=${capMiB}M`, '-p', 'MemorySwapMax=0', process.execPath, ...serve]]
    : [process.execPath, serve];
  // As the chart runs it: its Node settings (lib/chart-runtime.ts).
  const child = spawnTracked(command as string, args as string[], { stdio: ['ignore', logFd, 'pipe'], env: measuredEnv(chartRuntimeEnv('server')) });
  closeSync(logFd);
  const port = await waitForFileLine(child, logPath, (line) => {
    try {
      const entry = JSON.parse(line) as { msg?: string; port?: number };
      return entry.msg === 'listening' ? entry.port : undefined;
    } catch {
      return undefined;
    }
  });
  return {
    child,
    port,
    stop: async () => {
      await stopProcess(child);
      rmSync(logDirectory, { recursive: true, force: true });
    },
  };
}

async function run(certs: BenchCertificates, clients: number, seconds: number): Promise<MemoryReport> {
  const limits = admissionLimits();
  const limitMiB = memoryLimitMiB(limits);
  const capped = systemdRunWorks();
  progress(capped ? `running the server under systemd-run MemoryMax=${limitMiB}M` : 'no memory cap available here (no systemd-run scope); measuring peak memory from /proc');
  progress(`generating ${CONTENT_KINDS.length} reviews of about 3 MiB`);
  const bodies = CONTENT_KINDS.map((kind) => largeReviewBody(kind, `memory-${kind}`));

  const server = await startServer(certs, limitMiB, capped);
  let alive = true;
  server.child.once('exit', () => (alive = false));
  const target: ClientTarget = { port: server.port, ca: certs.ca, servername: certs.servername };
  const memory = watchMemory(server.child.pid as number);
  const healthz = startHealthzProbe(target);
  const client = createHttpsClient(target, clients);
  const byStatus: Record<string, number> = {};
  let internalErrors = 0;
  let requests = 0;
  const until = Date.now() + seconds * 1000;
  try {
    progress(`${clients} clients sending for ${seconds} s`);
    await Promise.all(
      Array.from({ length: clients }, async (_c, clientIndex) => {
        for (let i = clientIndex; Date.now() < until && alive; i += 1) {
          const body = bodies[i % bodies.length] as string;
          const answer = await client
            .send({ path: '/mutate', headers: { 'content-type': 'application/json' }, body }, 60_000)
            .catch(() => undefined);
          requests += 1;
          const status = answer ? String(answer.status) : 'error';
          byStatus[status] = (byStatus[status] ?? 0) + 1;
          if (answer?.status === 200 && answer.body.includes('drainguard: internal error')) internalErrors += 1;
        }
      }),
    );
  } finally {
    client.close();
  }
  const health = await healthz.stop();
  const figures = memory.stop();
  const aliveAtEnd = alive;
  await server.stop();
  return {
    limits,
    memoryLimitMiB: limitMiB,
    cap: capped ? 'systemd-run MemoryMax' : 'none (measured only)',
    clients,
    seconds,
    requests,
    byStatus,
    internalErrors,
    memory: figures,
    marginMiB: Math.round((limitMiB - figures.peakRssMiB) * 10) / 10,
    healthz: health,
    serverAliveAtEnd: aliveAtEnd,
  };
}

function render(report: MemoryReport): string {
  const rows = [
    ['figure', 'value'],
    ['limits', `body ${report.limits.bodyLimitBytes} B, ${report.limits.concurrency} large and ${report.limits.smallConcurrency} small slots, ${report.limits.queueLimit} waiting, ${report.limits.maxConnections} connections, worker heap ${report.limits.workerHeapMb} MiB`],
    ['memory limit (chart, derived)', `${report.memoryLimitMiB} MiB`],
    ['cap', report.cap],
    ['load', `${report.clients} clients × ${report.seconds} s, ${report.requests} reviews of ~3 MiB`],
    ['answers by status', Object.entries(report.byStatus).map(([s, n]) => `${s}: ${n}`).join(', ')],
    ['answered as drainguard failure (deadline/heap)', String(report.internalErrors)],
    ['peak resident (VmHWM)', `${report.memory.peakRssMiB} MiB`],
    ['peak anonymous (RssAnon)', `${report.memory.peakAnonMiB} MiB`],
    ['margin to the limit', `${report.marginMiB} MiB`],
    ['/healthz', describeHealthz(report.healthz)],
    ['server alive at end', String(report.serverAliveAtEnd)],
  ];
  return `${table(rows)}\n`;
}

async function main(): Promise<void> {
  const clients = numberFlag('clients', 8);
  const seconds = numberFlag('seconds', 20);
  const started = new Date();
  const loadAverageAtStart = currentLoad();
  const certs = createBenchCertificates();
  let report: MemoryReport;
  try {
    report = await run(certs, clients, seconds);
  } finally {
    certs.remove();
  }
  const path = repoPath('bench', 'memory-results.json');
  const envelope = { date: started.toISOString(), machine: describeMachine(started), loadAverageAtStart, loadAverageAtEnd: currentLoad(), command: 'npm run bench:memory', figures: report };
  writeFileSync(path, `${JSON.stringify(envelope, null, 2)}\n`);
  process.stdout.write(`${render(report)}written to ${path}\n`);
  const failed = !report.serverAliveAtEnd || report.marginMiB < 0 || (report.byStatus['error'] ?? 0) > 0;
  if (failed) process.exitCode = 1;
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:memory failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});

