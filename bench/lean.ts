/**
 * `npm run bench:lean -- --before DIR`: issue 33's before/after, one run: another built checkout (the
 * commit before the work, in a temporary worktree) against this one, each with its own chart's
 * settings, one after the other on the same machine:
 *
 *   - `drainguard report` against the stub API server (./report.ts, --quick settings: 10,000 pods,
 *     100 drains/s for 10 s);
 *   - `drainguard serve`'s memory in files and self mode (./serve-memory.ts: 30 s at 300 reviews/s,
 *     then 10 s idle);
 *   - on one real kube-apiserver with 10,000 protected pods (./report-kube.ts): `drainguard report`
 *     (--quick settings) and `drainguard check -A`.
 *
 * Written to bench/results.json (section `lean`), with the load average at start and end; `npm run
 * bench:readme` renders it in docs/benchmarks.md.
 *
 *   git worktree add --detach /tmp/drainguard-before 69e26fb && (cd /tmp/drainguard-before && npm ci)
 *   npm run bench:lean -- --before /tmp/drainguard-before
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from '../test/support/repo';
import { GOALS } from './lib/goals';
import { beginSection, progress } from './lib/results';
import { table } from './lib/stats';
import { createBenchCertificates } from './lib/tls';
import { benchReporter, QUICK_REPORTER_SETTINGS, type ReporterReport } from './report';
import { benchKube, kubeTables, type KubeBenchFigures, type KubeCheckoutFigures } from './report-kube';
import { benchServeMemory, DEFAULT_SERVE_MEMORY_SETTINGS, type ServeMemoryReport } from './serve-memory';

export interface LeanCheckout {
  commit: string;
  reporter: ReporterReport;
  serveMemory: ServeMemoryReport;
}

export interface LeanFigures {
  before: LeanCheckout;
  after: LeanCheckout;
  /** Both checkouts on one kube-apiserver: before first, then after. */
  kube: KubeBenchFigures;
}

const commitOf = (root: string) => spawnSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim() || root;

const met = (ok: boolean) => (ok ? 'met' : 'NOT MET');

