/**
 * Every number drainguard writes into a pod fits its Kubernetes type (checked against the Kubernetes
 * OpenAPI schema of Pod, whose probe fields are int32) and every drain argument is one the drain
 * program accepts, whatever grace period the pod declares. Where the pod's own value forces a limit,
 * the value is capped and a warning says so.
 */
import fc from 'fast-check';
import { defaultConfig, DRAIN_SETTING_DEFAULTS, type Config } from '../../../src/config';
import { MAX_DEADLINE_SECONDS, parseDrainArguments } from '../../../src/drain-contract';
import type { Pod } from '../../../src/mutate';
import { configWith, container, loadPod, mutateOk } from './support';

const INT32_MAX = 2 ** 31 - 1;

interface PodModel {
  validate(): void;
}
let PodClass: new (data: unknown) => PodModel;
beforeAll(async () => {
  // kubernetes-models is ESM only.
  ({ Pod: PodClass } = (await import('kubernetes-models/v1/Pod')) as unknown as { Pod: typeof PodClass });
});

/** Throws with the schema's message when the pod does not match the Kubernetes Pod schema. */
function validateAgainstSchema(pod: Pod): void {
  new PodClass({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'envoy' }, ...pod }).validate();
}

function withGrace(seconds: number): Pod {
  const pod = loadPod('contour-main.yaml');
  pod.spec.terminationGracePeriodSeconds = seconds;
  return pod;
}

function checkNumbers(pod: Pod, config: Config = defaultConfig()) {
  const { result, after } = mutateOk(pod, config);
  validateAgainstSchema(after);
  const envoy = container(after, 'envoy');
  const settings = parseDrainArguments((envoy.lifecycle?.preStop?.exec?.command ?? []).slice(2));
  const probe = envoy.livenessProbe;
  for (const written of [probe, envoy.startupProbe]) {
    for (const field of ['periodSeconds', 'timeoutSeconds', 'successThreshold', 'failureThreshold', 'terminationGracePeriodSeconds'] as const) {
      expect(written?.[field]).toBeGreaterThanOrEqual(1);
      expect(written?.[field]).toBeLessThanOrEqual(INT32_MAX);
    }
  }
  return { result, settings, probe };
}

test('the contract fixture pod itself matches the Kubernetes Pod schema (so the checks below are meaningful)', () => {
  expect(() => validateAgainstSchema(loadPod('contour-main.yaml'))).not.toThrow();
  const pod = loadPod('contour-main.yaml');
  container(pod, 'envoy').livenessProbe = { httpGet: { path: '/ready', port: 8002 }, failureThreshold: INT32_MAX + 1 };
  expect(() => validateAgainstSchema(pod)).toThrow(/failureThreshold/);
});

test('a grace period just above what a timer holds gives the longest deadline the program accepts, with a warning', () => {
  const { result, settings } = checkNumbers(withGrace(2_147_494));
  expect(settings.deadlineMs).toBe(MAX_DEADLINE_SECONDS * 1000);
  expect(result.timeline.deadlineSeconds).toBe(MAX_DEADLINE_SECONDS);
  expect(result.warnings).toContainEqual(expect.stringMatching(/drain deadline is capped at 2000000s/));
});

test('a grace period of exactly the longest deadline plus the margin is not capped and not warned about', () => {
  const margin = DRAIN_SETTING_DEFAULTS.deadlineMarginSeconds;
  const { result, settings } = checkNumbers(withGrace(MAX_DEADLINE_SECONDS + margin));
  expect(settings.deadlineMs).toBe(MAX_DEADLINE_SECONDS * 1000);
  expect(result.warnings.filter((w) => w.includes('capped'))).toEqual([]);
});

test('a grace period far beyond int32 still gives probes within int32 (they do not depend on it)', () => {
  const { result, probe } = checkNumbers(withGrace(Number.MAX_SAFE_INTEGER));
  expect(probe?.failureThreshold).toBe(defaultConfig().liveness.failureThreshold);
  expect(result.warnings.filter((w) => w.includes('failureThreshold'))).toEqual([]);
});

test('a negative grace period still gets a positive deadline', () => {
  const { settings, probe } = checkNumbers(withGrace(-100));
  expect(probe?.failureThreshold).toBeGreaterThanOrEqual(1);
  expect(settings.deadlineMs).toBeGreaterThan(0);
});

test('any grace period and liveness settings give numbers in range', () => {
  const grace = fc.oneof(
    fc.integer({ min: -1000, max: 100_000 }),
    fc.integer({ min: MAX_DEADLINE_SECONDS - 100, max: MAX_DEADLINE_SECONDS + 100 }),
    fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
  );
  const liveness = fc.record({
    periodSeconds: fc.integer({ min: 1, max: 3600 }),
    failureThreshold: fc.integer({ min: 1, max: 3600 }),
    startupFailureThreshold: fc.integer({ min: 1, max: 3600 }),
  });
  fc.assert(
    fc.property(grace, liveness, (seconds, probeSettings) => {
      const config = configWith((c) => Object.assign(c.liveness, probeSettings));
      const { settings } = checkNumbers(withGrace(seconds), config);
      expect(settings.deadlineMs).toBeGreaterThan(0);
      expect(settings.deadlineMs).toBeLessThanOrEqual(MAX_DEADLINE_SECONDS * 1000);
    }),
    { numRuns: 200 },
  );
});
