/**
 * HTTPS admission throughput and latency of `drainguard serve` against the baselines, on one
 * certificate, one TLS setup and one request body (the AdmissionReview of the Contour pod).
 *
 * Per server: a short warm-up, a maximum-throughput run (autocannon, closed loop), then a fixed-rate run
 * at half of drainguard's maximum for the p99 (the same rate for every server, so latencies compare),
 * and for drainguard one more at a quarter of its maximum. Each run also records the CPU time the server
 * process used, so a figure can be read as "how busy was the server" rather than only "how fast".
 */
import { performance } from 'node:perf_hooks';
import { admissionReview } from '../test/integration/server/webhook-test-kit';
import { maxThroughput, type ThroughputResult, type ThroughputTarget } from './lib/autocannon';
import { pacedLoad, type PacedLoadResult } from './lib/paced-load';
import { contourPod } from './lib/pods';
import { readCpuSeconds } from './lib/processes';
import { startServer, type ServerKind } from './lib/servers';
import type { BenchCertificates } from './lib/tls';

export interface HttpSettings {
  connections: number;
  warmupSeconds: number;
  maxSeconds: number;
  pacedSeconds: number;
}

export const DEFAULT_HTTP_SETTINGS: HttpSettings = { connections: 8, warmupSeconds: 3, maxSeconds: 10, pacedSeconds: 10 };

/** CPU time (user + system) the server process used during one run. */
export interface ServerCpu {
  seconds: number;
  /** Share of one core over the run's wall time: 1 is one core busy throughout. */
  busy: number;
  microsPerRequest: number;
}

export interface ServerFigures {
  server: ServerKind;
  max: ThroughputResult;
  halfRate: PacedLoadResult;
  /** drainguard only: the same at a quarter of its maximum, to show where the latency tail starts. */
  quarterRate?: PacedLoadResult;
  cpu: { max: ServerCpu; halfRate: ServerCpu; quarterRate?: ServerCpu };
}

export interface HttpReport {
  settings: HttpSettings;
  requestBytes: number;
  servers: ServerFigures[];
  /**
   * Maximum throughputs over each other. `express` (drainguard / express baseline) is the headline;
   * `decisionCeiling` (decision-only / express baseline) is what any server running drainguard's decision
   * can reach; `adapter` (drainguard / decision-only) is what drainguard's own server keeps of that.
   */
  throughputRatio: { express: number; node: number; decisionCeiling: number; adapter: number };
}

const ORDER: ServerKind[] = ['drainguard', 'decision-only', 'baseline-express', 'baseline-node'];

/** Runs `run` and measures the server's CPU time and the wall time it took. */
async function withServerCpu<T>(pid: number, requests: (result: T) => number, run: () => Promise<T>): Promise<{ result: T; cpu: ServerCpu }> {
  const cpuBefore = readCpuSeconds(pid);
  const started = performance.now();
  const result = await run();
  const wallSeconds = (performance.now() - started) / 1000;
  const cpuAfter = readCpuSeconds(pid);
  if (cpuBefore === undefined || cpuAfter === undefined) throw new Error(`server process ${pid} exited during the run`);
  const seconds = cpuAfter - cpuBefore;
  return { result, cpu: { seconds, busy: seconds / wallSeconds, microsPerRequest: (seconds * 1e6) / Math.max(1, requests(result)) } };
}

export async function benchHttp(certs: BenchCertificates, progress: (line: string) => void, settings = DEFAULT_HTTP_SETTINGS): Promise<HttpReport> {
  const body = JSON.stringify(admissionReview(contourPod(), { uid: 'b3c0ffee-0000-4000-8000-000000000001' }));
  const maxima = new Map<ServerKind, ThroughputResult>();
  const figures: ServerFigures[] = [];
  let halfRate: number | undefined;

  for (const kind of ORDER) {
    const server = await startServer(kind, certs);
    try {
      const target: ThroughputTarget = { port: server.port, path: '/mutate', body, ca: certs.ca, servername: certs.servername };
      progress(`https ${kind}: warm-up ${settings.warmupSeconds} s`);
      await maxThroughput(target, settings.connections, settings.warmupSeconds);
      progress(`https ${kind}: maximum throughput, ${settings.connections} keep-alive connections, ${settings.maxSeconds} s`);
      const { result: max, cpu: maxCpu } = await withServerCpu(server.pid, (r) => r.requests, () => maxThroughput(target, settings.connections, settings.maxSeconds));
      maxima.set(kind, max);
      // drainguard runs first: its half rate is the one every server is measured at.
      halfRate ??= Math.max(1, Math.round(max.requestsPerSecond / 2));
      progress(`https ${kind}: ${Math.round(max.requestsPerSecond)} req/s; fixed rate ${halfRate} req/s for ${settings.pacedSeconds} s`);
      const paced = (ratePerSecond: number) =>
        withServerCpu(
          server.pid,
          (r) => r.answered,
          () =>
            pacedLoad({
              target,
              request: { path: '/mutate', headers: { 'content-type': 'application/json' }, body },
              ratePerSecond,
              durationSeconds: settings.pacedSeconds,
              connections: settings.connections,
            }),
        );
      const half = await paced(halfRate);
      if (kind === 'drainguard') {
        const quarterRate = Math.max(1, Math.round(halfRate / 2));
        progress(`https ${kind}: fixed rate ${quarterRate} req/s for ${settings.pacedSeconds} s`);
        const quarter = await paced(quarterRate);
        figures.push({
          server: kind,
          max,
          halfRate: half.result,
          quarterRate: quarter.result,
          cpu: { max: maxCpu, halfRate: half.cpu, quarterRate: quarter.cpu },
        });
      } else {
        figures.push({ server: kind, max, halfRate: half.result, cpu: { max: maxCpu, halfRate: half.cpu } });
      }
    } finally {
      await server.stop();
    }
  }

  const rps = (kind: ServerKind) => maxima.get(kind)?.requestsPerSecond ?? NaN;
  return {
    settings,
    requestBytes: Buffer.byteLength(body),
    servers: figures,
    throughputRatio: {
      express: rps('drainguard') / rps('baseline-express'),
      node: rps('drainguard') / rps('baseline-node'),
      decisionCeiling: rps('decision-only') / rps('baseline-express'),
      adapter: rps('drainguard') / rps('decision-only'),
    },
  };
}
