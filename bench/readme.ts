/**
 * Renders bench/results.json as the README's "Benchmarks" section (Markdown on stdout), so the README
 * quotes the committed figures instead of numbers typed by hand.
 *
 *   npm run bench:readme > .tmp/readme-bench.md
 */
import type { FuzzReport } from './fuzz';
import { metLabel, reportRows, type BenchFigures } from './lib/goals';
import { readResults, resultsPath, type SectionEnvelope } from './lib/results';
import type { LoadReport } from './load';

const cell = (text: string) => text.replace(/\|/g, '\\|');
const mdTable = (rows: string[][]) => {
  const [header = [], ...body] = rows;
  return [header, header.map(() => '---'), ...body].map((row) => `| ${row.map(cell).join(' | ')} |`).join('\n');
};

function conditions(section: SectionEnvelope<unknown>): string {
  const { machine } = section;
  return (
    `${section.date.slice(0, 16).replace('T', ' ')} UTC, ${machine.cpuModel} (${machine.cores} cores), ${machine.memoryGiB} GiB, ` +
    `${machine.os}, Node ${machine.node}; load average (1 min) ${section.loadAverageAtStart.oneMinute} at start, ` +
    `${section.loadAverageAtEnd.oneMinute} at end`
  );
}

function goalsSummary(section: SectionEnvelope<BenchFigures>): string {
  const goals = reportRows(section.figures).filter((row) => row.met !== undefined);
  return ['Goals of issue 6:', '', ...goals.map((row) => `- ${row.met ? 'met' : '**not met**'}: ${row.figure} ${row.goal} — measured ${row.value}`)].join('\n');
}

function benchSection(section: SectionEnvelope<BenchFigures>): string {
  const rows = reportRows(section.figures);
  const { http } = section.figures;
  return [
    '### `npm run bench`',
    '',
    `Measured ${conditions(section)}.`,
    '',
    goalsSummary(section),
    '',
    mdTable([['figure', 'value', 'goal', ''], ...rows.map((r) => [r.figure, r.value, r.goal, metLabel(r)])]),
    '',
    `HTTPS runs: each server is its own process on 127.0.0.1 with the same certificate (RSA-2048, TLS ≥ 1.2) and the same ` +
      `${http.requestBytes}-byte AdmissionReview of the Contour pod; ${http.settings.connections} keep-alive connections; ` +
      `maximum throughput is an autocannon run of ${http.settings.maxSeconds} s after ${http.settings.warmupSeconds} s of warm-up; ` +
      `latency at half rate is an open-loop fixed-rate run of ${http.settings.pacedSeconds} s measured from each request's due time. ` +
      'The baselines parse the review and return a fixed "allowed" answer: `express` (drainguard\'s own HTTP stack, ETag and ' +
      'X-Powered-By off as in drainguard) and bare `node:https`. `decision-only` is the express baseline answering with ' +
      "drainguard's decision (`decideAdmission`: mutate plus the patch verification) and nothing else, no logs, no metrics: " +
      'the ceiling for any server around this decision. Server CPU is user + system time of the server process from ' +
      '/proc/PID/stat over each run; "busy" is that time over the run\'s wall time (1 = one core). ' +
      'The load generator runs on the same 2-core machine as the server, so a baseline that outruns it is reported below its real maximum. ' +
      "Fixed-rate runs use bench/lib/paced-load.ts rather than autocannon's `overallRate`, which sends each connection's whole " +
      'per-second quota back to back at the start of every second (bursts at full speed, then idle). autocannon reports latency in whole milliseconds.',
    '',
    'envoy-shutdown runs are the built `dist/envoy-shutdown/envoy-shutdown`, each its own process, against the Envoy admin ' +
      'simulator (test/support) over a unix socket with one real client connection: start-up is spawn → first admin request ' +
      'recorded by the simulator; peak RSS is VmHWM from /proc sampled every 10 ms until exit; reaction is the last client ' +
      'connection closing (count = threshold 0) → process exit, with the close placed at a different point of the 1 s poll cycle ' +
      'in each run (`--min-drain 0s`).',
  ].join('\n');
}

function loadSection(section: SectionEnvelope<LoadReport>): string {
  const { load, rssMB, errors } = section.figures;
  return [
    '### `npm run bench:load`',
    '',
    `Measured ${conditions(section)}.`,
    '',
    mdTable([
      ['figure', 'value'],
      ['fixed rate × duration', `${load.ratePerSecond} req/s × ${load.durationSeconds} s, ${load.connections} keep-alive connections`],
      ['requests answered / errors', `${load.answered} / ${errors}`],
      ['latency p50 / p99 / max', `${load.latencyP50Ms.toFixed(2)} / ${load.latencyP99Ms.toFixed(2)} / ${load.latencyMaxMs.toFixed(1)} ms`],
      ['server RSS start / end / peak', `${rssMB.start} / ${rssMB.end} / ${rssMB.peak} MB`],
      ['RSS growth: whole run / after the first 10 s', `${rssMB.growth} / ${rssMB.growthAfterWarmup} MB`],
      [`RSS every ${section.figures.sampleEverySeconds} s`, `${section.figures.rssSeriesMB.join(', ')} MB`],
      [`V8 heap used every ${section.figures.sampleEverySeconds} s`, `${section.figures.heapUsedSeriesMB.join(', ')} MB`],
    ]),
  ].join('\n');
}

function fuzzSection(section: SectionEnvelope<FuzzReport>): string {
  const report = section.figures;
  const statuses = [...new Set(Object.values(report.byClass).flatMap((row) => Object.keys(row)))].sort();
  const rows = Object.entries(report.byClass)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([cls, row]) => [cls, String(Object.values(row).reduce((a, b) => a + b, 0)), ...statuses.map((s) => String(row[s] ?? ''))]);
  return [
    '### `npm run bench:fuzz`',
    '',
    `Measured ${conditions(section)}. Seed ${report.seed}.`,
    '',
    mdTable([['class', 'requests', ...statuses.map((s) => `HTTP ${s}`)], ...rows]),
    '',
    `${report.total} requests; ${report.patchesVerified} valid reviews were answered with a patch that applied (rfc6902) and ` +
      `left a pod passing validatePod. ${report.failures} failures (5xx, crash, valid review answered differently from the core, ` +
      `patch that does not apply or leaves an invalid pod); server alive at the end: ${report.serverAliveAtEnd ? 'yes' : 'NO'}, ` +
      `/healthz ${report.healthzAtEnd}. Garbage answered through drainguard's own-bug path (admitted unchanged with a warning): ` +
      `${report.internalErrors}.`,
  ].join('\n');
}

function main(): void {
  const results = readResults(resultsPath(process.argv.includes('--quick')));
  const parts = ['## Benchmarks', '', 'Reproduce with `npm run bench`, `npm run bench:load` and `npm run bench:fuzz` (figures in `bench/results.json`).'];
  if (results.bench) parts.push('', benchSection(results.bench as SectionEnvelope<BenchFigures>));
  if (results.load) parts.push('', loadSection(results.load as SectionEnvelope<LoadReport>));
  if (results.fuzz) parts.push('', fuzzSection(results.fuzz as SectionEnvelope<FuzzReport>));
  process.stdout.write(`${parts.join('\n')}\n`);
}

main();
