import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildDist } from './support/build';
import { ensureControlPlaneBinaries } from './support/cluster/binaries';
import { CLUSTER_ENV } from './support/cluster/lane';
import { buildShutdownIfStale, ensureShutdownToolchain } from './support/drain-executables';
import { buildReleaseIfStale } from './support/release';
import { NODE, REPO_ROOT } from './support/repo';
import { ensureSystemPackages } from './support/system-packages';

/** Read by test/global-teardown-kube.ts (jest runs both in its own process). */
declare global {
  var drainguardTestCluster: ChildProcess | undefined;
}

/**
 * The kube project's: runs once before any of its workers. Builds what the cluster runs (dist/, the drain
 * program, the control plane from test/cluster/go.mod when its cache has no build), then starts one test
 * cluster (test/support/cluster) for the whole run; its suites share it, each in namespaces of its own.
 * Meanwhile it builds the release folder for the suite that runs the release's executables.
 * The cluster's owner process stops everything when its standard input closes: at globalTeardown, or
 * when jest itself dies.
 */
export default async function globalSetup(): Promise<void> {
  const log = (line: string) => process.stderr.write(`\n[global-setup kube] ${line}\n`);
  ensureSystemPackages('kube', log);
  buildDist(log);
  ensureShutdownToolchain(log);
  buildShutdownIfStale(log, [process.arch === 'arm64' ? 'arm64' : 'amd64']);
  ensureControlPlaneBinaries(log);
  const bundle = execFileSync(NODE, [join(REPO_ROOT, 'test/support/cluster/cli.mjs'), 'bundle'], { encoding: 'utf8' }).trim();
  const dir = mkdtempSync(join(tmpdir(), 'drainguard-cluster-'));
  log(`starting the test cluster in ${dir}`);
  const child = spawn(NODE, [join(bundle, 'cluster.js'), '--dir', dir, '--lifeline'], { stdio: ['pipe', 'pipe', 'inherit'] });
  globalThis.drainguardTestCluster = child;
  const started = new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const line = /^ready (.+)$/m.exec(out);
      if (line) resolve(line[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the test cluster did not start (exit ${code}); its output is above`)));
  });
  // While the cluster starts: the release folder, whose executables test/kube/release-cli.test.ts runs
  // against it (each only when its inputs changed, as the release lane's globalSetup builds them).
  await buildReleaseIfStale(log);
  const ready = await started;
  process.env[CLUSTER_ENV] = ready;
  log(`test cluster ready: ${ready}`);
}
