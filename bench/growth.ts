/**
 * The growth check: for each kind of pod content, the cost per KiB of answering a review from 8 KiB to
 * 3 MiB. A linear path keeps the cost per KiB flat (it even falls a little as the fixed cost per
 * request spreads over more bytes); a loop that is quadratic in some kind of content makes it rise with
 * size. Each kind runs in its own worker thread, and each size has a time budget: a kind that runs past
 * it is stopped and reported as super-linear at that size instead of stalling the benchmark.
 *
 * Verdict per kind: linear when (cost/KiB at the largest size) / (cost/KiB at the smallest) ≤ the
 * threshold and no size ran out of time.
 */
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { GrowthMessage, GrowthPoint, GrowthWorkerInput } from './growth-worker';
import { CONTENT_DESCRIPTIONS, CONTENT_KINDS, type ContentKind } from '../test/support/generators/pod-content';

export interface GrowthSettings {
  sizesKiB: number[];
  /** Time budget of one size of one kind (building the body and timing it). */
  budgetSeconds: number;
  minMillis: number;
  minCalls: number;
  /** Largest accepted ratio of cost/KiB at the largest size to cost/KiB at the smallest. */
  linearRatio: number;
}

export const DEFAULT_GROWTH_SETTINGS: GrowthSettings = { sizesKiB: [8, 32, 128, 512, 1024, 3072], budgetSeconds: 10, minMillis: 300, minCalls: 5, linearRatio: 2 };
export const QUICK_GROWTH_SETTINGS: GrowthSettings = { sizesKiB: [8, 128, 3072], budgetSeconds: 3, minMillis: 50, minCalls: 2, linearRatio: 2 };

export interface KindGrowth {
  kind: ContentKind;
  content: string;
  points: GrowthPoint[];
  /** The size that ran past its budget, if one did. */
  stoppedAtKiB?: number;
  /** cost/KiB at the largest size measured over cost/KiB at the smallest. */
  ratio: number;
  linear: boolean;
  verdict: string;
}

export interface GrowthReport {
  settings: GrowthSettings;
  operation: string;
  kinds: KindGrowth[];
}

function runKind(kind: ContentKind, settings: GrowthSettings): Promise<{ points: GrowthPoint[]; stoppedAtKiB?: number }> {
  const input: GrowthWorkerInput = { kind, sizesKiB: settings.sizesKiB, minMillis: settings.minMillis, minCalls: settings.minCalls };
  const worker = new Worker(join(__dirname, 'growth-worker.js'), { workerData: input });
  const points: GrowthPoint[] = [];
  return new Promise((resolve, reject) => {
    let budget: NodeJS.Timeout | undefined;
    let current: number | undefined;
    const settle = (done: () => void) => {
      clearTimeout(budget);
      worker.removeAllListeners();
      done();
    };
    worker.on('message', (message: GrowthMessage) => {
      clearTimeout(budget);
      if (message.type === 'start') {
        current = message.targetKiB;
        budget = setTimeout(() => {
          const stoppedAtKiB = current;
          settle(() => void worker.terminate().then(() => resolve({ points, ...(stoppedAtKiB !== undefined ? { stoppedAtKiB } : {}) })));
        }, settings.budgetSeconds * 1000);
      } else if (message.type === 'point') {
        points.push(message.point);
      } else {
        settle(() => void worker.terminate().then(() => resolve({ points })));
      }
    });
    worker.on('error', (error) => settle(() => reject(error)));
    worker.on('exit', (code) => settle(() => reject(new Error(`growth worker for ${kind} exited (${code}) before it finished`))));
  });
}

export async function benchGrowth(progress: (line: string) => void, settings = DEFAULT_GROWTH_SETTINGS): Promise<GrowthReport> {
  const kinds: KindGrowth[] = [];
  for (const kind of CONTENT_KINDS) {
    progress(`growth: ${kind}, ${settings.sizesKiB.join('/')} KiB, ${settings.budgetSeconds} s budget per size`);
    const { points, stoppedAtKiB } = await runKind(kind, settings);
    const first = points[0];
    const last = points.at(-1);
    const ratio = first && last ? last.microsPerKiB / first.microsPerKiB : NaN;
    const linear = stoppedAtKiB === undefined && ratio <= settings.linearRatio;
    const largest = last ? `${Math.round(last.bytes / 1024)} KiB` : 'no size';
    const verdict =
      stoppedAtKiB !== undefined
        ? `super-linear (stopped at ${stoppedAtKiB} KiB: over ${settings.budgetSeconds} s)`
        : linear
          ? `linear (×${ratio.toFixed(2)} per KiB from ${Math.round((first?.bytes ?? 0) / 1024)} KiB to ${largest})`
          : `super-linear (×${ratio.toFixed(2)} per KiB from ${Math.round((first?.bytes ?? 0) / 1024)} KiB to ${largest})`;
    progress(`growth: ${kind}: ${verdict}`);
    kinds.push({ kind, content: CONTENT_DESCRIPTIONS[kind], points, ...(stoppedAtKiB !== undefined ? { stoppedAtKiB } : {}), ratio, linear, verdict });
  }
  return { settings, operation: 'JSON.parse of the review, decideAdmission and JSON.stringify of the answer (CPU time of the measuring thread per call)', kinds };
}
