/**
 * The HTTPS servers the benchmarks send AdmissionReviews to, each its own process on loopback with the
 * same certificate: the real `drainguard serve` (built dist/, exactly as deployed, per-admission log line
 * on), the reference servers of bench/baseline-server.ts, and Pepr's admission controller (lib/pepr.ts).
 */
import type { ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chartRuntimeEnv, measuredEnv } from './chart-runtime';
import { startPepr } from './pepr';
import type { StubCall } from './kube-api-stub';
import { discardOutput, spawnTracked, stopProcess, waitForFileLine, waitForLine } from './processes';
import { REPO_ROOT } from '../../test/support/repo';
import type { BenchCertificates } from './tls';

export type ServerKind = 'drainguard' | 'decision-only' | 'express-fixed' | 'pepr';

/** How each server is named in reports. */
export const SERVER_LABELS: Record<ServerKind, string> = {
  drainguard: 'drainguard',
  'decision-only': 'decision-only reference',
  'express-fixed': 'express fixed answer',
  pepr: 'Pepr',
};

export interface RunningServer {
  kind: ServerKind;
  port: number;
  pid: number;
  child: ChildProcess;
  /** Where AdmissionReviews are POSTed. */
  path: string;
  /** drainguard and Pepr: the file their JSON log lines go to. */
  logPath?: string;
  /** Pepr only: the calls its controller made to the stub Kubernetes API so far. */
  apiCalls?: StubCall[];
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';

/**
 * `drainguard serve` at its default log level (one JSON line per admission, as in production). Its
 * stdout goes to a file, not a pipe: pino writes synchronously, and a pipe that this busy process
 * drains late would throttle the server and measure the harness instead. It runs with the Node
 * settings of the chart (lib/chart-runtime.ts) unless `runtime` gives others (`{}`: Node's defaults).
 * `root` is this checkout unless another built checkout is given (bench/versus.ts), whose CLI and chart
 * settings are used then.
 */
export async function startDrainguard(certs: BenchCertificates, root = REPO_ROOT, runtime = chartRuntimeEnv('server', root)): Promise<RunningServer> {
  // Not in the certificate directory: drainguard watches that one, and every log line would wake it.
  const logDirectory = mkdtempSync(join(tmpdir(), 'drainguard-bench-log-'));
  const logPath = join(logDirectory, 'drainguard.log');
  const logFd = openSync(logPath, 'w');
  const child = spawnTracked(
    process.execPath,
    [
      join(root, 'dist', 'cli', 'main.js'),
      'serve',
      '--tls-mode', 'files',
      '--tls-cert', certs.certPath,
      '--tls-key', certs.keyPath,
      '--host', HOST,
      '--port', '0',
      // The benchmark stops servers itself; the production delay would only make every stop take 5 s.
      '--shutdown-delay', '0s',
    ],
    { stdio: ['ignore', logFd, 'pipe'], env: measuredEnv(runtime) },
  );
  closeSync(logFd);
  const port = await waitForFileLine(child, logPath, (line) => {
    const entry = parseJsonLine(line);
    return entry?.msg === 'listening' && typeof entry.port === 'number' ? entry.port : undefined;
  }).catch(async (error: unknown) => {
    await stopProcess(child);
    rmSync(logDirectory, { recursive: true, force: true });
    throw error;
  });
  discardOutput(child);
  return {
    kind: 'drainguard',
    port,
    pid: child.pid as number,
    child,
    path: '/mutate',
    logPath,
    stop: async () => {
      await stopProcess(child);
      rmSync(logDirectory, { recursive: true, force: true });
    },
  };
}

async function startReference(flavour: 'express' | 'decision', certs: BenchCertificates): Promise<RunningServer> {
  // Compiled next to this file's directory: bench/lib/servers.js → bench/baseline-server.js.
  const child = spawnTracked(process.execPath, [
    join(__dirname, '..', 'baseline-server.js'),
    '--flavour', flavour,
    '--port', '0',
    '--tls-cert', certs.certPath,
    '--tls-key', certs.keyPath,
  ]);
  const port = await waitForLine(child, (line) => {
    const match = /^listening (\d+)$/.exec(line);
    return match ? Number(match[1]) : undefined;
  });
  discardOutput(child);
  const kind = flavour === 'decision' ? 'decision-only' : 'express-fixed';
  return { kind, port, pid: child.pid as number, child, path: '/mutate', stop: () => stopProcess(child) };
}

export async function startServer(kind: ServerKind, certs: BenchCertificates, progress: (line: string) => void): Promise<RunningServer> {
  switch (kind) {
    case 'drainguard':
      return startDrainguard(certs);
    case 'decision-only':
      return startReference('decision', certs);
    case 'express-fixed':
      return startReference('express', certs);
    case 'pepr': {
      const pepr = await startPepr(certs, progress);
      return {
        kind,
        port: pepr.port,
        pid: pepr.pid,
        child: pepr.child,
        path: `/mutate/${pepr.apiPath}`,
        logPath: pepr.logPath,
        apiCalls: pepr.stub.calls,
        stop: pepr.stop,
      };
    }
  }
}

export function parseJsonLine(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}
