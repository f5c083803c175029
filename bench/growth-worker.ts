/**
 * One kind of pod content through the decision path at growing sizes, in a worker thread so the
 * benchmark can stop it (Worker.terminate interrupts even a synchronous loop) when a size runs past its
 * time budget. Posts `start` before and `point` after each size, `finished` at the end.
 *
 * The path timed is what a server does with a body of that size: JSON.parse, decideAdmission and
 * JSON.stringify of the answer. Bodies are built before timing starts. The cost of a size is its fastest
 * call: other work on the machine only ever adds time to a call, so the fastest is the least disturbed,
 * and a loop that is quadratic in the input is slow in every call.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { decideAdmission } from '../src/admission';
import { defaultConfig } from '../src/config';
import { podWithContent, type ContentKind } from './lib/pod-content';
import { reviewBody } from './lib/review';
import { quantile } from './lib/stats';

export interface GrowthWorkerInput {
  kind: ContentKind;
  sizesKiB: number[];
  /** Keep calling until this much time was spent on a size (and at least `minCalls` calls). */
  minMillis: number;
  minCalls: number;
}

export interface GrowthPoint {
  targetKiB: number;
  bytes: number;
  calls: number;
  /** The fastest call: what `microsPerKiB` is computed from. */
  minMicros: number;
  medianMicros: number;
  microsPerKiB: number;
  /** How drainguard decided (`mutated` expected: the content must not change the outcome). */
  result: string;
}

export type GrowthMessage = { type: 'start'; targetKiB: number } | { type: 'point'; point: GrowthPoint } | { type: 'finished' };

const input = workerData as GrowthWorkerInput;
const post = (message: GrowthMessage) => parentPort?.postMessage(message);
const config = defaultConfig();

function answer(body: string): string {
  const decision = decideAdmission(JSON.parse(body), config);
  JSON.stringify(decision.body);
  return decision.outcome.result;
}

for (const targetKiB of input.sizesKiB) {
  post({ type: 'start', targetKiB });
  const body = reviewBody(podWithContent(input.kind, targetKiB * 1024));
  const result = answer(body);
  const samples: number[] = [];
  const started = process.hrtime.bigint();
  while (samples.length < input.minCalls || Number(process.hrtime.bigint() - started) / 1e6 < input.minMillis) {
    const start = process.hrtime.bigint();
    answer(body);
    samples.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  const minMicros = Math.min(...samples);
  const bytes = Buffer.byteLength(body);
  const point = { targetKiB, bytes, calls: samples.length, minMicros, medianMicros: quantile(samples, 0.5), microsPerKiB: minMicros / (bytes / 1024), result };
  post({ type: 'point', point });
}
post({ type: 'finished' });
