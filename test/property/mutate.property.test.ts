/**
 * Properties of mutate() over generated valid pods.
 * Bounded runs keep the file well under 20 s. A property that holds for every pod it was given says
 * nothing of pods it was never given: each records the classes of cases that reached its assertions,
 * and the last test fails when a class it claims was never reached (a generator that drifted, a
 * filter that let nothing through).
 */
import fc from 'fast-check';
import { applyPatch as applyWithCore } from 'fast-json-patch';
import { applyIndependently, jsonCopy } from '../support/independent-patch';
import { mutate, PROTECTED_LABEL, validatePod, type Container, type MutationResult, type Pod } from '../../src/mutate';
import { SAFE_TO_EVICT_LOCAL_VOLUMES } from '../../src/mutate/parse';
import { findEnvoy, findShutdownManagers } from '../../src/mutate';
import { CaseClasses } from '../support/case-classes';
import { validPodCase, type GeneratedCase } from '../support/generators/pod-arbitrary';

const RUNS = 300;
const STATUS = 'drainguard.io/status';

const copy = jsonCopy;

function patched({ pod, config }: GeneratedCase): { result: MutationResult; after: Pod } {
  const result = mutate(pod, config);
  return { result, after: applyIndependently(pod, result.patch) };
}

function withoutStatus(pod: Pod): Pod {
  const result = copy(pod);
  delete result.metadata?.annotations?.[STATUS];
  return result;
}

/**
 * The pod with everything drainguard is allowed to change taken out: Envoy's preStop, liveness
 * probe, startup probe (when Envoy had none), requests and its mount of drainguard's volume; the
 * sidecars; drainguard's init container and volume; its annotations; the grace period. What remains
 * must be identical before and after.
 */
function outsideScope(pod: Pod, { pod: original, config }: GeneratedCase, envoyName: string, sidecarNames: readonly string[]): Pod {
  const result = copy(pod);
  const annotations = result.metadata?.annotations;
  if (annotations !== undefined) {
    delete annotations[STATUS];
    delete annotations[SAFE_TO_EVICT_LOCAL_VOLUMES];
    if (Object.keys(annotations).length === 0) delete result.metadata?.annotations;
  }
  const labels = result.metadata?.labels;
  if (labels !== undefined) {
    delete labels[PROTECTED_LABEL];
    if (Object.keys(labels).length === 0) delete result.metadata?.labels;
  }
  if (result.metadata !== undefined && Object.keys(result.metadata).length === 0) delete result.metadata;
  delete result.spec.terminationGracePeriodSeconds;
  const dropped = new Set([...sidecarNames, config.installer.containerName]);
  result.spec.containers = result.spec.containers.filter((c) => !dropped.has(c.name));
  result.spec.initContainers = (result.spec.initContainers ?? []).filter((c) => !dropped.has(c.name));
  if (result.spec.initContainers.length === 0) delete result.spec.initContainers;
  result.spec.volumes = (result.spec.volumes ?? []).filter((v) => v.name !== config.installer.volumeName);
  if (result.spec.volumes.length === 0) delete result.spec.volumes;
  const envoy = result.spec.containers.find((c) => c.name === envoyName) as Container;
  delete envoy.livenessProbe;
  if (original.spec.containers.find((c) => c.name === envoyName)?.startupProbe === undefined) delete envoy.startupProbe;
  delete envoy.lifecycle?.preStop;
  if (envoy.lifecycle !== undefined && Object.keys(envoy.lifecycle).length === 0) delete envoy.lifecycle;
  delete envoy.resources?.requests;
  if (envoy.resources !== undefined && Object.keys(envoy.resources).length === 0) delete envoy.resources;
  envoy.volumeMounts = (envoy.volumeMounts ?? []).filter((m) => m.name !== config.installer.volumeName);
  if (envoy.volumeMounts.length === 0) delete envoy.volumeMounts;
  return result;
}

const settings = { numRuns: RUNS };

type MutationAction = Extract<MutationResult, { status: 'mutated' }>['actions'][number];

/** Every change the generator can make drainguard make (all but none: `status` is every mutation's). */
const ACTIONS: readonly MutationAction[] = [
  'resource-requests',
  'liveness-probe',
  'startup-probe',
  'installer',
  'prestop',
  'protected-label',
  'sidecar-disarmed',
  'safe-to-evict',
  'grace-period',
  'sidecar-removed',
];

const coverage = new CaseClasses();
const record = coverage.record.bind(coverage);

/** The classes of a mutated pod: its actions, and the shapes the generator claims (native sidecar, drainguard's own volume). */
function mutatedClasses({ pod, config }: GeneratedCase, result: Extract<MutationResult, { status: 'mutated' }>): string[] {
  const classes = result.actions.map((action) => `action ${action}`);
  if (pod.spec.initContainers?.some((c) => c.restartPolicy === 'Always')) classes.push('a native sidecar');
  if (result.patch.some((op) => op.op === 'add' && /^\/spec\/volumes(\/-)?$/.test(op.path) && JSON.stringify(op.value).includes(`"${config.installer.volumeName}"`))) {
    classes.push("drainguard's own volume");
  }
  return classes;
}

