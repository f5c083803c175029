/**
 * HTTPS admission: drainguard, the decision-only reference, the express fixed answer and Pepr, all
 * running at once on one certificate, one TLS setup and one request body (the AdmissionReview of the
 * Contour pod), measured in interleaved rounds: in every round each server gets one run, in an order
 * rotated from round to round, so noise from a machine shared with other work spreads over all servers
 * instead of landing on whichever ran during it.
 *
 * Per server: maximum throughput (closed loop, autocannon), then fixed rates per replica (open loop,
 * latency from each request's due time, lib/paced-load.ts). Every run also records the CPU time the
 * server process used (/proc), so figures read as "how much work per request" as well as "how fast".
 * The decision-only reference times its own `decideAdmission` per request; drainguard's per-admission
 * log line stays on and is counted.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { maxThroughput, type ThroughputResult, type ThroughputTarget } from './lib/autocannon';
import { createHttpsClient, type ClientTarget } from './lib/https-client';
import type { StubCall } from './lib/kube-api-stub';
import { pacedLoadWithSamples, type PacedLoadResult } from './lib/paced-load';
import { peprVersion } from './lib/pepr';
import { contourPod } from '../test/support/generators/pods';
import { readCpuSeconds } from './lib/processes';
import { reviewBody } from '../test/support/generators/review';
import { SERVER_LABELS, startServer, type RunningServer, type ServerKind } from './lib/servers';
import { quantile } from './lib/stats';
import type { BenchCertificates } from './lib/tls';

export interface HttpSettings {
  connections: number;
  warmupSeconds: number;
  /** Length of one closed-loop run; each server gets one per round. */
  maxSeconds: number;
  /** Length of one fixed-rate run; each server gets one per round and rate. */
  pacedSeconds: number;
  rounds: number;
  /** Fixed rates per replica, requests per second. */
  rates: number[];
}

export const DEFAULT_HTTP_SETTINGS: HttpSettings = { connections: 8, warmupSeconds: 3, maxSeconds: 5, pacedSeconds: 5, rounds: 3, rates: [500, 1000] };
export const QUICK_HTTP_SETTINGS: HttpSettings = { connections: 8, warmupSeconds: 1, maxSeconds: 2, pacedSeconds: 2, rounds: 2, rates: [500, 1000] };

export const SERVER_ORDER: ServerKind[] = ['drainguard', 'decision-only', 'express-fixed', 'pepr'];

/** CPU time (user + system) the server process used over a set of runs. */
export interface ServerCpu {
  seconds: number;
  /** Share of one core over the runs' wall time: 1 is one core busy throughout. */
  busy: number;
  microsPerRequest: number;
}

export interface MaxFigures {
  /** Total answers over total time of all rounds. */
  requestsPerSecond: number;
  requests: number;
  errors: number;
  non2xx: number;
  rounds: ThroughputResult[];
  cpu: ServerCpu;
}

export interface PacedFigures {
  ratePerSecond: number;
  sent: number;
  answered: number;
  failures: number;
  failureSamples: string[];
  statuses: Record<string, number>;
  /** Pooled over all rounds, from each request's due time. */
  latencyP50Ms: number;
  latencyP99Ms: number;
  latencyMaxMs: number;
  /** Pooled over all rounds, from the moment the request was handed to the client. */
  serviceLatencyP50Ms: number;
  serviceLatencyP99Ms: number;
  rounds: PacedLoadResult[];
  cpu: ServerCpu;
}

export interface ServerFigures {
  server: ServerKind;
  label: string;
  /** What one answer to the benchmark's review looked like (checked before measuring). */
  answer: string;
  max: MaxFigures;
  paced: PacedFigures[];
}

export interface MicrosSummary {
  samples: number;
  medianMicros: number;
  meanMicros: number;
  p99Micros: number;
}

