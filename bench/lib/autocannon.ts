/**
 * Maximum-throughput runs with autocannon: a fixed set of keep-alive connections, each sending its next
 * request as soon as the previous answer arrives (closed loop), which is how kube-apiserver's pooled
 * connections behave under a pod-creation storm.
 *
 * autocannon ships no types; the part used here is typed below (test/integration/server/autocannon.d.ts
 * declares a smaller subset for the tests and is not part of the bench build).
 */

interface AutocannonOptions {
  url: string;
  method: 'POST';
  headers: Record<string, string>;
  body: string;
  connections: number;
  duration: number;
  timeout: number;
  servername: string;
  tlsOptions: { ca: string };
}

interface Histogram {
  average: number;
  p50: number;
  p99: number;
  max: number;
}

interface AutocannonResult {
  requests: Histogram & { total: number };
  latency: Histogram;
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
}

type Autocannon = (options: AutocannonOptions) => PromiseLike<AutocannonResult>;
const autocannon = require('autocannon') as Autocannon;

export interface ThroughputTarget {
  port: number;
  path: string;
  body: string;
  /** CA bundle and name the client uses, as kube-apiserver does with `caBundle` and the Service name. */
  ca: string;
  servername: string;
}

export interface ThroughputResult {
  connections: number;
  durationSeconds: number;
  requests: number;
  requestsPerSecond: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  latencyMaxMs: number;
  errors: number;
  non2xx: number;
}

export async function maxThroughput(target: ThroughputTarget, connections: number, durationSeconds: number): Promise<ThroughputResult> {
  const result = await autocannon({
    url: `https://127.0.0.1:${target.port}${target.path}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: target.body,
    connections,
    duration: durationSeconds,
    timeout: 10,
    servername: target.servername,
    tlsOptions: { ca: target.ca },
  });
  const completed = result['2xx'] + result.non2xx;
  return {
    connections,
    durationSeconds: result.duration,
    requests: completed,
    requestsPerSecond: completed / result.duration,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    latencyMaxMs: result.latency.max,
    errors: result.errors,
    non2xx: result.non2xx,
  };
}
