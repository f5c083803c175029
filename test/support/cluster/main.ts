/**
 * The process that owns a test cluster (./cluster), bundled by ./launch.mjs:
 *
 *   node cluster.js --dir DIR [--install-drainguard] [--lifeline]
 *
 * It starts the cluster, writes DIR/cluster.json and prints `ready <path>`, then keeps it running until
 * SIGTERM or SIGINT, or, with --lifeline, until its standard input closes (its starter ended, however it
 * ended); then it stops everything it started and exits 0. A failed start prints the error and exits 1
 * with nothing left behind.
 */
import { join } from 'node:path';
import { DEFAULT_NODES, TestCluster } from './cluster';

function flag(name: string): string | undefined {
  const index = process.argv.indexOf(name);
  return index >= 0 ? process.argv[index + 1] : undefined;
}

async function main(): Promise<void> {
  const dir = flag('--dir');
  if (!dir) throw new Error('usage: cluster.js --dir DIR [--install-drainguard] [--lifeline]');
  const started = Date.now();
  const log = (line: string) => process.stderr.write(`[cluster ${((Date.now() - started) / 1000).toFixed(1)}s] ${line}\n`);
  const cluster = await TestCluster.start({
    dir,
    nodes: DEFAULT_NODES,
    installDrainguard: process.argv.includes('--install-drainguard'),
    envoyMain: join(__dirname, 'envoy.js'),
    log,
  });
  let stopping: Promise<void> | undefined;
  const stop = (why: string) => {
    stopping ??= (async () => {
      log(`stopping (${why})`);
      await cluster.stop();
      log('stopped');
      process.exit(0);
    })();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  if (process.argv.includes('--lifeline')) {
    process.stdin.on('end', () => stop('its starter is gone'));
    process.stdin.on('error', () => stop('its starter is gone'));
    process.stdin.resume();
  }
  const path = cluster.publish();
  log(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s (${JSON.stringify(cluster.info.timings)})`);
  process.stdout.write(`ready ${path}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`cluster: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
