/**
 * The patch verification over generated pods and tampered patches: it must reject every patch that
 * does not apply, does not produce the pod drainguard computed, or introduces a violation, and accept
 * every patch that does none of these, exactly as a reference verification does. Each property records
 * the classes of cases that reached its assertions (every way of tampering, every verdict), and the
 * last test fails when one was never reached.
 */
import fc from 'fast-check';
import { applyPatch } from 'fast-json-patch';
import { mutate, validatePod, type Pod } from '../../src/mutate';
import type { PatchOperation } from '../../src/mutate/patch/builder';
import { PatchVerificationError, verifyPatch } from '../../src/mutate/patch/verify';
import { applyIndependently, jsonCopy } from '../support/independent-patch';
import { CaseClasses } from '../support/case-classes';
import { validPodCase } from '../support/generators/pod-arbitrary';

const RUNS = Number(process.env.RUNS ?? 400);

/**
 * What a verification concluded: the patch verified, or which check refused it. A patch that turns
 * the pod into something that is not a pod at all (`/spec` an array) makes the validation throw a
 * TypeError, which the admission answers as drainguard's own failure: refused too.
 */
type Verdict = 'verified' | 'does not apply' | 'does not produce the computed pod' | `introduces: ${string}` | `crashed: ${string}`;

function verdictOf(verify: () => void): Verdict {
  try {
    verify();
    return 'verified';
  } catch (error) {
    if (!(error instanceof PatchVerificationError)) return `crashed: ${(error as Error).name}`;
    if (error.violations.length > 0) return `introduces: ${error.violations.join('; ')}`;
    return /does not apply/.test(error.message) ? 'does not apply' : 'does not produce the computed pod';
  }
}

/** JSON text with every object's keys sorted: equal for equal JSON values, whatever their key order. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    typeof inner === 'object' && inner !== null && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : inner,
  );
}

/**
 * The reference verification, an oracle independent of src/mutate/patch: the plainest form of what
 * verifyPatch must decide. Copy the whole pod as JSON, apply the patch with fast-json-patch's own
 * validating `applyPatch` (verifyPatch re-implements those validation rules by hand, `isDigits`,
 * `hasUndefined`, `checkAndOwnPath`, so that it can copy only the paths it touches), compare as
 * canonical JSON text, then validate. It shares nothing with verifyPatch but validatePod, the rule
 * book both apply by definition (tested on its own in test/unit/mutate/validate-pod.test.ts). The
 * property below asks the fast verification for this one's verdict on every tampered patch.
 */
function referenceVerification(input: Pod, patch: readonly PatchOperation[], expected: Pod): void {
  let patched: Pod;
  try {
    patched = applyPatch(jsonCopy(input), jsonCopy(patch as PatchOperation[]), true, true).newDocument;
  } catch (error) {
    throw new PatchVerificationError(`drainguard bug: the patch does not apply: ${(error as Error).message}`);
  }
  if (canonicalJson(patched) !== canonicalJson(expected)) throw new PatchVerificationError('drainguard bug: the patch does not produce the pod drainguard computed');
  const after = validatePod(patched);
  if (after.length === 0) return;
  const before = new Set(validatePod(input));
  const introduced = after.filter((problem) => !before.has(problem));
  if (introduced.length > 0) throw new PatchVerificationError(`drainguard bug: the patched pod is invalid: ${introduced.join('; ')}`, introduced);
}

/** Ways a patch can be wrong: what a bug in the builder or a step could produce. */
const TAMPERINGS = [
  'drop',
  'duplicate',
  'swap',
  'index-up',
  'index-down',
  'index-far',
  'index-dash',
  'index-leading-zero',
  'index-not-a-number',
  'path-shorter',
  'path-longer',
  'path-unescaped',
  'path-renamed',
  'path-root',
  'path-relative',
  'path-proto',
  'path-inherited',
  'path-constructor-prototype',
  'op-add-replace-swapped',
  'op-to-remove',
  'op-remove-to-add',
  'op-unknown',
  'value-changed',
  'value-with-undefined',
  'value-duplicate-name',
  'value-missing-volume',
  'value-two-handlers',
] as const;
type Tampering = (typeof TAMPERINGS)[number];

interface TamperPlan {
  how: Tampering;
  /** Which operation, which segment, which other operation: taken modulo what exists. */
  at: number;
  segment: number;
  other: number;
}

