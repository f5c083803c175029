/**
 * Fixed-rate (open-loop) load: request i is due at start + i/rate whatever happened to earlier ones, and
 * its latency is measured from that due time. A slow answer therefore shows up in the latency of every
 * request queued behind it (no coordinated omission).
 *
 * autocannon's `overallRate` is not used for this: it lets each connection send its whole per-second
 * quota back to back at the start of every second, so "half the maximum rate" would really be bursts at
 * the maximum rate followed by idle time.
 */
import { performance } from 'node:perf_hooks';
import { createHttpsClient, type ClientTarget, type SentRequest } from './https-client';
import { quantile } from './stats';

export interface PacedLoadOptions {
  target: ClientTarget;
  request: SentRequest;
  ratePerSecond: number;
  durationSeconds: number;
  connections: number;
  timeoutMs?: number;
  /** Called with each answer's status and body (e.g. to check it); a thrown error counts as a failure. */
  check?: (status: number, body: Buffer) => void;
}

export interface PacedLoadResult {
  ratePerSecond: number;
  durationSeconds: number;
  connections: number;
  sent: number;
  answered: number;
  /** Answers by HTTP status. */
  statuses: Record<string, number>;
  /** Transport errors, timeouts and failed checks. */
  failures: number;
  failureSamples: string[];
  achievedPerSecond: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  latencyMaxMs: number;
  /**
   * From the moment the request was actually handed to the client, not its due time: leaves out the
   * pacer's own lateness (timer granularity, client stalls), and with it any queueing behind a slow answer.
   */
  serviceLatencyP50Ms: number;
  serviceLatencyP99Ms: number;
}

/** How often the pacer wakes up; requests that fell due in between are sent together. */
const TICK_MS = 1;

/** A paced run's summary and its raw latencies (ms, in answer order), e.g. to pool several runs. */
export interface PacedLoadSamples {
  result: PacedLoadResult;
  latencies: number[];
  serviceLatencies: number[];
}

export async function pacedLoad(options: PacedLoadOptions): Promise<PacedLoadResult> {
  return (await pacedLoadWithSamples(options)).result;
}

export async function pacedLoadWithSamples(options: PacedLoadOptions): Promise<PacedLoadSamples> {
  const { ratePerSecond, durationSeconds } = options;
  const client = createHttpsClient(options.target, options.connections);
  const total = Math.round(ratePerSecond * durationSeconds);
  const latencies: number[] = [];
  const serviceLatencies: number[] = [];
  const statuses: Record<string, number> = {};
  const failureSamples: string[] = [];
  let failures = 0;
  const fail = (message: string) => {
    failures += 1;
    if (failureSamples.length < 10) failureSamples.push(message);
  };
  const inFlight = new Set<Promise<void>>();

  const sendDue = (index: number, start: number) => {
    const dueAt = start + (index * 1000) / ratePerSecond;
    const sentAt = performance.now();
    const settled = client
      .send(options.request, options.timeoutMs)
      .then((answer) => {
        statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
        latencies.push(answer.receivedAt - dueAt);
        serviceLatencies.push(answer.receivedAt - sentAt);
        options.check?.(answer.status, answer.body);
      })
      .catch((error: unknown) => fail((error as Error).message))
      .finally(() => inFlight.delete(settled));
    inFlight.add(settled);
  };

  const start = performance.now();
  let sent = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - start) * ratePerSecond) / 1000) + 1);
      while (sent < due) sendDue(sent++, start);
      if (sent < total) setTimeout(tick, TICK_MS);
      else resolve();
    };
    tick();
  });
  await Promise.all([...inFlight]);
  const elapsedSeconds = (performance.now() - start) / 1000;
  client.close();

  const answered = latencies.length;
  const result: PacedLoadResult = {
    ratePerSecond,
    durationSeconds,
    connections: options.connections,
    sent,
    answered,
    statuses,
    failures,
    failureSamples,
    achievedPerSecond: answered / elapsedSeconds,
    latencyP50Ms: answered > 0 ? quantile(latencies, 0.5) : NaN,
    latencyP99Ms: answered > 0 ? quantile(latencies, 0.99) : NaN,
    latencyMaxMs: answered > 0 ? latencies.reduce((a, b) => Math.max(a, b)) : NaN,
    serviceLatencyP50Ms: answered > 0 ? quantile(serviceLatencies, 0.5) : NaN,
    serviceLatencyP99Ms: answered > 0 ? quantile(serviceLatencies, 0.99) : NaN,
  };
  return { result, latencies, serviceLatencies };
}
