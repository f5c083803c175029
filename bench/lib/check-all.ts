/**
 * `drainguard check -A` as a user runs it: the built CLI of a checkout as its own process, Node's own
 * settings (no chart applies to a command line), a kubeconfig with admin rights. Measured by GNU time
 * (/usr/bin/time): wall time, user and system CPU, and the peak resident set (the kernel's maxrss,
 * VmHWM at exit). Its report goes to a file, counted, not held.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { measuredEnv } from './chart-runtime';

export interface CheckAllFigures {
  /** check's exit code (non-zero when it found something to report: expected here, no webhook runs). */
  exitCode: number;
  wallSeconds: number;
  userSeconds: number;
  systemSeconds: number;
  peakRssMiB: number;
  reportBytes: number;
  /** The report's last line (its summary). */
  lastLine: string;
}

/** `args`: check's flags after `-A --kubeconfig F` (the installation's names). */
export function benchCheckAll(root: string, kubeconfig: string, args: readonly string[] = []): CheckAllFigures {
  const directory = mkdtempSync(join(tmpdir(), 'drainguard-bench-check-'));
  try {
    const timing = join(directory, 'time');
    const reportPath = join(directory, 'report');
    const report = openSync(reportPath, 'w');
    let result;
    try {
      result = spawnSync(
        '/usr/bin/time',
        ['-o', timing, '-f', '%e %U %S %M', process.execPath, join(root, 'dist', 'cli', 'main.js'), 'check', '-A', '--kubeconfig', kubeconfig, ...args],
        { stdio: ['ignore', report, 'pipe'], env: measuredEnv({}), encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
      );
    } finally {
      closeSync(report);
    }
    if (result.error) throw result.error;
    const measured = /^([\d.]+) ([\d.]+) ([\d.]+) (\d+)$/m.exec(readFileSync(timing, 'utf8'));
    if (!measured) throw new Error(`check -A: /usr/bin/time wrote no figures; stderr:\n${result.stderr.slice(-2000)}`);
    const exitCode = result.status ?? -1;
    // 0: nothing found, 1: findings; anything else is check failing to run.
    if (exitCode > 1) throw new Error(`check -A failed (exit ${exitCode}):\n${result.stderr.slice(-2000)}`);
    const text = readFileSync(reportPath, 'utf8').trimEnd();
    return {
      exitCode,
      wallSeconds: Number(measured[1]),
      userSeconds: Number(measured[2]),
      systemSeconds: Number(measured[3]),
      peakRssMiB: Math.round((Number(measured[4]) / 1024) * 10) / 10,
      reportBytes: statSync(reportPath).size,
      lastLine: text.slice(text.lastIndexOf('\n') + 1).slice(0, 200),
    };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