export interface HttpReport {
  settings: HttpSettings;
  requestBytes: number;
  servers: ServerFigures[];
  /** Maximum throughputs over each other (undefined when a server could not run). */
  ratios: {
    drainguardToExpress: number;
    drainguardToPepr?: number;
    decisionOnlyToExpress: number;
    peprToExpress?: number;
    drainguardToDecisionOnly: number;
  };
  /** `decideAdmission` per request inside the decision-only server, as it timed itself, per phase. */
  decisionInServer: { max: MicrosSummary; paced: { ratePerSecond: number; timing: MicrosSummary }[] };
  /**
   * drainguard's per-admission log line: lines written against the admissions drainguard counted in its
   * own metrics (they must match), and the answers the clients received (a closed-loop run ends with
   * requests in flight, which the server answers and logs after the client stopped counting).
   */
  drainguardLog: { admissionLines: number; admissionsCounted: number; answersReceived: number };
  pepr: { version: string; startupError?: string; apiCalls: StubCall[] };
}

function summariseMicros(samples: number[]): MicrosSummary {
  if (samples.length === 0) return { samples: 0, medianMicros: NaN, meanMicros: NaN, p99Micros: NaN };
  return {
    samples: samples.length,
    medianMicros: quantile(samples, 0.5),
    meanMicros: samples.reduce((a, b) => a + b, 0) / samples.length,
    p99Micros: quantile(samples, 0.99),
  };
}

/** Accumulates a server's CPU time over several runs. */
class CpuMeter {
  private seconds = 0;
  private wallSeconds = 0;
  private requests = 0;

  async measure<T>(pid: number, count: (result: T) => number, run: () => Promise<T>): Promise<T> {
    const cpuBefore = readCpuSeconds(pid);
    const started = performance.now();
    const result = await run();
    const wall = (performance.now() - started) / 1000;
    const cpuAfter = readCpuSeconds(pid);
    if (cpuBefore === undefined || cpuAfter === undefined) throw new Error(`server process ${pid} exited during the run`);
    this.seconds += cpuAfter - cpuBefore;
    this.wallSeconds += wall;
    this.requests += count(result);
    return result;
  }

  total(): ServerCpu {
    return { seconds: this.seconds, busy: this.seconds / this.wallSeconds, microsPerRequest: (this.seconds * 1e6) / Math.max(1, this.requests) };
  }
}

interface Contestant {
  server: RunningServer;
  target: ThroughputTarget & ClientTarget;
  answer: string;
  /** Answers this server gave, warm-up included (drainguard: compared with its log lines). */
  answers: number;
  maxRounds: ThroughputResult[];
  maxCpu: CpuMeter;
  paced: Map<number, { rounds: PacedLoadResult[]; latencies: number[]; serviceLatencies: number[]; cpu: CpuMeter }>;
}

/** Sends the review once and describes the answer; refuses to measure a server that answers wrongly. */
async function checkAnswer(server: RunningServer, target: ClientTarget, body: string): Promise<string> {
  const client = createHttpsClient(target, 1);
  try {
    const answer = await client.send({ path: server.path, headers: { 'content-type': 'application/json' }, body });
    const text = answer.body.toString('utf8');
    const response = (JSON.parse(text) as { response?: { allowed?: boolean; patch?: string; uid?: string } }).response;
    if (answer.status !== 200 || response?.allowed !== true || response.uid !== (JSON.parse(body) as { request: { uid: string } }).request.uid) {
      throw new Error(`${server.kind} answered the benchmark review with HTTP ${answer.status}: ${text.slice(0, 300)}`);
    }
    if (response.patch === undefined) return 'allowed, no patch';
    const operations = JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')) as unknown[];
    return `allowed with a JSON patch of ${operations.length} operation${operations.length === 1 ? '' : 's'} (${Buffer.byteLength(text)}-byte answer)`;
  } finally {
    client.close();
  }
}

/** The decision-only server's own decision times since the last read. */
async function drainDecisionTimes(target: ClientTarget): Promise<number[]> {
  const client = createHttpsClient(target, 1);
  try {
    const answer = await client.send({ method: 'GET', path: '/bench/decision-micros' });
    return JSON.parse(answer.body.toString('utf8')) as number[];
  } finally {
    client.close();
  }
}

/** Round `round` visits every server once, starting one further along the list each round. */
function rotated<T>(items: readonly T[], round: number): T[] {
  const shift = round % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}

