/**
 * A health checker running beside a load: `GET /healthz` on its own keep-alive connection, one request
 * at a time with a short pause between them, like the kubelet's liveness probe but far more often. Its
 * figures say whether the server kept answering while it worked on the load. It runs in a process of
 * its own (./healthz-probe-child), so the benchmark's own synchronous work never counts against the server.
 */
import { join } from 'node:path';
import type { ClientTarget } from '../lib/https-client';
import { spawnTracked } from '../lib/processes';
import { quantile } from '../lib/stats';

export interface HealthzFigures {
  probes: number;
  failed: number;
  /** Why they failed (an HTTP status, or the client's error code), with how often. */
  failures: Record<string, number>;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Probes that took longer than the goal (100 ms). */
  over100Ms: number;
  /** The prober ran at a raised CPU priority (see ./healthz-probe-child); false: at normal priority. */
  prioritised: boolean;
}

export const HEALTHZ_GOAL_MS = 100;

/** The figures in one line, as every benchmark report prints them. */
export function describeHealthz(figures: HealthzFigures): string {
  return (
    `${figures.probes} probes, p50 ${figures.p50Ms} ms, p99 ${figures.p99Ms} ms, max ${figures.maxMs} ms; ` +
    `${figures.over100Ms} over ${HEALTHZ_GOAL_MS} ms (goal: none), ${figures.failed} failed${describeFailures(figures.failures)}; ` +
    `prober in its own process at ${figures.prioritised ? 'raised' : 'normal'} priority`
  );
}

function describeFailures(failures: Record<string, number> | undefined): string {
  const reasons = Object.entries(failures ?? {}).map(([reason, count]) => `${reason} ×${count}`);
  return reasons.length > 0 ? ` (${reasons.join(', ')})` : '';
}

export function startHealthzProbe(target: ClientTarget, pauseMs = 20): { stop: () => Promise<HealthzFigures> } {
  const child = spawnTracked(process.execPath, [join(__dirname, 'healthz-probe-child.js')], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, HEALTHZ_TARGET: JSON.stringify(target), HEALTHZ_PAUSE_MS: String(pauseMs) },
  });
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
  return {
    stop: async () => {
      child.stdin?.end();
      const code = await closed;
      if (code !== 0) throw new Error(`the /healthz prober exited with ${code}`);
      const { latencies, failed, failures, prioritised } = JSON.parse(output) as {
        latencies: number[];
        failed: number;
        failures: Record<string, number>;
        prioritised: boolean;
      };
      const round = (value: number) => Math.round(value * 100) / 100;
      return {
        probes: latencies.length + failed,
        failed,
        failures,
        p50Ms: latencies.length ? round(quantile(latencies, 0.5)) : NaN,
        p99Ms: latencies.length ? round(quantile(latencies, 0.99)) : NaN,
        maxMs: latencies.length ? round(latencies.reduce((a, b) => Math.max(a, b), 0)) : NaN,
        over100Ms: latencies.filter((value) => value > HEALTHZ_GOAL_MS).length,
        prioritised,
      };
    },
  };
}
