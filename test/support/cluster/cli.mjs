#!/usr/bin/env node
/**
 * The test cluster from the command line (package.json's `cluster:up` and `cluster:down`), and the
 * bundling of its owner process for the jest lane that runs one:
 *
 *   node test/support/cluster/cli.mjs up      builds what the cluster runs, starts it with drainguard
 *                                             installed from the chart, prints the admin kubeconfig's path
 *   node test/support/cluster/cli.mjs down    stops it and checks that nothing is left behind
 *   node test/support/cluster/cli.mjs bundle  bundles main.ts and envoy-main.ts with esbuild; prints the folder
 *
 * `up` needs root (network namespaces, mounts) and, the first time, Go and some minutes to build the
 * control plane from its Go modules. The cluster's files are in .tmp/cluster of the checkout.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../../..');
const bundleDir = join(repo, 'node_modules/.cache/drainguard-cluster');
const clusterDir = join(repo, '.tmp/cluster');
const node = existsSync(join(repo, 'node_modules/.bin/node')) ? join(repo, 'node_modules/.bin/node') : process.execPath;

/** main.ts → cluster.js and envoy-main.ts → envoy.js; packages stay in node_modules (resolved at run time). */
export async function bundle() {
  const { build } = await import('esbuild');
  await build({
    entryPoints: { cluster: join(here, 'main.ts'), envoy: join(here, 'envoy-main.ts') },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node24',
    packages: 'external',
    outdir: bundleDir,
    logLevel: 'warning',
  });
  return bundleDir;
}

function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

function info() {
  const path = join(clusterDir, 'cluster.json');
  return existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : undefined;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

async function up() {
  if (process.getuid?.() !== 0) fail('cluster:up needs root: it makes network namespaces and mounts (run it with sudo)');
  const running = info();
  if (running && alive(running.pid)) {
    process.stdout.write(`a cluster is already running (pid ${running.pid})\nkubeconfig: ${running.adminKubeconfig}\n`);
    return;
  }
  rmSync(clusterDir, { recursive: true, force: true });
  mkdirSync(clusterDir, { recursive: true });
  const step = (line) => process.stderr.write(`--- ${line}\n`);
  step('npm run build (dist/)');
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: repo, stdio: 'inherit' });
  step("the drain program's toolchain and executable (npm run toolchain:shutdown, build:shutdown)");
  const toolchain = join(repo, 'src/shutdown/build/toolchain.mjs');
  if (spawnSync(node, [toolchain, 'check'], { cwd: repo, stdio: 'ignore' }).status !== 0) execFileSync(node, [toolchain, 'install'], { cwd: repo, stdio: 'inherit' });
  const arch = process.arch === 'arm64' ? 'arm64' : 'amd64';
  execFileSync(node, [join(repo, 'src/shutdown/build/build-executable.mjs'), '--arch', arch, '--if-changed'], { cwd: repo, stdio: 'inherit' });
  step('bundling the cluster (esbuild)');
  const dir = await bundle();
  step('starting the cluster (the first start builds kube-apiserver, kube-controller-manager, kube-scheduler and etcd from test/cluster/go.mod: minutes)');
  const logPath = join(clusterDir, 'cluster.log');
  const log = openSync(logPath, 'a');
  const child = spawn(node, [join(dir, 'cluster.js'), '--dir', clusterDir, '--install-drainguard'], { detached: true, stdio: ['ignore', 'pipe', log] });
  closeSync(log);
  let shown = 0;
  const showLog = () => {
    const text = readFileSync(logPath, 'utf8');
    process.stderr.write(text.slice(shown));
    shown = text.length;
  };
  const timer = setInterval(showLog, 500);
  const ready = await new Promise((resolve) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes('\n')) resolve(out.startsWith('ready '));
    });
    child.once('exit', () => resolve(false));
  });
  clearInterval(timer);
  showLog();
  if (!ready) fail(`the cluster did not start; its log: ${logPath}`);
  child.stdout.destroy();
  child.unref();
  const cluster = info();
  process.stdout.write(
    [
      `cluster up: Kubernetes ${cluster.kubernetesVersion}, nodes ${cluster.nodes.join(', ')}, drainguard in ${cluster.drainguard.namespace}`,
      `kubeconfig: ${cluster.adminKubeconfig}`,
      `  export KUBECONFIG=${cluster.adminKubeconfig}`,
      `logs: ${clusterDir} (cluster.log; control-plane/logs/)`,
      'stop it with: npm run cluster:down',
      '',
    ].join('\n'),
  );
}

async function down() {
  const cluster = info();
  if (!cluster || !alive(cluster.pid)) {
    process.stdout.write('no cluster is running\n');
  } else {
    process.kill(cluster.pid, 'SIGTERM');
    const deadline = Date.now() + 120_000;
    while (alive(cluster.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    if (alive(cluster.pid)) {
      process.kill(cluster.pid, 'SIGKILL');
      fail(`the cluster's process ${cluster.pid} did not stop in 2 minutes; killed (see ${clusterDir}/cluster.log)`);
    }
    process.stdout.write('cluster stopped\n');
  }
  // What it made must be gone: its bridge, namespaces and processes.
  const slots = existsSync('/run/drainguard-cluster') ? readdirSync('/run/drainguard-cluster') : [];
  const left = slots.filter((slot) => Number(readFileSync(`/run/drainguard-cluster/${slot}`, 'utf8')) === cluster?.pid);
  if (left.length > 0) fail(`left behind: network slot(s) ${left.join(', ')} (ip link | grep dgk)`);
}

const command = process.argv[2];
if (command === 'bundle') process.stdout.write(`${await bundle()}\n`);
else if (command === 'up') await up();
else if (command === 'down') await down();
else fail('usage: cli.mjs up | down | bundle');
