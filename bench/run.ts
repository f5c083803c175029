/**
 * `npm run bench`: the decision in a tight loop, the growth check, HTTPS admission (drainguard, the
 * decision-only reference, the express fixed answer and Pepr in one interleaved run), envoy-shutdown,
 * and `drainguard report` with 10,000 watched pods and 100 drains/s, against the stub API server and
 * against a real kube-apiserver (./report-kube.ts, with `drainguard check -A` on the same pods; skipped,
 * with the reason, where it cannot run).
 * Progress on stderr, the tables on stdout, every figure into bench/results.json (section `bench`),
 * with the machine's load average at start and end.
 *
 *   npm run bench               full run (about 10 minutes, 4 of them on kube-apiserver; run it on an otherwise idle machine)
 *   npm run bench -- --quick    every path with short runs (about 5 minutes), written to .tmp/ instead
 */
import { benchGrowth, DEFAULT_GROWTH_SETTINGS, QUICK_GROWTH_SETTINGS } from './growth';
import { benchHttp, DEFAULT_HTTP_SETTINGS, QUICK_HTTP_SETTINGS } from './http';
import { decisionRows, goalRows, growthTable, metLabel, serverTable, type BenchFigures, type ReportRow } from './lib/goals';
import { beginSection, progress } from './lib/results';
import { table } from './lib/stats';
import { createBenchCertificates } from './lib/tls';
import { benchReporter, DEFAULT_REPORTER_SETTINGS, QUICK_REPORTER_SETTINGS, reporterTable } from './report';
import { benchKube, kubeTables } from './report-kube';
import { benchShutdown } from './shutdown';
import { benchTightLoop } from './tight-loop';

const rowTable = (rows: ReportRow[]) => table([['figure', 'value', 'goal', ''], ...rows.map((r) => [r.figure, r.value, r.goal, metLabel(r)])]);

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const section = beginSection('bench', 'npm run bench', quick);

  const tightLoop = benchTightLoop(progress, quick);
  const growth = await benchGrowth(progress, quick ? QUICK_GROWTH_SETTINGS : DEFAULT_GROWTH_SETTINGS);
  const certs = createBenchCertificates();
  let figures: BenchFigures;
  try {
    const http = await benchHttp(certs, progress, quick ? QUICK_HTTP_SETTINGS : DEFAULT_HTTP_SETTINGS);
    const shutdown = await benchShutdown(progress, quick ? 2 : 7, quick ? 3 : 10);
    const report = await benchReporter(progress, quick ? QUICK_REPORTER_SETTINGS : DEFAULT_REPORTER_SETTINGS, certs);
    const kube = await benchKube(progress, quick ? QUICK_REPORTER_SETTINGS : DEFAULT_REPORTER_SETTINGS);
    figures = { tightLoop, growth, http, shutdown, report, kube };
  } finally {
    certs.remove();
  }

  const { path, envelope } = section.finish(figures);
  process.stdout.write(
    [
      rowTable(goalRows(figures)),
      table(serverTable(figures.http)),
      rowTable(decisionRows(figures)),
      table(growthTable(figures.growth)),
      table(reporterTable(figures.report!)),
      kubeTables(figures.kube!),
      `load average (1 min) ${envelope.loadAverageAtStart.oneMinute} at start, ${envelope.loadAverageAtEnd.oneMinute} at end (${envelope.machine.cores} cores); written to ${path}`,
    ].join('\n\n') + '\n',
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
