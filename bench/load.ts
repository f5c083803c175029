/**
 * `npm run bench:load`: `drainguard serve` under a fixed rate of Contour-pod admissions for 60 s on
 * loopback, its RSS read from /proc throughout. Every answer must be a 200 allowing the pod with a
 * patch; any error makes the run exit non-zero (that is a correctness failure, not a timing).
 *
 *   npm run bench:load [-- --rate N] [-- --seconds N] [-- --quick]
 */
import { createHttpsClient, type ClientTarget } from './lib/https-client';
import { pacedLoad, type PacedLoadResult } from './lib/paced-load';
import { contourPod } from '../test/support/generators/pods';
import { readMemory } from './lib/processes';
import { reviewBody } from '../test/support/generators/review';
import { beginSection, progress } from './lib/results';
import { startDrainguard } from './lib/servers';
import { table } from './lib/stats';
import { createBenchCertificates } from './lib/tls';

export interface LoadReport {
  load: PacedLoadResult;
  /** RSS of the server process, MB (10^6 bytes). */
  rssMB: {
    start: number;
    end: number;
    peak: number;
    growth: number;
    /** From the sample 10 s in (JIT and heap warmed up) to the end: a leak shows here, warm-up does not. */
    growthAfterWarmup: number;
  };
  /** RSS every `sampleEverySeconds`, to tell a plateau from steady growth. */
  rssSeriesMB: number[];
  /** V8 heap in use every `sampleEverySeconds` (from the server's own /metrics): RSS can grow without it. */
  heapUsedSeriesMB: number[];
  sampleEverySeconds: number;
  errors: number;
}

function numberFlag(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  if (index < 0) return fallback;
  const value = Number(process.argv[index + 1]);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} needs a positive number`);
  return value;
}

/** A 200 that allows the pod and carries a patch (the Contour pod is always mutated). */
function checkAnswer(status: number, body: Buffer): void {
  if (status !== 200) throw new Error(`HTTP ${status}: ${body.toString('utf8').slice(0, 200)}`);
  const response = (JSON.parse(body.toString('utf8')) as { response?: { allowed?: boolean; patch?: string } }).response;
  if (response?.allowed !== true || typeof response.patch !== 'string') throw new Error(`unexpected answer: ${body.toString('utf8').slice(0, 200)}`);
}

/** The server's V8 heap in use, from its own Prometheus metrics (prom-client's default process metrics). */
async function heapUsedMB(target: ClientTarget): Promise<number> {
  const client = createHttpsClient(target, 1);
  try {
    const answer = await client.send({ method: 'GET', path: '/metrics' });
    const match = /^drainguard_nodejs_heap_size_used_bytes (\S+)$/m.exec(answer.body.toString('utf8'));
    return match ? Math.round((Number(match[1]) / 1e6) * 10) / 10 : NaN;
  } catch {
    return NaN;
  } finally {
    client.close();
  }
}

/** Index in the RSS series of the sample taken 10 s into the load. */
const WARMED_UP_SAMPLE = 2;

const toMB = (kib: number) => Math.round(((kib * 1024) / 1e6) * 10) / 10;

const signed = (value: number) => `${value >= 0 ? '+' : ''}${value}`;

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const rate = numberFlag('rate', 300);
  const seconds = numberFlag('seconds', quick ? 10 : 60);
  const section = beginSection('load', 'npm run bench:load', quick);

  const certs = createBenchCertificates();
  const server = await startDrainguard(certs).catch((error: unknown) => {
    certs.remove();
    throw error;
  });
  let report: LoadReport;
  try {
    const startKiB = readMemory(server.pid)?.rssKiB ?? NaN;
    const sampleEverySeconds = 5;
    const series: number[] = [toMB(startKiB)];
    const target = { port: server.port, ca: certs.ca, servername: certs.servername };
    const heapSeries: number[] = [];
    const sampler = setInterval(() => {
      const reading = readMemory(server.pid);
      if (reading) series.push(toMB(reading.rssKiB));
      void heapUsedMB(target).then((heap) => {
        heapSeries.push(heap);
        progress(`load: ${(series.length - 1) * sampleEverySeconds} s, server RSS ${series.at(-1)} MB, heap used ${heap} MB`);
      });
    }, sampleEverySeconds * 1000);
    progress(`load: ${rate} req/s for ${seconds} s against drainguard serve (pid ${server.pid})`);
    const body = reviewBody(contourPod(), 'b3c0ffee-0000-4000-8000-000000000002');
    const load = await pacedLoad({
      target,
      request: { path: '/mutate', headers: { 'content-type': 'application/json' }, body },
      ratePerSecond: rate,
      durationSeconds: seconds,
      connections: 8,
      check: checkAnswer,
    });
    clearInterval(sampler);
    const end = readMemory(server.pid);
    if (!end) throw new Error('drainguard serve died during the load test');
    series.push(toMB(end.rssKiB));
    const errors = load.failures + (load.sent - load.answered) + Object.entries(load.statuses).filter(([s]) => s !== '200').reduce((n, [, c]) => n + c, 0);
    report = {
      load,
      rssMB: {
        start: toMB(startKiB),
        end: toMB(end.rssKiB),
        peak: toMB(end.peakKiB),
        growth: toMB(end.rssKiB - startKiB),
        growthAfterWarmup: Math.round((toMB(end.rssKiB) - (series[WARMED_UP_SAMPLE] ?? NaN)) * 10) / 10,
      },
      rssSeriesMB: series,
      heapUsedSeriesMB: heapSeries,
      sampleEverySeconds,
      errors,
    };
  } finally {
    await server.stop();
    certs.remove();
  }

  const { path } = section.finish(report);
  const { load, rssMB } = report;
  process.stdout.write(
    `${table([
      ['figure', 'value'],
      ['rate × duration', `${load.ratePerSecond} req/s × ${load.durationSeconds} s (${load.connections} keep-alive connections)`],
      ['requests sent / answered', `${load.sent} / ${load.answered}`],
      ['statuses', JSON.stringify(load.statuses)],
      ['errors', `${report.errors}${load.failureSamples.length ? ` (${load.failureSamples.join('; ')})` : ''}`],
      ['latency p50/p99/max', `${load.latencyP50Ms.toFixed(2)}/${load.latencyP99Ms.toFixed(2)}/${load.latencyMaxMs.toFixed(1)} ms`],
      ['server RSS start/end/peak', `${rssMB.start}/${rssMB.end}/${rssMB.peak} MB`],
      ['server RSS growth (whole run / after 10 s)', `${signed(rssMB.growth)} / ${signed(rssMB.growthAfterWarmup)} MB`],
      ['server RSS every 5 s', report.rssSeriesMB.join(' ')],
      ['server heap used every 5 s', report.heapUsedSeriesMB.join(' ')],
    ])}\nwritten to ${path}\n`,
  );
  if (report.errors > 0) process.exitCode = 1;
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:load failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
