/**
 * Pepr as a peer: the module in bench/pepr (one annotation on every Pod created), installed from its own
 * committed lockfile, built with Pepr's own `pepr build`, and served by Pepr's own admission controller
 * over HTTPS against the stub API of kube-api-stub.ts. See docs/benchmarks.md ("The Pepr peer").
 *
 * Nothing is downloaded by a tool on its own: `npm ci --ignore-scripts` installs exactly the lockfile
 * (pinned versions, integrity-checked; no install script runs, so esbuild uses its platform package from
 * the lockfile instead of its postinstall step), and `pepr build` only runs tsc, eslint/prettier and
 * esbuild locally. The module is rebuilt when its sources or the installed lockfile change.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startKubeApiStub, type KubeApiStub } from './kube-api-stub';
import { spawnTracked, stopProcess } from './processes';
import { repoPath } from '../../test/support/repo';
import type { BenchCertificates } from './tls';

export const PEPR_DIR = repoPath('bench', 'pepr');
const manifest = () => JSON.parse(readFileSync(join(PEPR_DIR, 'package.json'), 'utf8')) as { pepr: { uuid: string }; dependencies: { pepr: string } };
const INSTALLED_STAMP = join(PEPR_DIR, 'node_modules', '.drainguard-bench-lock-sha256');
const MODULE_SOURCES = ['package.json', 'package-lock.json', 'tsconfig.json', 'pepr.ts', 'capabilities'];

/** The module's bundle as `pepr build` writes it. */
export function peprModulePath(): string {
  return join(PEPR_DIR, 'dist', `pepr-${manifest().pepr.uuid}.js`);
}