const tamperPlan: fc.Arbitrary<TamperPlan> = fc.record({
  how: fc.constantFrom(...TAMPERINGS),
  at: fc.nat(),
  segment: fc.nat(),
  other: fc.nat(),
});

function numericSegment(path: string, pick: number, change: (index: number) => string): string {
  const segments = path.split('/');
  const numeric = segments.map((s, i) => (/^[0-9]+$/.test(s) ? i : -1)).filter((i) => i >= 0);
  if (numeric.length === 0) return `${path}/0`;
  const at = numeric[pick % numeric.length] as number;
  segments[at] = change(Number(segments[at]));
  return segments.join('/');
}

/** The first object with a `name` inside `value` (a container, a volume, a mount), if any. */
function namedInside(value: unknown): Record<string, unknown> | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  if (!Array.isArray(value) && typeof (value as Record<string, unknown>).name === 'string') return value as Record<string, unknown>;
  for (const child of Object.values(value)) {
    const found = namedInside(child);
    if (found) return found;
  }
  return undefined;
}

/** A tampered copy of `patch`; the input patch is not touched. */
function tamper(patch: readonly PatchOperation[], plan: TamperPlan, pod: Pod): unknown[] {
  const ops = jsonCopy(patch) as unknown as Record<string, unknown>[];
  const at = plan.at % ops.length;
  const op = ops[at] as Record<string, unknown> & { path: string };
  const other = plan.other % ops.length;
  switch (plan.how) {
    case 'drop':
      ops.splice(at, 1);
      break;
    case 'duplicate':
      ops.splice(at, 0, jsonCopy(op));
      break;
    case 'swap':
      [ops[at], ops[other]] = [ops[other] as Record<string, unknown>, op];
      break;
    case 'index-up':
      op.path = numericSegment(op.path, plan.segment, (i) => String(i + 1));
      break;
    case 'index-down':
      op.path = numericSegment(op.path, plan.segment, (i) => String(Math.max(0, i - 1) === i ? i + 2 : i - 1));
      break;
    case 'index-far':
      op.path = numericSegment(op.path, plan.segment, () => '4294967297');
      break;
    case 'index-dash':
      op.path = numericSegment(op.path, plan.segment, () => '-');
      break;
    case 'index-leading-zero':
      op.path = numericSegment(op.path, plan.segment, (i) => `0${i}`);
      break;
    case 'index-not-a-number':
      op.path = numericSegment(op.path, plan.segment, () => 'first');
      break;
    case 'path-shorter':
      op.path = op.path.slice(0, op.path.lastIndexOf('/'));
      break;
    case 'path-longer':
      op.path = `${op.path}/extra`;
      break;
    case 'path-unescaped':
      op.path = op.path.includes('~1') ? op.path.replace(/~1/g, '/') : op.path.replace(/\/([^/]*)$/, '/$1~0');
      break;
    case 'path-renamed': {
      const segments = op.path.split('/');
      const i = 1 + (plan.segment % (segments.length - 1));
      segments[i] = /^[0-9]+$/.test(segments[i] as string) ? 'renamed' : `${segments[i]}x`;
      op.path = segments.join('/');
      break;
    }
    case 'path-root':
      op.path = '';
      break;
    case 'path-relative':
      op.path = op.path.slice(1);
      break;
    case 'path-proto':
      op.path = `/__proto__${op.path}`;
      break;
    case 'path-inherited':
      // A name every object inherits: the applier finds a value there, so replace and remove "exist".
      op.path = op.path.replace(/\/[^/]*$/, '/toString');
      break;
    case 'path-constructor-prototype':
      op.path = op.path.replace(/\/[^/]*$/, '/constructor/prototype$&');
      break;
    case 'op-add-replace-swapped':
      if (op.op === 'remove') op.value = {};
      op.op = op.op === 'add' ? 'replace' : 'add';
      break;
    case 'op-to-remove':
      op.op = 'remove';
      delete op.value;
      break;
    case 'op-remove-to-add':
      if (op.op === 'remove') {
        op.op = 'add';
        op.value = { name: 'restored' };
      } else op.value = [op.value];
      break;
    case 'op-unknown':
      op.op = 'upsert';
      break;
    case 'value-changed': {
      const named = namedInside(op.value);
      if (named) named.name = `${String(named.name)}-changed`;
      else op.value = typeof op.value === 'string' ? `${op.value}!` : 'changed';
      break;
    }
    case 'value-with-undefined':
      // Not JSON, but what a step could build: fast-json-patch refuses it.
      op.value = { inner: { missing: undefined } };
      if (op.op === 'remove') op.op = 'add';
      break;
    case 'value-duplicate-name': {
      const named = namedInside(op.value);
      if (named) named.name = pod.spec.containers[0]?.name ?? 'envoy';
      break;
    }
    case 'value-missing-volume': {
      const named = namedInside(op.value);
      if (named) named.volumeMounts = [{ name: 'no-such-volume', mountPath: '/nowhere' }];
      break;
    }
    case 'value-two-handlers':
      if (typeof op.value === 'object' && op.value !== null && !Array.isArray(op.value)) {
        (op.value as Record<string, unknown>).tcpSocket = { port: 1 };
        (op.value as Record<string, unknown>).exec = { command: ['true'] };
      }
      break;
  }
  return ops;
}

