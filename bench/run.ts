/**
 * `npm run bench`: mutate(), HTTPS admission against the baselines, envoy-shutdown. Progress on stderr,
 * the table on stdout, every figure into bench/results.json (section `bench`).
 *
 *   npm run bench               full run (~3 minutes; run it on an otherwise idle machine)
 *   npm run bench -- --quick    smoke run with short durations, written to .tmp/ instead
 */
import { benchHttp, DEFAULT_HTTP_SETTINGS } from './http';
import { metLabel, reportRows, type BenchFigures } from './lib/goals';
import { beginSection, progress } from './lib/results';
import { table } from './lib/stats';
import { createBenchCertificates } from './lib/tls';
import { benchMutate } from './mutate';
import { benchShutdown } from './shutdown';

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const section = beginSection('bench', 'npm run bench', quick);

  const mutate = benchMutate(progress);
  const certs = createBenchCertificates();
  let figures: BenchFigures;
  try {
    const http = await benchHttp(certs, progress, quick ? { connections: 8, warmupSeconds: 1, maxSeconds: 3, pacedSeconds: 3 } : DEFAULT_HTTP_SETTINGS);
    const shutdown = await benchShutdown(progress, quick ? 2 : 7, quick ? 3 : 10);
    figures = { mutate, http, shutdown };
  } finally {
    certs.remove();
  }

  const { path, envelope } = section.finish(figures);
  const rows = reportRows(figures);
  process.stdout.write(`${table([['figure', 'value', 'goal', ''], ...rows.map((r) => [r.figure, r.value, r.goal, metLabel(r)])])}\n`);
  process.stdout.write(
    `\nload average ${envelope.loadAverageAtStart.oneMinute} → ${envelope.loadAverageAtEnd.oneMinute} (1 min, ${envelope.machine.cores} cores); written to ${path}\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
