import { defaultConfig } from '../src/config';
import { mutate } from '../src/mutate';
import type { Pod } from '../src/mutate/k8s';
import { contourPod, inflatedPod } from './lib/pods';
import { linearFit, quantile } from './lib/stats';

export interface MutateTiming {
  pod: string;
  bytes: number;
  operations: number;
  iterations: number;
  medianMicros: number;
  p99Micros: number;
}

export interface MutateReport {
  contour: MutateTiming;
  large: MutateTiming;
  /** Median time per call against pod size: linear growth shows as r2 close to 1 and a small intercept. */
  growth: { points: { bytes: number; medianMicros: number }[]; microsPerKiB: number; r2: number };
}

/** Times `mutate()` call by call; the first calls warm the JIT and are not counted. */
function timeMutate(label: string, pod: Pod, iterations: number): MutateTiming {
  const config = defaultConfig();
  const first = mutate(pod, config);
  if (first.status !== 'mutated') throw new Error(`benchmark pod ${label} was not mutated: ${first.status}`);
  for (let i = 0; i < Math.min(iterations, 500); i += 1) mutate(pod, config);
  const samples: number[] = [];
  for (let i = 0; i < iterations; i += 1) {
    const start = process.hrtime.bigint();
    mutate(pod, config);
    samples.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  return {
    pod: label,
    bytes: JSON.stringify(pod).length,
    operations: first.patch.length,
    iterations,
    medianMicros: quantile(samples, 0.5),
    p99Micros: quantile(samples, 0.99),
  };
}

export function benchMutate(progress: (line: string) => void): MutateReport {
  progress('mutate(): Contour pod');
  const contour = timeMutate('contour', contourPod(), 20000);
  progress('mutate(): 64 KiB pod');
  const large = timeMutate('64KiB', inflatedPod(64 * 1024), 2000);
  const points: { bytes: number; medianMicros: number }[] = [];
  for (const kib of [8, 16, 32, 64, 128, 256]) {
    progress(`mutate(): growth, ${kib} KiB`);
    const timing = timeMutate(`${kib}KiB`, inflatedPod(kib * 1024), kib >= 128 ? 300 : 1000);
    points.push({ bytes: timing.bytes, medianMicros: timing.medianMicros });
  }
  const fit = linearFit(points.map((p) => ({ x: p.bytes / 1024, y: p.medianMicros })));
  return { contour, large, growth: { points, microsPerKiB: fit.slope, r2: fit.r2 } };
}