/** The Pepr version the lockfile pins (what `npm ci` installs). */
export function peprVersion(): string {
  const lock = JSON.parse(readFileSync(join(PEPR_DIR, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
  return lock.packages['node_modules/pepr']?.version ?? 'unknown';
}

/** npm and Pepr's `#!/usr/bin/env node` scripts run on this Node (the project's Node 24), found first on PATH. */
function toolEnvironment(): NodeJS.ProcessEnv {
  return { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` };
}

function newestMtime(path: string): number {
  const stats = statSync(path);
  if (!stats.isDirectory()) return stats.mtimeMs;
  return readdirSync(path).reduce((newest, entry) => Math.max(newest, newestMtime(join(path, entry))), stats.mtimeMs);
}

/** Installs bench/pepr/node_modules from the committed lockfile when it is missing or out of date. */
export function installPepr(progress: (line: string) => void): void {
  const lockHash = createHash('sha256').update(readFileSync(join(PEPR_DIR, 'package-lock.json'))).digest('hex');
  if (existsSync(INSTALLED_STAMP) && readFileSync(INSTALLED_STAMP, 'utf8') === lockHash) return;
  progress('pepr: npm ci --prefix bench/pepr --ignore-scripts (its own lockfile)');
  execFileSync('npm', ['ci', '--prefix', PEPR_DIR, '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], { stdio: ['ignore', 'ignore', 'inherit'], env: toolEnvironment() });
  writeFileSync(INSTALLED_STAMP, lockHash);
}

/** Builds the module with `pepr build` when its bundle is missing or older than its sources. */
export function buildPeprModule(progress: (line: string) => void): string {
  const bundle = peprModulePath();
  const sourcesChanged = () => MODULE_SOURCES.some((source) => newestMtime(join(PEPR_DIR, source)) > statSync(bundle).mtimeMs);
  if (existsSync(bundle) && !sourcesChanged() && statSync(INSTALLED_STAMP).mtimeMs <= statSync(bundle).mtimeMs) return bundle;
  progress('pepr: pepr build (tsc, lint, esbuild, deployment manifests)');
  try {
    execFileSync(process.execPath, [join(PEPR_DIR, 'node_modules', 'pepr', 'dist', 'cli.js'), 'build'], {
      cwd: PEPR_DIR,
      // Pepr prints a hint unless it was started by npx; the CLI is the same either way.
      env: { ...toolEnvironment(), npm_lifecycle_event: 'npx' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`pepr build failed:\n${stdout?.toString() ?? ''}\n${stderr?.toString() ?? ''}`);
  }
  if (!existsSync(bundle)) throw new Error(`pepr build did not write ${bundle}`);
  return bundle;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

function kubeconfig(stub: KubeApiStub, ca: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'stub', cluster: { server: `https://127.0.0.1:${stub.port}`, 'certificate-authority-data': Buffer.from(ca).toString('base64') } }],
    users: [{ name: 'pepr', user: { token: stub.token } }],
    contexts: [{ name: 'stub', context: { cluster: 'stub', user: 'pepr' } }],
    'current-context': 'stub',
  });
}

export interface RunningPepr {
  port: number;
  pid: number;
  child: ReturnType<typeof spawnTracked>;
  /** Pepr authenticates admission calls by a secret path segment: POST /mutate/<apiPath>. */
  apiPath: string;
  logPath: string;
  stub: KubeApiStub;
  stop(): Promise<void>;
}

/** GET /healthz until it answers 200: Pepr binds its endpoints only once its store is ready. */
async function waitForEndpoints(port: number, child: RunningPepr['child'], logPath: string, timeoutMs: number): Promise<void> {
  const giveUpAt = Date.now() + timeoutMs;
  for (;;) {
    const status = await new Promise<number>((resolve) => {
      const req = request({ host: '127.0.0.1', port, path: '/healthz', rejectUnauthorized: false, timeout: 1000 }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', () => resolve(0));
      req.on('timeout', () => req.destroy());
      req.end();
    });
    if (status === 200) return;
    const tail = () => readFileSync(logPath, 'utf8').split('\n').slice(-20).join('\n');
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`Pepr's controller exited (${child.exitCode ?? child.signalCode}); its log ends:\n${tail()}`);
    if (Date.now() > giveUpAt) throw new Error(`Pepr's controller did not bind its endpoints within ${timeoutMs} ms; its log ends:\n${tail()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Starts the module's bundle as Pepr's admission Deployment runs it: same environment variables
 * (PEPR_WATCH_MODE=false, LOG_LEVEL=info, PEPR_PRETTY_LOG=false), the serving certificate from
 * SSL_CERT_PATH/SSL_KEY_PATH, the API path from PEPR_API_PATH (the Deployment mounts it from a Secret),
 * the cluster from a kubeconfig pointing at the stub API. Its log goes to a file, as drainguard's does.
 *
 * Pepr's Deployment starts `pepr/dist/controller.js <hash>`, a launcher that applies the PeprStore CRD,
 * checks the bundle's hash and forks the bundle from fixed /app paths; the forked bundle is the process
 * that serves admissions, so the benchmark starts that process directly.
 */
export async function startPepr(certs: BenchCertificates, progress: (line: string) => void): Promise<RunningPepr> {
  installPepr(progress);
  const bundle = buildPeprModule(progress);
  const { uuid } = manifest().pepr;
  const stub = await startKubeApiStub(certs, [`pepr-${uuid}-store`, `pepr-${uuid}-schedule`]);
  const workDir = mkdtempSync(join(tmpdir(), 'drainguard-bench-pepr-'));
  const cleanUp = async () => {
    await stub.close();
    rmSync(workDir, { recursive: true, force: true });
  };
  try {
    const kubeconfigPath = join(workDir, 'kubeconfig');
    writeFileSync(kubeconfigPath, kubeconfig(stub, certs.ca), { mode: 0o600 });
    const logPath = join(workDir, 'pepr.log');
    const logFd = openSync(logPath, 'w');
    const port = await freePort();
    const apiPath = randomBytes(16).toString('hex');
    const child = spawnTracked(process.execPath, [bundle], {
      cwd: PEPR_DIR,
      stdio: ['ignore', logFd, logFd],
      env: {
        PATH: process.env.PATH ?? '',
        HOME: workDir,
        KUBECONFIG: kubeconfigPath,
        PEPR_WATCH_MODE: 'false',
        PEPR_PRETTY_LOG: 'false',
        LOG_LEVEL: 'info',
        SSL_CERT_PATH: certs.certPath,
        SSL_KEY_PATH: certs.keyPath,
        PEPR_API_PATH: apiPath,
        PEPR_BENCH_PORT: String(port),
      },
    });
    closeSync(logFd);
    try {
      await waitForEndpoints(port, child, logPath, 30_000);
    } catch (error) {
      await stopProcess(child);
      throw error;
    }
    return {
      port,
      pid: child.pid as number,
      child,
      apiPath,
      logPath,
      stub,
      stop: async () => {
        await stopProcess(child);
        await cleanUp();
      },
    };
  } catch (error) {
    await cleanUp();
    throw error;
  }
}
