/**
 * `drainguard report` at scale: the built CLI as its own process (as the chart runs it: its memory
 * limit when a cgroup can be had, its Node settings from lib/chart-runtime.ts), against an API server
 * holding 10,000 protected pods, then drains at a fixed 100 per second, each the writes a kubelet makes
 * for one rolled pod (deletion, Envoy terminated with a drain record, the final DELETED, the
 * replacement pod): 400 watch events a second.
 *
 * The API server is a `ReportBenchCluster` (below): the stub of bench/lib/report-api-stub.ts here, a
 * real kube-apiserver in ./report-kube.ts (bench/lib/report-real-cluster.ts: the pods created through
 * the API, `drain()` as the kubelet's status writes and deletes, the Events watched for
 * `eventsCreated` and the latencies), passed as `benchReporter`'s `cluster`: nothing else changes.
 *
 * Figures: time from spawn to ready (the paged list of every pod done), resident memory after that and
 * at the peak (VmHWM), CPU (user + system, /proc/PID/stat) for the list, per drain and as cores while
 * draining, CPU while idle afterwards, and the report latency: from the stub writing a termination to
 * the pod's Event arriving at it. One replica: a second does the same work (and gets 409s).
 *
 *   npm run bench                        (with the other benchmarks)
 *   tsc -p tsconfig.bench.json && node node_modules/.cache/drainguard-bench/bench/report.js [--quick] [--cpu-prof DIR]
 *
 * `--cpu-prof DIR`: the reporter also runs with Node's `--cpu-prof`, and writes its CPU profile into DIR
 * when the benchmark stops it (the figures then include the profiler's own cost).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'yaml';
import { discardOutput, readCpuSeconds, readMemory, sampleMemory, spawnTracked, stopProcess, waitForLine } from './lib/processes';
import { REPO_ROOT } from '../test/support/repo';
import { chartRuntimeEnv, measuredEnv } from './lib/chart-runtime';
import { startReportApiStub } from './lib/report-api-stub';
import { quantile, table } from './lib/stats';
import { createBenchCertificates, type BenchCertificates } from './lib/tls';

/** What the benchmark needs of the API server the reporter watches. */
export interface ReportBenchCluster {
  /** A kubeconfig file's content for the reporter. */
  kubeconfig: string;
  /** The MutatingWebhookConfiguration whose namespaceSelector opts the pods' namespaces in (`--webhook-config-name`). */
  webhookConfigName: string;
  /** Pod Events created so far. */
  readonly eventsCreated: number;
  /** Milliseconds from each termination written to its pod Event received, in order of arrival. */
  readonly reportLatenciesMs: number[];
  /** The first drain or watch that failed, if one did: the run is void. */
  readonly failure?: Error;
  /** Replays one pod's rollout (deleted, Envoy terminated with a record, gone, replaced). */
  drain(): void;
  close(): Promise<void>;
}

/** Starts the API server holding `pods` protected pods. */
export type ReportBenchClusterFactory = (pods: number, certs: BenchCertificates) => Promise<ReportBenchCluster>;

/** The stub API server (bench/lib/report-api-stub.ts). */
export const stubCluster: ReportBenchClusterFactory = (pods, certs) => startReportApiStub(certs, pods);

export interface ReporterSettings {
  pods: number;
  drainsPerSecond: number;
  drainSeconds: number;
  idleSeconds: number;
}

export const DEFAULT_REPORTER_SETTINGS: ReporterSettings = { pods: 10_000, drainsPerSecond: 100, drainSeconds: 60, idleSeconds: 10 };
export const QUICK_REPORTER_SETTINGS: ReporterSettings = { pods: 10_000, drainsPerSecond: 100, drainSeconds: 10, idleSeconds: 3 };