/** The sum of drainguard's own admission counter over all its labels, from its /metrics. */
async function admissionsCounted(target: ClientTarget): Promise<number> {
  const client = createHttpsClient(target, 1);
  try {
    const text = (await client.send({ method: 'GET', path: '/metrics' })).body.toString('utf8');
    return text
      .split('\n')
      .filter((line) => line.startsWith('drainguard_admission_requests_total'))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  } finally {
    client.close();
  }
}

function countLines(path: string, marker: string): number {
  let count = 0;
  for (const line of readFileSync(path, 'utf8').split('\n')) if (line.includes(marker)) count += 1;
  return count;
}

export async function benchHttp(certs: BenchCertificates, progress: (line: string) => void, settings = DEFAULT_HTTP_SETTINGS): Promise<HttpReport> {
  const body = reviewBody(contourPod());
  const contestants: Contestant[] = [];
  let peprStartupError: string | undefined;
  let peprCalls: StubCall[] = [];
  try {
    for (const kind of SERVER_ORDER) {
      progress(`https: starting ${SERVER_LABELS[kind]}`);
      let server: RunningServer;
      try {
        server = await startServer(kind, certs, progress);
      } catch (error) {
        // Pepr depends on its own install and build; the rest of the benchmark still means something without it.
        if (kind !== 'pepr') throw error;
        peprStartupError = (error as Error).message;
        progress(`https: Pepr could not be started, it is left out of this run: ${peprStartupError}`);
        continue;
      }
      const target = { port: server.port, path: server.path, body, ca: certs.ca, servername: certs.servername };
      contestants.push({ server, target, answer: '', answers: 0, maxRounds: [], maxCpu: new CpuMeter(), paced: new Map() });
    }

    for (const c of contestants) {
      c.answer = await checkAnswer(c.server, c.target, body);
      c.answers += 1;
      progress(`https ${c.server.kind}: ${c.answer}; warm-up ${settings.warmupSeconds} s`);
      const warmup = await maxThroughput(c.target, settings.connections, settings.warmupSeconds);
      c.answers += warmup.requests;
    }
    const decisionOnly = contestants.find((c) => c.server.kind === 'decision-only');
    if (decisionOnly) await drainDecisionTimes(decisionOnly.target);
    const decisionMax: number[] = [];
    const decisionPaced = new Map<number, number[]>();

    for (let round = 0; round < settings.rounds; round += 1) {
      for (const c of rotated(contestants, round)) {
        progress(`https round ${round + 1}/${settings.rounds} ${c.server.kind}: closed loop, ${settings.connections} connections, ${settings.maxSeconds} s`);
        const result = await c.maxCpu.measure(c.server.pid, (r: ThroughputResult) => r.requests, () => maxThroughput(c.target, settings.connections, settings.maxSeconds));
        c.maxRounds.push(result);
        c.answers += result.requests;
        if (c === decisionOnly) decisionMax.push(...(await drainDecisionTimes(c.target)));
      }
    }
    for (const rate of settings.rates) {
      for (let round = 0; round < settings.rounds; round += 1) {
        for (const c of rotated(contestants, round)) {
          progress(`https round ${round + 1}/${settings.rounds} ${c.server.kind}: fixed ${rate} req/s, ${settings.pacedSeconds} s`);
          const slot = c.paced.get(rate) ?? { rounds: [], latencies: [], serviceLatencies: [], cpu: new CpuMeter() };
          c.paced.set(rate, slot);
          const run = await slot.cpu.measure(
            c.server.pid,
            (r) => r.result.answered,
            () =>
              pacedLoadWithSamples({
                target: c.target,
                request: { path: c.server.path, headers: { 'content-type': 'application/json' }, body },
                ratePerSecond: rate,
                durationSeconds: settings.pacedSeconds,
                connections: settings.connections,
              }),
          );
          slot.rounds.push(run.result);
          for (const value of run.latencies) slot.latencies.push(value);
          for (const value of run.serviceLatencies) slot.serviceLatencies.push(value);
          c.answers += run.result.answered;
          if (c === decisionOnly) {
            const pool = decisionPaced.get(rate) ?? [];
            for (const value of await drainDecisionTimes(c.target)) pool.push(value);
            decisionPaced.set(rate, pool);
          }
        }
      }
    }

    const drainguard = contestants.find((c) => c.server.kind === 'drainguard');
    const counted = drainguard ? await admissionsCounted(drainguard.target) : 0;
    const admissionLines = drainguard?.server.logPath ? countLines(drainguard.server.logPath, '"msg":"admission"') : 0;
    peprCalls = [...(contestants.find((c) => c.server.kind === 'pepr')?.server.apiCalls ?? [])];

    const figures: ServerFigures[] = contestants.map((c) => {
      const requests = c.maxRounds.reduce((n, r) => n + r.requests, 0);
      const seconds = c.maxRounds.reduce((n, r) => n + r.durationSeconds, 0);
      return {
        server: c.server.kind,
        label: SERVER_LABELS[c.server.kind],
        answer: c.answer,
        max: {
          requestsPerSecond: requests / seconds,
          requests,
          errors: c.maxRounds.reduce((n, r) => n + r.errors, 0),
          non2xx: c.maxRounds.reduce((n, r) => n + r.non2xx, 0),
          rounds: c.maxRounds,
          cpu: c.maxCpu.total(),
        },
        paced: [...c.paced.entries()].map(([rate, slot]) => pooledPaced(rate, slot)),
      };
    });
    const rps = (kind: ServerKind) => figures.find((f) => f.server === kind)?.max.requestsPerSecond;
    const ratio = (a: ServerKind, b: ServerKind) => {
      const top = rps(a);
      const bottom = rps(b);
      return top === undefined || bottom === undefined ? undefined : top / bottom;
    };
    return {
      settings,
      requestBytes: Buffer.byteLength(body),
      servers: figures,
      ratios: {
        drainguardToExpress: ratio('drainguard', 'express-fixed') ?? NaN,
        drainguardToPepr: ratio('drainguard', 'pepr'),
        decisionOnlyToExpress: ratio('decision-only', 'express-fixed') ?? NaN,
        peprToExpress: ratio('pepr', 'express-fixed'),
        drainguardToDecisionOnly: ratio('drainguard', 'decision-only') ?? NaN,
      },
      decisionInServer: {
        max: summariseMicros(decisionMax),
        paced: [...decisionPaced.entries()].map(([ratePerSecond, samples]) => ({ ratePerSecond, timing: summariseMicros(samples) })),
      },
      drainguardLog: { admissionLines, admissionsCounted: counted, answersReceived: drainguard?.answers ?? 0 },
      pepr: { version: peprVersion(), ...(peprStartupError !== undefined ? { startupError: peprStartupError } : {}), apiCalls: peprCalls },
    };
  } finally {
    for (const c of contestants) await c.server.stop();
  }
}

