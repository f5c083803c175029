/**
 * The /healthz prober's own process (started by ./healthz-probe): it probes until its stdin closes,
 * then prints every latency as one JSON line and exits. A process of its own, because the benchmark
 * process that drives the load also builds cases and runs hostile clients synchronously: a prober
 * sharing its event loop would count those stalls against the server. For the same reason it asks for a
 * higher CPU priority (nice -10, allowed to root): on a 2-core machine the benchmark's own clients
 * compete for the CPU, and a prober waiting for its turn would report the harness's scheduling as the
 * server's latency. The kubelet, whose probes this imitates, does not share a CPU with a load generator.
 * The server itself keeps its normal priority. Whether the raise was granted is part of the figures.
 *
 *   node healthz-probe-child.js   with HEALTHZ_TARGET='{"port":…,"ca":…,"servername":…}', HEALTHZ_PAUSE_MS
 */
import { Agent, request } from 'node:https';
import { setPriority } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { ClientTarget } from '../lib/https-client';

const target = JSON.parse(process.env.HEALTHZ_TARGET ?? 'null') as ClientTarget | null;
if (target === null) throw new Error('healthz-probe-child: HEALTHZ_TARGET is required');
const pauseMs = Number(process.env.HEALTHZ_PAUSE_MS ?? 20);
const PROBER_NICENESS = -10;
let prioritised = true;
try {
  setPriority(PROBER_NICENESS);
} catch {
  prioritised = false;
}
const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: target.ca, servername: target.servername });
const latencies: number[] = [];
let failed = 0;
/** Why probes failed, with how often: the answer's status, or the client's error. */
const failures: Record<string, number> = {};
function fail(reason: string): void {
  failed += 1;
  failures[reason] = (failures[reason] ?? 0) + 1;
}
let running = true;

const probeOnce = () =>
  new Promise<void>((resolve) => {
    const started = performance.now();
    const req = request({ host: '127.0.0.1', port: target.port, path: '/healthz', agent, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => {
        if (res.statusCode === 200) latencies.push(performance.now() - started);
        else fail(`HTTP ${res.statusCode}`);
        resolve();
      });
    });
    req.on('timeout', () => req.destroy(new Error('healthz timed out')));
    req.on('error', (error: NodeJS.ErrnoException) => {
      fail(error.code ?? error.message);
      resolve();
    });
    req.end();
  });

process.stdin.resume();
process.stdin.on('end', () => (running = false));
void (async () => {
  while (running) {
    await probeOnce();
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
  agent.destroy();
  process.stdout.write(`${JSON.stringify({ latencies, failed, failures, prioritised })}\n`, () => process.exit(0));
})();