const coverage = new CaseClasses();
const record = coverage.record.bind(coverage);

/** A verdict's class: `introduces` without the violation's words. */
const verdictClass = (verdict: Verdict) => verdict.replace(/^(introduces|crashed): .*/, '$1');

const mutatedCase = validPodCase
  .map((testCase) => ({ ...testCase, result: mutate(testCase.pod, testCase.config) }))
  .filter(({ result }) => result.patch.length > 0);

/**
 * The pod the verification is asked to expect: the one drainguard computed (the untampered patch
 * applied), or the tampered patch's own result, as if the builder had computed it too: then only the
 * validation can catch what is wrong.
 */
function expectations(pod: Pod, patch: readonly PatchOperation[], tampered: unknown[]): Pod[] {
  const computed = applyIndependently(pod, patch);
  try {
    return [computed, applyIndependently(pod, tampered)];
  } catch {
    return [computed];
  }
}

describe('the patch verification over tampered patches', () => {
  test('gives the verdict of the reference verification for every tampered patch, and touches neither the pod nor the patch', () => {
    fc.assert(
      fc.property(mutatedCase, tamperPlan, ({ pod, result }, plan) => {
        const tampered = tamper(result.patch, plan, pod);
        const expectedPods = expectations(pod, result.patch, tampered);
        // Whether the verification was also asked to expect the tampered patch's own result (then only
        // its validation can refuse it).
        if (expectedPods.length > 1) record('tampered', 'expecting what the tampered patch makes');
        for (const expected of expectedPods) {
          const podBefore = JSON.stringify(pod);
          const patchBefore = JSON.stringify(tampered);
          const verdict = verdictOf(() => verifyPatch(pod, tampered as PatchOperation[], expected));
          expect(JSON.stringify(pod)).toBe(podBefore);
          expect(JSON.stringify(tampered)).toBe(patchBefore);
          if (plan.how === 'value-with-undefined' || (tampered as PatchOperation[]).some((op) => op.path === '')) {
            // Refused before applying, where the reference's JSON copy would hide the fault: it drops
            // `undefined` (which fast-json-patch's validator refuses), and fast-json-patch lets an
            // operation on "" replace the whole pod (drainguard never writes one).
            expect(verdict).toBe('does not apply');
            record('tampered', `tampering ${plan.how}`);
            continue;
          }
          expect({ how: plan.how, verdict }).toEqual({ how: plan.how, verdict: verdictOf(() => referenceVerification(pod, tampered as PatchOperation[], expected)) });
          record('tampered', `tampering ${plan.how}`);
          record('tampered', `verdict ${verdictClass(verdict)}`);
        }
      }),
      { numRuns: RUNS },
    );
  });

  test('verifies every untampered patch drainguard computes, without touching the pod', () => {
    fc.assert(
      fc.property(mutatedCase, ({ pod, result }) => {
        const before = JSON.stringify(pod);
        expect(verdictOf(() => verifyPatch(pod, result.patch, applyIndependently(pod, result.patch)))).toBe('verified');
        expect(JSON.stringify(pod)).toBe(before);
        record('untampered', result.status);
      }),
      { numRuns: RUNS },
    );
  });
});

/** What each property claims to cover: every way of tampering, and each verdict the verification gives. */
const CLAIMED: Readonly<Record<string, readonly string[]>> = {
  tampered: [
    ...TAMPERINGS.map((how) => `tampering ${how}`),
    'verdict verified',
    'verdict does not apply',
    'verdict does not produce the computed pod',
    'verdict introduces',
    'expecting what the tampered patch makes',
  ],
  untampered: ['mutated'],
};

test('the generated cases reached every class each property above claims', () => {
  expect(coverage.missing(CLAIMED)).toEqual([]);
});
