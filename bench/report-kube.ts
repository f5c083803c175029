/**
 * The reporter benchmark (./report.ts) against a real kube-apiserver (lib/report-real-cluster.ts:
 * etcd and kube-apiserver of the test cluster, the chart's reporter RBAC and webhook configuration,
 * 10,000 protected pods on one registered node), then `drainguard check -A` on the same pods
 * (lib/check-all.ts: wall time, CPU, peak resident memory).
 *
 * Needs root (the cluster's network: a bridge), as the kube test lane does, and the control plane's
 * executables (built from test/cluster/go.mod on first use: minutes). Where it cannot run, `npm run
 * bench` says why and goes on.
 *
 * `--checkout DIR` (repeatable) measures those built checkouts' CLIs (an older commit's, for a
 * before/after) on the same cluster and pods, in the order given, instead of this one's; `this` names
 * this checkout.
 *
 *   npm run bench                        (with the other benchmarks)
 *   tsc -p tsconfig.bench.json && node node_modules/.cache/drainguard-bench/bench/report-kube.js [--quick] [--pods N] [--checkout DIR ...] [--json]
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from '../test/support/repo';
import { benchCheckAll, type CheckAllFigures } from './lib/check-all';
import { startRealReportCluster } from './lib/report-real-cluster';
import { table } from './lib/stats';
import { createBenchCertificates } from './lib/tls';
import { benchReporter, DEFAULT_REPORTER_SETTINGS, QUICK_REPORTER_SETTINGS, reporterTable, type ReporterReport, type ReporterSettings } from './report';

export interface KubeCheckoutFigures {
  /** `git describe`-like name of the checkout measured. */
  checkout: string;
  reporter: ReporterReport;
  checkAll: CheckAllFigures;
}

export type KubeBenchFigures =
  | { ran: true; kubernetesVersion: string; pods: number; podsCreatedSeconds: number; checkouts: KubeCheckoutFigures[] }
  | { ran: false; why: string };

/** Why the real cluster cannot run here, or undefined when it can. */
export function kubeUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (the cluster network is a bridge and namespaces): run as root, as the kube test lane does';
  if (spawnSync('ip', ['-V'], { stdio: 'ignore' }).status !== 0) return 'needs iproute2 (ip)';
  if (!existsSync('/usr/bin/time')) return 'needs GNU time (/usr/bin/time) for check -A';
  return undefined;
}

function describeCheckout(root: string): string {
  const commit = spawnSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  return root === REPO_ROOT ? `${commit || 'this'} (this checkout)` : `${commit || root} (${root})`;
}

export async function benchKube(progress: (line: string) => void, settings: ReporterSettings, roots: readonly string[] = [REPO_ROOT]): Promise<KubeBenchFigures> {
  const why = kubeUnavailable();
  if (why) {
    progress(`report on kube-apiserver: skipped, ${why}`);
    return { ran: false, why };
  }
  for (const root of roots) {
    if (!existsSync(join(root, 'dist', 'cli', 'main.js'))) throw new Error(`${root}/dist/cli/main.js does not exist: run npm ci (or npm run build) there`);
  }
  progress(`report on kube-apiserver: starting etcd and kube-apiserver, creating ${settings.pods} pods`);
  const cluster = await startRealReportCluster(settings.pods, progress);
  const certs = createBenchCertificates();
  try {
    const checkouts: KubeCheckoutFigures[] = [];
    for (const root of roots) {
      const checkout = describeCheckout(root);
      progress(`report on kube-apiserver: ${checkout}`);
      const reporter = await benchReporter(progress, settings, certs, { root, cluster: cluster.factory });
      progress(`check -A on ${settings.pods} pods: ${checkout}`);
      const checkAll = benchCheckAll(root, cluster.adminKubeconfig, cluster.installationFlags);
      checkouts.push({ checkout, reporter, checkAll });
    }
    return { ran: true, kubernetesVersion: cluster.kubernetesVersion, pods: settings.pods, podsCreatedSeconds: cluster.podsCreatedSeconds, checkouts };
  } finally {
    certs.remove();
    await cluster.stop();
  }
}

/** `drainguard check -A`'s figures, a row per checkout. */
export function checkAllTable(checkouts: readonly KubeCheckoutFigures[]): string[][] {
  return [
    ['drainguard check -A', 'wall', 'CPU (user + system)', 'peak resident (maxrss)', 'exit', 'report'],
    ...checkouts.map((c) => [
      c.checkout,
      `${c.checkAll.wallSeconds} s`,
      `${Math.round((c.checkAll.userSeconds + c.checkAll.systemSeconds) * 100) / 100} s`,
      `${c.checkAll.peakRssMiB} MiB`,
      String(c.checkAll.exitCode),
      `${c.checkAll.reportBytes} bytes`,
    ]),
  ];
}

export function kubeTables(figures: KubeBenchFigures): string {
  if (!figures.ran) return `report on kube-apiserver and check -A: not run (${figures.why})`;
  const heading = `on kube-apiserver ${figures.kubernetesVersion} (${figures.pods.toLocaleString('en-US')} protected pods made in ${figures.podsCreatedSeconds} s)`;
  const reporters = figures.checkouts.map((c) => `drainguard report ${heading}, ${c.checkout}\n${table(reporterTable(c.reporter))}`);
  return [...reporters, `${table(checkAllTable(figures.checkouts))}\n${heading}`].join('\n\n');
}

if (require.main === module) {
  const quick = process.argv.includes('--quick');
  const podsFlag = process.argv.indexOf('--pods');
  const base = quick ? QUICK_REPORTER_SETTINGS : DEFAULT_REPORTER_SETTINGS;
  const settings = podsFlag >= 0 ? { ...base, pods: Number(process.argv[podsFlag + 1]) } : base;
  if (!Number.isInteger(settings.pods) || settings.pods <= 0) throw new Error('--pods needs a positive whole number');
  const roots = process.argv.flatMap((arg, index) => (process.argv[index - 1] === '--checkout' ? [arg === 'this' ? REPO_ROOT : resolve(arg)] : []));
  benchKube((line) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`), settings, roots.length > 0 ? roots : [REPO_ROOT])
    .then((figures) => {
      process.stdout.write(`${kubeTables(figures)}\n`);
      if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(figures)}\n`);
    })
    .catch((error: unknown) => {
      process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
      process.exitCode = 1;
    });
}