function pooledPaced(
  ratePerSecond: number,
  slot: { rounds: PacedLoadResult[]; latencies: number[]; serviceLatencies: number[]; cpu: CpuMeter },
): PacedFigures {
  const statuses: Record<string, number> = {};
  for (const run of slot.rounds) for (const [status, count] of Object.entries(run.statuses)) statuses[status] = (statuses[status] ?? 0) + count;
  const pooled = (values: number[], q: number) => (values.length > 0 ? quantile(values, q) : NaN);
  return {
    ratePerSecond,
    sent: slot.rounds.reduce((n, r) => n + r.sent, 0),
    answered: slot.rounds.reduce((n, r) => n + r.answered, 0),
    failures: slot.rounds.reduce((n, r) => n + r.failures, 0),
    failureSamples: slot.rounds.flatMap((r) => r.failureSamples).slice(0, 10),
    statuses,
    latencyP50Ms: pooled(slot.latencies, 0.5),
    latencyP99Ms: pooled(slot.latencies, 0.99),
    latencyMaxMs: slot.latencies.length > 0 ? slot.latencies.reduce((a, b) => Math.max(a, b)) : NaN,
    serviceLatencyP50Ms: pooled(slot.serviceLatencies, 0.5),
    serviceLatencyP99Ms: pooled(slot.serviceLatencies, 0.99),
    rounds: slot.rounds,
    cpu: slot.cpu.total(),
  };
}
