/**
 * The decision's parts in a tight loop, one call at a time, for the Contour pod: what the review costs
 * to parse, to decide (`decideAdmission`), to mutate (`mutate()`), and the verification inside mutate (the
 * patch applied to a copy of the input, compared with the pod drainguard computed, validated). A tight
 * loop keeps caches warm, so these are floors; the HTTPS benchmark reports the same decision timed inside
 * a server. The first calls warm the JIT and are not counted.
 */
import { decideAdmission } from '../src/admission';
import { defaultConfig } from '../src/config';
import { mutate, type Pod } from '../src/mutate';
// The one place the bench reaches inside the core, through the stages' faces: the verification is not
// exported on its own, and it is timed on what mutate() gives it, the builder's draft (which shares
// untouched nodes with the pod).
import { readFacts } from '../src/mutate/facts';
import { parsePod } from '../src/mutate/parse';
import { applySteps, verifyPatch } from '../src/mutate/patch';
import { planPod } from '../src/mutate/plan';
import { contourPod, inflatedPod } from '../test/support/generators/pods';
import { reviewBody } from '../test/support/generators/review';
import { quantile } from './lib/stats';

export interface CallTiming {
  iterations: number;
  medianMicros: number;
  meanMicros: number;
  p99Micros: number;
}

export interface TightLoopReport {
  reviewBytes: number;
  podBytes: number;
  patchOperations: number;
  jsonParse: CallTiming;
  decideAdmission: CallTiming;
  mutate: CallTiming;
  verification: CallTiming;
  /** The Contour pod grown to about 64 KiB with application containers. */
  mutateLarge: CallTiming & { podBytes: number };
}

function timeCalls(call: () => unknown, iterations: number): CallTiming {
  for (let i = 0; i < Math.min(iterations, 1000); i += 1) call();
  const samples = new Float64Array(iterations);
  for (let i = 0; i < iterations; i += 1) {
    const start = process.hrtime.bigint();
    call();
    samples[i] = Number(process.hrtime.bigint() - start) / 1000;
  }
  const values = Array.from(samples);
  return { iterations, medianMicros: quantile(values, 0.5), meanMicros: values.reduce((a, b) => a + b, 0) / iterations, p99Micros: quantile(values, 0.99) };
}

function mutated(pod: Pod, label: string) {
  const result = mutate(pod, defaultConfig());
  if (result.status !== 'mutated') throw new Error(`benchmark pod ${label} was not mutated: ${result.status}`);
  return result;
}

export function benchTightLoop(progress: (line: string) => void, quick: boolean): TightLoopReport {
  const config = defaultConfig();
  const iterations = quick ? 3000 : 20000;
  const pod = contourPod();
  const body = reviewBody(pod);
  const review = JSON.parse(body) as unknown;
  const { patch } = mutated(pod, 'contour');
  // The builder's draft, as mutate() passes it to the verification: the input with the patch applied.
  const parsed = parsePod(pod);
  const plan = parsed.kind === 'parsed' ? planPod(readFacts(parsed, config), config) : undefined;
  if (plan?.kind !== 'protect') throw new Error('benchmark pod contour is not protected');
  const expected = applySteps(pod, plan).builder.draft;

  progress('tight loop: JSON.parse of the review');
  const jsonParse = timeCalls(() => JSON.parse(body), iterations);
  progress('tight loop: decideAdmission');
  const decide = timeCalls(() => decideAdmission(review, config), iterations);
  progress('tight loop: mutate()');
  const mutateTiming = timeCalls(() => mutate(pod, config), iterations);
  progress('tight loop: the verification inside mutate()');
  const verification = timeCalls(() => verifyPatch(pod, patch, expected), iterations);
  progress('tight loop: mutate() of a 64 KiB pod');
  const large = inflatedPod(64 * 1024);
  mutated(large, '64KiB');
  const mutateLarge = { ...timeCalls(() => mutate(large, config), quick ? 300 : 2000), podBytes: JSON.stringify(large).length };

  return {
    reviewBytes: Buffer.byteLength(body),
    podBytes: JSON.stringify(pod).length,
    patchOperations: patch.length,
    jsonParse,
    decideAdmission: decide,
    mutate: mutateTiming,
    verification,
    mutateLarge,
  };
}