export interface ReporterReport {
  settings: ReporterSettings;
  /** Spawn → /readyz answers 200: start-up and the paged list of every pod. */
  readyMs: number;
  cpuUntilReadySeconds: number;
  rssReadyMiB: number;
  /** V8 heap in use when ready (the reporter's own drainguard_nodejs_heap_size_used_bytes). */
  heapReadyMiB: number;
  /** The memory limit the reporter ran under (the chart's), or null when no cgroup cap could be set here. */
  memoryCapMiB: number | null;
  /** The chart's --max-old-space-size, which it ran with. */
  heapLimitMiB: number;
  /** The chart's NODE_OPTIONS (and MALLOC_MMAP_THRESHOLD_), which it ran with (absent in older results). */
  runtime?: Record<string, string>;
  chartMemoryLimitMiB: number;
  drainsSent: number;
  /** Wall time of the drain phase, from the first drain written to the last Event received. */
  drainPhaseSeconds: number;
  /** The rate the stub achieved (it paces itself; a busy machine can hold it back). */
  achievedDrainsPerSecond: number;
  eventsCreated: number;
  cpuPerDrainMs: number;
  cpuCoresWhileDraining: number;
  cpuCoresIdle: number;
  rssAfterDrainsMiB: number;
  peakRssMiB: number;
  reportLatencyMs: { p50: number; p99: number; max: number };
  /** Pods the reporter's own gauge says it watches, at the end. */
  watchedPods: number;
}

/** The chart's memory limit and heap flag for the reporter (charts/drainguard/values.yaml `report`) of the checkout at `root`. */
function chartMemory(root: string): { limitMiB: number; heapMiB: number } {
  const values = parse(readFileSync(join(root, 'charts/drainguard/values.yaml'), 'utf8')) as { report: { resources: { limits: { memory: string } }; maxHeapMiB: number } };
  const limit = /^(\d+)Mi$/.exec(values.report.resources.limits.memory);
  if (!limit) throw new Error(`report.resources.limits.memory is not in Mi: ${values.report.resources.limits.memory}`);
  return { limitMiB: Number(limit[1]), heapMiB: values.report.maxHeapMiB };
}

function systemdRunWorks(): boolean {
  return spawnSync('systemd-run', ['--scope', '--quiet', '-p', 'MemoryMax=64M', 'true'], { stdio: 'ignore' }).status === 0;
}

const MiB = (kib: number) => Math.round((kib / 1024) * 10) / 10;

function get(port: number, path: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

const gauge = (metrics: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1] ?? NaN);

/**
 * `root`: the checkout whose built CLI and chart settings run (this one unless bench/versus.ts
 * compares another); `cluster`: the API server (the stub unless another is given).
 */
