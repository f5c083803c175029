/**
 * Crowding clients (issue 20, items 1–3): one source that tries to take the server away from everyone
 * else without sending anything invalid. From a second loopback address (all of 127/8 is loopback), it
 * holds connections that send nothing after the handshake, connections idle after one `/healthz`, or
 * admissions whose declared body arrives one byte a second, and it reopens each one the server closes,
 * for as long as it runs. Meanwhile a client shaped like kube-apiserver's webhook client sends good
 * reviews from 127.0.0.1, each with the API server's default 10 s timeout; its success rate and
 * latency are the figures: the crowd must cost it nothing.
 */
import { Agent, request } from 'node:https';
import { performance } from 'node:perf_hooks';
import { startCrowd, type CrowdFigures, type CrowdMember } from '../../test/support/generators/crowd';
import type { ClientTarget } from '../lib/https-client';
import { quantile } from '../lib/stats';

export { CROWD_ADDRESS } from '../../test/support/generators/crowd';

const SERVER_HOST = '127.0.0.1';
/** kube-apiserver's default webhook timeout (`timeoutSeconds` unset). */
const API_SERVER_TIMEOUT_MS = 10_000;

export interface ApiClientFigures {
  sent: number;
  succeeded: number;
  /** Percent of reviews answered 200 with their uid. */
  successRate: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Why the others failed (a status, or the client's error), with how often. */
  failures: Record<string, number>;
}

export interface CrowdingOutcome {
  scenario: string;
  ok: boolean;
  detail: string;
  crowd: CrowdFigures;
  apiClient: ApiClientFigures;
}

function count(tally: Record<string, number>, key: string): void {
  tally[key] = (tally[key] ?? 0) + 1;
}

/**
 * Good reviews one after another on a keep-alive pool, for `durationMs`, like the API server's webhook
 * client (HTTP/1.1, reused connections, a new one when none is free). `bodyOf(i)` is the i-th review.
 */
async function apiLikeClient(target: ClientTarget, bodyOf: (i: number) => { body: string; uid: string }, durationMs: number, parallel = 2): Promise<ApiClientFigures> {
  const agent = new Agent({ keepAlive: true, ca: target.ca, servername: target.servername });
  const latencies: number[] = [];
  const failures: Record<string, number> = {};
  let sent = 0;
  const until = performance.now() + durationMs;
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const { body, uid } = bodyOf(i);
      const started = performance.now();
      sent += 1;
      const req = request(
        { host: SERVER_HOST, port: target.port, path: '/mutate?timeout=10s', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', () => (count(failures, 'response aborted'), resolve()));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            if (res.statusCode === 200 && text.includes(`"uid":${JSON.stringify(uid)}`)) latencies.push(performance.now() - started);
            else count(failures, String(res.statusCode));
            resolve();
          });
        },
      );
      req.setTimeout(API_SERVER_TIMEOUT_MS, () => req.destroy(new Error('timeout')));
      req.on('error', (error: NodeJS.ErrnoException) => (count(failures, error.code ?? error.message), resolve()));
      req.end(body);
    });
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (performance.now() < until) await one(next++);
    }),
  );
  agent.destroy();
  const round = (value: number) => Math.round(value * 10) / 10;
  return {
    sent,
    succeeded: latencies.length,
    successRate: sent === 0 ? 0 : round((100 * latencies.length) / sent),
    p50Ms: latencies.length ? round(quantile(latencies, 0.5)) : NaN,
    p99Ms: latencies.length ? round(quantile(latencies, 0.99)) : NaN,
    maxMs: latencies.length ? round(Math.max(...latencies)) : NaN,
    failures,
  };
}

export function describeApiClient(figures: ApiClientFigures): string {
  const failed = Object.entries(figures.failures).map(([reason, times]) => `${reason} ×${times}`).join(', ');
  return `API-server-like client: ${figures.succeeded}/${figures.sent} answered 200 (${figures.successRate}%), p50 ${figures.p50Ms} ms, p99 ${figures.p99Ms} ms, max ${figures.maxMs} ms${failed ? `; failed: ${failed}` : ''}`;
}

export interface CrowdingReviews {
  /** A good review of an ordinary pod (small lane) and of a pod over 64 KiB (large lane), by uid. */
  small: (uid: string) => string;
  large: (uid: string) => string;
}

/** Each crowd in turn, for `durationMs` of API-server-like traffic after the crowd is in place. */
export async function runCrowdingScenarios(target: ClientTarget, reviews: CrowdingReviews, durationMs: number): Promise<CrowdingOutcome[]> {
  const scenarios: { scenario: string; members: CrowdMember[]; review: (uid: string) => string }[] = [
    { scenario: '300 silent + 300 idle connections from one source', members: [{ kind: 'silent', count: 300 }, { kind: 'idle', count: 300 }], review: reviews.small },
    { scenario: '60 slow bodies of 3000 bytes (1 byte/s) from one source', members: [{ kind: 'slow-body', count: 60, declaredBytes: 3000 }], review: reviews.small },
    { scenario: '40 slow bodies of 200 KB (1 byte/s) from one source, large reviews', members: [{ kind: 'slow-body', count: 40, declaredBytes: 200_000 }], review: reviews.large },
  ];
  const outcomes: CrowdingOutcome[] = [];
  for (const { scenario, members, review } of scenarios) {
    const crowd = startCrowd(target, members);
    await crowd.established;
    const apiClient = await apiLikeClient(target, (i) => ({ uid: `crowded-${i}`, body: review(`crowded-${i}`) }), durationMs);
    const figures = crowd.stop();
    const answers = Object.entries(figures.answers).map(([status, times]) => `${status} ×${times}`).join(', ');
    outcomes.push({
      scenario,
      ok: apiClient.sent > 0 && apiClient.succeeded === apiClient.sent,
      detail: `${describeApiClient(apiClient)}; crowd opened ${figures.opened}, server closed ${figures.closedByServer}${answers ? `, answered ${answers}` : ''}`,
      crowd: figures,
      apiClient,
    });
  }
  return outcomes;
}
