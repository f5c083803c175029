/**
 * The HTTPS servers benchmarks send AdmissionReviews to, each its own process on loopback: the real
 * `drainguard serve` (built dist/, exactly as deployed) and the servers of bench/baseline-server.ts (the
 * two baselines, and `decision-only`, the express baseline answering with drainguard's decision).
 */
import type { ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoPath } from './pods';
import { discardOutput, spawnTracked, stopProcess, waitForFileLine, waitForLine } from './processes';
import type { BenchCertificates } from './tls';

export type ServerKind = 'drainguard' | 'decision-only' | 'baseline-express' | 'baseline-node';

export interface RunningServer {
  kind: ServerKind;
  port: number;
  pid: number;
  child: ChildProcess;
  /** drainguard only: the file its JSON log lines go to. */
  logPath?: string;
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';

/**
 * `drainguard serve` at its default log level (one JSON line per admission, as in production). Its
 * stdout goes to a file, not a pipe: pino writes synchronously, and a pipe that this busy process
 * drains late would throttle the server and measure the harness instead.
 */
export async function startDrainguard(certs: BenchCertificates): Promise<RunningServer> {
  // Not in the certificate directory: drainguard watches that one, and every log line would wake it.
  const logDirectory = mkdtempSync(join(tmpdir(), 'drainguard-bench-log-'));
  const logPath = join(logDirectory, 'drainguard.log');
  const logFd = openSync(logPath, 'w');
  const child = spawnTracked(
    process.execPath,
    [
      repoPath('dist/cli/main.js'),
      'serve',
      '--tls-mode', 'files',
      '--tls-cert', certs.certPath,
      '--tls-key', certs.keyPath,
      '--host', HOST,
      '--port', '0',
      // The benchmark stops servers itself; the production delay would only make every stop take 5 s.
      '--shutdown-delay', '0s',
    ],
    { stdio: ['ignore', logFd, 'pipe'] },
  );
  closeSync(logFd);
  const port = await waitForFileLine(child, logPath, (line) => {
    const entry = parseJsonLine(line);
    return entry?.msg === 'listening' && typeof entry.port === 'number' ? entry.port : undefined;
  }).catch((error: unknown) => {
    rmSync(logDirectory, { recursive: true, force: true });
    throw error;
  });
  return {
    ...running('drainguard', port, child),
    logPath,
    stop: async () => {
      await stopProcess(child);
      rmSync(logDirectory, { recursive: true, force: true });
    },
  };
}

export async function startBaseline(flavour: 'express' | 'node' | 'decision', certs: BenchCertificates): Promise<RunningServer> {
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
  return running(flavour === 'decision' ? 'decision-only' : `baseline-${flavour}`, port, child);
}

export function startServer(kind: ServerKind, certs: BenchCertificates): Promise<RunningServer> {
  switch (kind) {
    case 'drainguard':
      return startDrainguard(certs);
    case 'decision-only':
      return startBaseline('decision', certs);
    case 'baseline-express':
      return startBaseline('express', certs);
    case 'baseline-node':
      return startBaseline('node', certs);
  }
}

function running(kind: ServerKind, port: number, child: ChildProcess): RunningServer {
  discardOutput(child);
  return { kind, port, pid: child.pid as number, child, stop: () => stopProcess(child) };
}

function parseJsonLine(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}