export async function benchReporter(
  progress: (line: string) => void,
  settings: ReporterSettings,
  certs: BenchCertificates,
  { root = REPO_ROOT, cluster = stubCluster, cpuProfileDir }: { root?: string; cluster?: ReportBenchClusterFactory; cpuProfileDir?: string } = {},
): Promise<ReporterReport> {
  progress(`report: building ${settings.pods} pods in the API server`);
  const stub = await cluster(settings.pods, certs);
  const directory = mkdtempSync(join(tmpdir(), 'drainguard-bench-report-'));
  const kubeconfig = join(directory, 'kubeconfig');
  writeFileSync(kubeconfig, stub.kubeconfig, { mode: 0o600 });
  const capped = systemdRunWorks();
  const { limitMiB, heapMiB } = chartMemory(root);
  const reporter = [
    join(root, 'dist', 'cli', 'main.js'),
    'report',
    '--kubeconfig',
    kubeconfig,
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--instance',
    'bench-reporter',
    '--webhook-config-name',
    stub.webhookConfigName,
  ];
  // Under the chart's memory limit when a cgroup can be had, as in the pod: Node sizes its heap to it.
  const [command, args] = capped
    ? ['systemd-run', ['--scope', '--quiet', '-p', `MemoryMax=${limitMiB}M`, '-p', 'MemorySwapMax=0', process.execPath, ...reporter]]
    : [process.execPath, reporter];
  const started = performance.now();
  // The chart's Node settings, as the pod runs it.
  const runtime = chartRuntimeEnv('report', root);
  const profiling: Record<string, string> = cpuProfileDir === undefined ? {} : { NODE_OPTIONS: `${runtime.NODE_OPTIONS ?? ''} --cpu-prof --cpu-prof-dir=${cpuProfileDir}`.trim() };
  const child = spawnTracked(command as string, args as string[], { env: measuredEnv({ ...runtime, ...profiling }) });
  try {
    // Logging at info, as deployed: a line per report is part of what it costs.
    const port = await waitForLine(child, (line) => (line.includes('"msg":"reporter started"') ? (JSON.parse(line) as { port: number }).port : undefined), 60_000);
    discardOutput(child);
    const memory = sampleMemory(child.pid!, 50);
    for (;;) {
      if ((await get(port, '/readyz')).status === 200) break;
      await sleep(20);
    }
    const readyMs = performance.now() - started;
    const cpuReady = readCpuSeconds(child.pid!)!;
    const rssReady = readMemory(child.pid!)!.rssKiB;
    const heapReady = gauge((await get(port, '/metrics')).text, 'drainguard_nodejs_heap_size_used_bytes');
    progress(`report: ready after ${(readyMs / 1000).toFixed(1)} s with ${settings.pods} pods listed; draining ${settings.drainsPerSecond}/s for ${settings.drainSeconds} s`);

    const { sent, drainStart, sentAt, drainEnd } = await paceDrains(stub, settings);
    const cpuDrained = readCpuSeconds(child.pid!)!;
    const rssAfterDrains = readMemory(child.pid!)!.rssKiB;

    await sleep(settings.idleSeconds * 1000);
    const cpuIdle = readCpuSeconds(child.pid!)!;
    const metrics = (await get(port, '/metrics')).text;
    const peak = memory.last()!.peakKiB;
    memory.stop();
    const latencies = [...stub.reportLatenciesMs].sort((a, b) => a - b);
    const drainPhaseSeconds = (drainEnd - drainStart) / 1000;
    return {
      settings,
      readyMs: Math.round(readyMs),
      cpuUntilReadySeconds: Math.round(cpuReady * 100) / 100,
      rssReadyMiB: MiB(rssReady),
      heapReadyMiB: Math.round((heapReady / 1048576) * 10) / 10,
      memoryCapMiB: capped ? limitMiB : null,
      heapLimitMiB: heapMiB,
      runtime,
      chartMemoryLimitMiB: limitMiB,
      drainsSent: sent,
      drainPhaseSeconds: Math.round(drainPhaseSeconds * 10) / 10,
      achievedDrainsPerSecond: Math.round((sent / ((sentAt - drainStart) / 1000)) * 10) / 10,
      eventsCreated: stub.eventsCreated,
      cpuPerDrainMs: Math.round(((cpuDrained - cpuReady) / sent) * 1000 * 100) / 100,
      cpuCoresWhileDraining: Math.round(((cpuDrained - cpuReady) / drainPhaseSeconds) * 100) / 100,
      cpuCoresIdle: Math.round(((cpuIdle - cpuDrained) / settings.idleSeconds) * 1000) / 1000,
      rssAfterDrainsMiB: MiB(rssAfterDrains),
      peakRssMiB: MiB(peak),
      reportLatencyMs: {
        p50: Math.round(quantile(latencies, 0.5) * 10) / 10,
        p99: Math.round(quantile(latencies, 0.99) * 10) / 10,
        max: Math.round((latencies[latencies.length - 1] ?? NaN) * 10) / 10,
      },
      watchedPods: gauge(metrics, 'drainguard_reporter_watched_pods'),
    };
  } finally {
    await stopProcess(child);
    await stub.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

/**
 * `settings.drainsPerSecond` drains for `settings.drainSeconds`, paced (a drain due is written even
 * when the reporter is behind: a paced load, not a closed loop), then waits until every drain's pod
 * Event has arrived, two minutes at most (the caller sees a shortfall in `eventsCreated`). Times from
 * performance.now().
 */
export async function paceDrains(
  cluster: Pick<ReportBenchCluster, 'drain' | 'eventsCreated' | 'failure'>,
  settings: Pick<ReporterSettings, 'drainsPerSecond' | 'drainSeconds'>,
): Promise<{ sent: number; drainStart: number; sentAt: number; drainEnd: number }> {
  const total = settings.drainsPerSecond * settings.drainSeconds;
  const intervalMs = 1000 / settings.drainsPerSecond;
  const drainStart = performance.now();
  let sent = 0;
  while (sent < total) {
    const due = drainStart + sent * intervalMs;
    const now = performance.now();
    if (now < due) await sleep(due - now);
    // Catch up with every drain due by now.
    while (sent < total && drainStart + sent * intervalMs <= performance.now()) {
      cluster.drain();
      sent++;
    }
  }
  const sentAt = performance.now();
  while (cluster.eventsCreated < sent && cluster.failure === undefined && performance.now() - sentAt < 120_000) await sleep(20);
  if (cluster.failure) throw new Error(`the API server's drains failed: ${cluster.failure.message}`);
  return { sent, drainStart, sentAt, drainEnd: performance.now() };
}

export function reporterTable(report: ReporterReport): string[][] {
  const s = report.settings;
  return [
    ['figure', 'measured'],
    [`spawn → ready (paged list of ${s.pods.toLocaleString('en-US')} pods)`, `${(report.readyMs / 1000).toFixed(1)} s, ${report.cpuUntilReadySeconds} s CPU`],
    [
      `resident memory when ready (${report.runtime?.NODE_OPTIONS ?? `--max-old-space-size=${report.heapLimitMiB}`}${report.memoryCapMiB ? `, under the chart's ${report.memoryCapMiB} MiB cgroup limit` : ''})`,
      `${report.rssReadyMiB} MiB (V8 heap in use ${report.heapReadyMiB} MiB)`,
    ],
    [
      `drains at ${s.drainsPerSecond}/s for ${s.drainSeconds} s (achieved rate; first drain → last pod Event)`,
      `${report.drainsSent} drains (${report.achievedDrainsPerSecond}/s), ${report.eventsCreated} pod Events created in ${report.drainPhaseSeconds} s`,
    ],
    ['CPU per drain (its watch events, 2 Event creates)', `${report.cpuPerDrainMs} ms`],
    ['CPU while draining', `${report.cpuCoresWhileDraining} cores`],
    [`CPU idle afterwards (${s.idleSeconds} s)`, `${report.cpuCoresIdle} cores`],
    [`resident memory after the drains / peak (VmHWM); the chart's limit is ${report.chartMemoryLimitMiB} MiB`, `${report.rssAfterDrainsMiB} MiB / ${report.peakRssMiB} MiB`],
    ['report latency (termination written → pod Event received) p50 / p99 / max', `${report.reportLatencyMs.p50} / ${report.reportLatencyMs.p99} / ${report.reportLatencyMs.max} ms`],
    ['pods watched at the end (drainguard_reporter_watched_pods)', `${report.watchedPods}`],
  ];
}

if (require.main === module) {
  const quick = process.argv.includes('--quick');
  const profileFlag = process.argv.indexOf('--cpu-prof');
  const cpuProfileDir = profileFlag === -1 ? undefined : process.argv[profileFlag + 1];
  if (profileFlag !== -1 && (cpuProfileDir === undefined || cpuProfileDir.startsWith('--'))) {
    process.stderr.write('bench failed: --cpu-prof needs the directory to write the profile into (--cpu-prof DIR)\n');
    process.exit(2);
  }
  const certs = createBenchCertificates();
  benchReporter((line) => process.stderr.write(`${line}\n`), quick ? QUICK_REPORTER_SETTINGS : DEFAULT_REPORTER_SETTINGS, certs, cpuProfileDir === undefined ? {} : { cpuProfileDir: resolvePath(cpuProfileDir) })
    .then((report) => process.stdout.write(`${table(reporterTable(report))}\n`))
    .catch((error: unknown) => {
      process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
      process.exitCode = 1;
    })
    .finally(() => certs.remove());
}