/** The before/after rows: figure, before, after, the goal and whether after meets it (for docs/benchmarks.md and this command's output). */
export function leanRows(figures: LeanFigures): string[][] {
  const { before, after, kube } = figures;
  const mode = (c: LeanCheckout, name: string) => c.serveMemory.modes.find((m) => m.mode === name);
  const serve = (name: string) => (c: LeanCheckout) => {
    const m = mode(c, name);
    return m ? `${m.rssAfterLoadMiB} / ${m.rssAfterIdleMiB} / ${m.peakMiB} MiB` : 'not measured';
  };
  const serveMet = (name: string) => {
    const m = mode(after, name);
    return m ? met(m.rssAfterLoadMiB <= GOALS.serveRssMiB && m.rssAfterIdleMiB <= GOALS.serveRssMiB) : '';
  };
  const row = (figure: string, value: (c: LeanCheckout) => string, goal = '', verdict = '') => [figure, value(before), value(after), goal, verdict];
  const r = QUICK_REPORTER_SETTINGS;
  const s = after.serveMemory.settings;
  const { reporter } = after;
  const rows = [
    ['figure', `before (${before.commit})`, `after (${after.commit})`, 'goal', 'after'],
    row(
      `report, stub API: resident when ready / peak (${r.pods.toLocaleString('en-US')} pods, ${r.drainsPerSecond} drains/s for ${r.drainSeconds} s)`,
      (c) => `${c.reporter.rssReadyMiB} / ${c.reporter.peakRssMiB} MiB`,
      `≤ ${GOALS.reporterRssMiB} MiB`,
      met(reporter.rssReadyMiB <= GOALS.reporterRssMiB && reporter.peakRssMiB <= GOALS.reporterRssMiB),
    ),
    row('report, stub API: CPU per drain', (c) => `${c.reporter.cpuPerDrainMs} ms`, `≤ ${GOALS.reporterCpuPerDrainMs} ms`, met(reporter.cpuPerDrainMs <= GOALS.reporterCpuPerDrainMs)),
    row(
      'report, stub API: spawn → ready (its CPU)',
      (c) => `${(c.reporter.readyMs / 1000).toFixed(1)} s (${c.reporter.cpuUntilReadySeconds} s)`,
      `≤ ${GOALS.reporterReadyMs / 1000} s`,
      met(reporter.readyMs <= GOALS.reporterReadyMs),
    ),
    row(
      'report, stub API: termination → pod Event p99 (drains reported)',
      (c) => `${c.reporter.reportLatencyMs.p99} ms (${c.reporter.eventsCreated} of ${c.reporter.drainsSent})`,
      `≤ ${GOALS.reporterLatencyP99Ms} ms, every drain`,
      met(reporter.reportLatencyMs.p99 <= GOALS.reporterLatencyP99Ms && reporter.eventsCreated === reporter.drainsSent),
    ),
    ...(['files', 'self'] as const).map((name) =>
      row(
        `serve, ${name} mode: resident after ${s.loadSeconds} s at ${s.ratePerSecond} reviews/s / after ${s.idleSeconds} s idle / peak`,
        serve(name),
        `≤ ${GOALS.serveRssMiB} MiB after the load and idle`,
        serveMet(name),
      ),
    ),
  ];
  if (kube.ran) {
    const [kubeBefore, kubeAfter] = kube.checkouts;
    const pair = (figure: string, value: (c: KubeCheckoutFigures) => string) => [figure, kubeBefore ? value(kubeBefore) : '', kubeAfter ? value(kubeAfter) : '', '', 'reported'];
    rows.push(
      pair(`report, kube-apiserver ${kube.kubernetesVersion}: resident when ready / peak`, (c) => `${c.reporter.rssReadyMiB} / ${c.reporter.peakRssMiB} MiB`),
      pair('report, kube-apiserver: CPU per drain', (c) => `${c.reporter.cpuPerDrainMs} ms`),
      pair('report, kube-apiserver: spawn → ready (its CPU)', (c) => `${(c.reporter.readyMs / 1000).toFixed(1)} s (${c.reporter.cpuUntilReadySeconds} s)`),
      pair('report, kube-apiserver: drains reported, first drain → last pod Event', (c) => `${c.reporter.eventsCreated} of ${c.reporter.drainsSent} in ${c.reporter.drainPhaseSeconds} s`),
      pair('report, kube-apiserver: termination written → pod Event p50 / p99', (c) => `${c.reporter.reportLatencyMs.p50} / ${c.reporter.reportLatencyMs.p99} ms`),
      pair(
        `check -A, kube-apiserver, ${kube.pods.toLocaleString('en-US')} pods: wall / CPU / peak resident`,
        (c) => `${c.checkAll.wallSeconds} s / ${Math.round((c.checkAll.userSeconds + c.checkAll.systemSeconds) * 100) / 100} s / ${c.checkAll.peakRssMiB} MiB`,
      ),
    );
  } else {
    rows.push(['report and check -A on kube-apiserver', `not run: ${kube.why}`, '', '', '']);
  }
  return rows;
}

async function main(): Promise<void> {
  const index = process.argv.indexOf('--before');
  const beforeRoot = index >= 0 ? process.argv[index + 1] : undefined;
  if (beforeRoot === undefined) throw new Error('--before DIR is required: a built checkout of the commit before (npm ci there)');
  const before = resolve(beforeRoot);
  if (!existsSync(join(before, 'dist', 'cli', 'main.js'))) throw new Error(`${before}/dist/cli/main.js does not exist: run npm ci (or npm run build) there`);
  const section = beginSection('lean', `npm run bench:lean -- --before ${beforeRoot}`, false);
  const certs = createBenchCertificates();
  let figures: LeanFigures;
  try {
    const measure = async (root: string): Promise<LeanCheckout> => {
      const commit = commitOf(root);
      progress(`lean: ${commit}: report against the stub API`);
      const reporter = await benchReporter(progress, QUICK_REPORTER_SETTINGS, certs, { root });
      progress(`lean: ${commit}: serve's memory`);
      const serveMemory = await benchServeMemory(progress, DEFAULT_SERVE_MEMORY_SETTINGS, certs, { root });
      return { commit, reporter, serveMemory };
    };
    const beforeFigures = await measure(before);
    const afterFigures = await measure(REPO_ROOT);
    const kube = await benchKube(progress, QUICK_REPORTER_SETTINGS, [before, REPO_ROOT]);
    figures = { before: beforeFigures, after: afterFigures, kube };
  } finally {
    certs.remove();
  }
  const { path, envelope } = section.finish(figures);
  process.stdout.write(
    [
      table(leanRows(figures)),
      kubeTables(figures.kube),
      `load average (1 min) ${envelope.loadAverageAtStart.oneMinute} at start, ${envelope.loadAverageAtEnd.oneMinute} at end (${envelope.machine.cores} cores); written to ${path}`,
    ].join('\n\n') + '\n',
  );
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`bench:lean failed: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  });
}
