/**
 * A health checker running beside a load: `GET /healthz` on its own keep-alive connection, one request
 * at a time with a short pause between them, like the kubelet's liveness probe but far more often. Its
 * figures say whether the server kept answering while it worked on the load.
 */
import { Agent, request } from 'node:https';
import { performance } from 'node:perf_hooks';
import type { ClientTarget } from '../lib/https-client';
import { quantile } from '../lib/stats';

export interface HealthzFigures {
  probes: number;
  failed: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Probes that took longer than the goal (100 ms). */
  over100Ms: number;
}

export const HEALTHZ_GOAL_MS = 100;

export function startHealthzProbe(target: ClientTarget, pauseMs = 20): { stop: () => Promise<HealthzFigures> } {
  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: target.ca, servername: target.servername });
  const latencies: number[] = [];
  let failed = 0;
  let running = true;
  const probeOnce = () =>
    new Promise<void>((resolve) => {
      const started = performance.now();
      const req = request({ host: '127.0.0.1', port: target.port, path: '/healthz', agent, timeout: 10_000 }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode === 200) latencies.push(performance.now() - started);
          else failed += 1;
          resolve();
        });
      });
      req.on('timeout', () => req.destroy(new Error('healthz timed out')));
      req.on('error', () => {
        failed += 1;
        resolve();
      });
      req.end();
    });
  const loop = (async () => {
    while (running) {
      await probeOnce();
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      agent.destroy();
      const round = (value: number) => Math.round(value * 100) / 100;
      return {
        probes: latencies.length + failed,
        failed,
        p50Ms: latencies.length ? round(quantile(latencies, 0.5)) : NaN,
        p99Ms: latencies.length ? round(quantile(latencies, 0.99)) : NaN,
        maxMs: latencies.length ? round(Math.max(...latencies)) : NaN,
        over100Ms: latencies.filter((value) => value > HEALTHZ_GOAL_MS).length,
      };
    },
  };
}
