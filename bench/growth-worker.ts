/**
 * One kind of pod content through the decision path at growing sizes, in a worker thread so the
 * benchmark can stop it (Worker.terminate interrupts even a synchronous loop) when a size runs past its
 * time budget. Posts `start` before and `point` after each size, `finished` at the end.
 *
 * The path timed is what a server does with a body of that size: JSON.parse, decideAdmission and
 * JSON.stringify of the answer. Bodies are built before timing starts. The cost of a call is the CPU
 * time of this thread (process.threadCpuUsage), not the wall time: on a machine shared with other work
 * the thread waits for a core now and then, and that wait is not the cost of the input. The same for
 * JSON.parse of the body alone, as a reference: V8's own cost per KiB at that size.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { decideAdmission } from '../src/admission';
import { defaultConfig } from '../src/config';
import { podWithContent, type ContentKind } from '../test/support/generators/pod-content';
import { reviewBody } from '../test/support/generators/review';
import { quantile } from './lib/stats';

export interface GrowthWorkerInput {
  kind: ContentKind;
  sizesKiB: number[];
  /** Keep calling until this thread spent this much CPU time on a size (and made at least `minCalls` calls). */
  minMillis: number;
  minCalls: number;
}

export interface GrowthPoint {
  targetKiB: number;
  bytes: number;
  calls: number;
  /** CPU time of this thread per call (mean over the calls): what `microsPerKiB` is computed from. */
  cpuMicrosPerCall: number;
  /** Wall time per call, fastest and median, for comparison. */
  wallMinMicros: number;
  wallMedianMicros: number;
  microsPerKiB: number;
  /** JSON.parse of the same body alone, thread CPU time per KiB. */
  parseMicrosPerKiB: number;
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

/**
 * Calls `call` until this thread has spent `minMillis` of CPU on it and made `minCalls` calls. The thread's
 * CPU clock ticks coarsely (4 ms here), so CPU time is read around the whole batch: the mean per call.
 */
function timeCalls(call: () => unknown): { cpuMicrosPerCall: number; wall: number[] } {
  const wall: number[] = [];
  const cpuStart = process.threadCpuUsage();
  let cpuMicros = 0;
  while (wall.length < input.minCalls || cpuMicros < input.minMillis * 1000) {
    const wallStart = process.hrtime.bigint();
    call();
    wall.push(Number(process.hrtime.bigint() - wallStart) / 1000);
    const used = process.threadCpuUsage(cpuStart);
    cpuMicros = used.user + used.system;
  }
  return { cpuMicrosPerCall: cpuMicros / wall.length, wall };
}

for (const targetKiB of input.sizesKiB) {
  post({ type: 'start', targetKiB });
  const body = reviewBody(podWithContent(input.kind, targetKiB * 1024));
  const kib = Buffer.byteLength(body) / 1024;
  const result = answer(body);
  const { cpuMicrosPerCall, wall } = timeCalls(() => answer(body));
  const parse = timeCalls(() => JSON.parse(body));
  post({
    type: 'point',
    point: {
      targetKiB,
      bytes: Buffer.byteLength(body),
      calls: wall.length,
      cpuMicrosPerCall,
      wallMinMicros: Math.min(...wall),
      wallMedianMicros: quantile(wall, 0.5),
      microsPerKiB: cpuMicrosPerCall / kib,
      parseMicrosPerKiB: parse.cpuMicrosPerCall / kib,
      result,
    },
  });
}
post({ type: 'finished' });