/** What each property claims to cover. */
const CLAIMED: Readonly<Record<string, readonly string[]>> = {
  'every pod': ['mutated', 'skipped not-envoy', 'skipped drain-not-installed'],
  // Their assertions test something only where there is a patch: a mutation's (the generator makes no
  // pod that carries drainguard's label without its drain, the other kind of patch).
  'the core\'s applier': ['mutated'],
  'pod validation': ['mutated'],
  'a second pass': [...ACTIONS.map((action) => `action ${action}`), 'a native sidecar', "drainguard's own volume"],
  'outside drainguard\'s scope': ['mutated', 'left as it was', 'a removed sidecar', 'a request the user set'],
};

const outcome = (result: MutationResult) => (result.status === 'skipped' ? `skipped ${result.reason}` : result.status);

describe('mutate() over generated valid pods', () => {
  test('never throws, never denies a pod whose annotations are all valid, never modifies its input', () => {
    fc.assert(
      fc.property(validPodCase, (testCase) => {
        const before = copy(testCase);
        const result = mutate(testCase.pod, testCase.config);
        expect(['mutated', 'skipped', 'unchanged']).toContain(result.status);
        expect(testCase).toEqual(before);
        record('every pod', outcome(result));
      }),
      settings,
    );
  });

  test('an independent RFC 6902 implementation gives the same object as the core\'s applier', () => {
    fc.assert(
      fc.property(validPodCase, (testCase) => {
        const { result, after } = patched(testCase);
        const viaCore = applyWithCore(copy(testCase.pod), copy(result.patch), true, false).newDocument;
        expect(after).toEqual(viaCore);
        if (result.patch.length > 0) record('the core\'s applier', outcome(result));
      }),
      settings,
    );
  });

  test('the result passes pod validation', () => {
    fc.assert(
      fc.property(validPodCase, (testCase) => {
        const { result, after } = patched(testCase);
        expect(validatePod(after)).toEqual([]);
        if (result.patch.length > 0) record('pod validation', outcome(result));
      }),
      settings,
    );
  });

  test('mutating the result yields zero operations; without the status, only the status operation', () => {
    fc.assert(
      fc.property(validPodCase, (testCase) => {
        const { result, after } = patched(testCase);
        if (result.status !== 'mutated') return;
        const second = mutate(after, testCase.config);
        expect(second.status).toBe('unchanged');
        expect(second.patch).toEqual([]);

        const stripped = withoutStatus(after);
        const third = mutate(stripped, testCase.config);
        expect(third.patch.map((op) => op.path)).toEqual([`/metadata/annotations/drainguard.io~1status`]);
        record('a second pass', ...mutatedClasses(testCase, result));
      }),
      settings,
    );
  });

  test('a change of delivery mode converges: rewritten in one mode and admitted in the other ends as a fresh admission in the other', () => {
    fc.assert(
      fc.property(validPodCase, (testCase) => {
        const { pod, config } = testCase;
        // A volume of drainguard's name that was there before drainguard: copy mode takes an emptyDir of
        // that name as its own, image-volume mode only one its status records, so the two differ by design.
        fc.pre(!(pod.spec.volumes ?? []).some((volume) => volume.name === config.installer.volumeName));
        const other = { ...config, installer: { ...config.installer, delivery: config.installer.delivery === 'copy' ? ('image-volume' as const) : ('copy' as const) } };
        const first = patched(testCase).after;
        const fresh = patched({ pod, config: other }).after;
        const switched = applyIndependently(first, mutate(first, other).patch);
        expect(switched).toEqual(fresh);
      }),
      settings,
    );
  });

  test('nothing outside drainguard\'s scope changes, and no user request is overwritten', () => {
    fc.assert(
      fc.property(validPodCase, (testCase) => {
        const { result, after } = patched(testCase);
        if (result.status !== 'mutated') {
          expect(after).toEqual(testCase.pod);
          if (result.patch.length === 0) record('outside drainguard\'s scope', 'left as it was');
          return;
        }
        record('outside drainguard\'s scope', 'mutated');
        const detection = findEnvoy(testCase.pod, testCase.config, testCase.pod.metadata?.annotations?.['drainguard.io/envoy-container']);
        if (!detection.found) throw new Error('mutated a pod without Envoy');
        const envoyName = (testCase.pod.spec.containers[detection.index] as Container).name;
        const sidecars = findShutdownManagers(testCase.pod, testCase.config, detection.index).map((s) => s.container.name);
        expect(outsideScope(after, testCase, envoyName, sidecars)).toEqual(outsideScope(testCase.pod, testCase, envoyName, sidecars));

        const before = [...testCase.pod.spec.containers, ...(testCase.pod.spec.initContainers ?? [])];
        const now = [...after.spec.containers, ...(after.spec.initContainers ?? [])];
        for (const original of before) {
          const current = now.find((c) => c.name === original.name);
          if (current === undefined) {
            record('outside drainguard\'s scope', 'a removed sidecar');
            continue;
          }
          for (const [resource, value] of Object.entries(original.resources?.requests ?? {})) {
            expect(current.resources?.requests?.[resource]).toEqual(value);
            record('outside drainguard\'s scope', 'a request the user set');
          }
        }
      }),
      settings,
    );
  });
});

test('the generated cases reached every class each property above claims', () => {
  expect(coverage.missing(CLAIMED)).toEqual([]);
});
