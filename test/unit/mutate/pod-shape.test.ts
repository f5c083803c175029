/**
 * A pod whose fields have the wrong JSON types is reported field by field, never a crash: the fuzz run
 * found TypeErrors deep in the core for `volumes: {}`, `args: [1]`, `image: 5` and the like.
 */
import { readdirSync } from 'node:fs';
import fc from 'fast-check';
import { defaultConfig } from '../../../src/config';
import { mutate, podShapeProblems, type Pod } from '../../../src/mutate';
import { podFitsShape, walkPodShape } from '../../../src/k8s/shape';
import { applyIndependently, FIXTURES, loadPod } from './support';

const FIXTURE_NAMES = readdirSync(FIXTURES).filter((name) => name.endsWith('.yaml'));
const contour = () => loadPod('contour-main.yaml');

test.each(FIXTURE_NAMES)('%s: every field drainguard reads has its Kubernetes type', (name) => {
  expect(podShapeProblems(loadPod(name))).toEqual([]);
});

const BROKEN: [string, (pod: Pod) => void, string][] = [
  ['volumes an object', (p) => Object.assign(p.spec, { volumes: { name: 'x' } }), 'spec.volumes must be a list, got an object'],
  ['a container not an object', (p) => Object.assign(p.spec, { containers: [null] }), 'spec.containers[0] must be an object, got null'],
  ['a container without a name', (p) => delete (p.spec.containers[1] as { name?: string }).name, 'spec.containers[1].name is required'],
  ['args holding a number', (p) => Object.assign(p.spec.containers[1] as object, { args: ['-c', 5] }), 'spec.containers[1].args[1] must be a string, got the number 5'],
  ['an image that is a number', (p) => Object.assign(p.spec.containers[1] as object, { image: 5 }), 'spec.containers[1].image must be a string, got the number 5'],
  ['resources an array', (p) => Object.assign(p.spec.containers[1] as object, { resources: [] }), 'spec.containers[1].resources must be an object, got a list'],
  ['a null lifecycle', (p) => Object.assign(p.spec.containers[1] as object, { lifecycle: null }), 'spec.containers[1].lifecycle must be an object, got null'],
  ['a probe port missing', (p) => delete (p.spec.containers[1]?.readinessProbe?.httpGet as { port?: unknown }).port, 'spec.containers[1].readinessProbe.httpGet.port is required'],
  ['a fractional grace period', (p) => Object.assign(p.spec, { terminationGracePeriodSeconds: 2.5 }), 'spec.terminationGracePeriodSeconds must be a whole number, got the number 2.5'],
  ['an annotation value that is a number', (p) => Object.assign(p, { metadata: { annotations: { 'prometheus.io/port': 8002 } } }), 'metadata.annotations["prometheus.io/port"] must be a string'],
  ['a volume mount without a mountPath', (p) => delete (p.spec.containers[1]?.volumeMounts?.[0] as { mountPath?: string }).mountPath, 'spec.containers[1].volumeMounts[0].mountPath is required'],
  ['spec missing', (p) => delete (p as { spec?: unknown }).spec, 'spec is required'],
];

test.each(BROKEN)('%s: invalid, naming the field', (_label, breakIt, problem) => {
  const pod = contour();
  breakIt(pod);
  const result = mutate(pod, defaultConfig());
  expect(result.status).toBe('invalid');
  expect(result.status === 'invalid' && result.problems.join('\n')).toContain(problem);
  expect(result.patch).toEqual([]);
});

test('every bad field is named at once, not just the first', () => {
  const pod = contour();
  Object.assign(pod.spec, { volumes: 'none', terminationGracePeriodSeconds: '300' });
  expect(podShapeProblems(pod)).toEqual([
    'spec.volumes must be a list, got the string "none"',
    'spec.terminationGracePeriodSeconds must be a whole number, got the string "300"',
  ]);
});

test('a pod opted out is left alone even when malformed', () => {
  const pod = contour();
  Object.assign(pod.spec, { volumes: {} });
  pod.metadata = { annotations: { 'drainguard.io/inject': 'disabled' } };
  expect(mutate(pod, defaultConfig()).status).toBe('skipped');
});

/** Every path into a JSON value, so the property below can break any field of a real pod. */
function pathsOf(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (typeof value !== 'object' || value === null) return [prefix];
  const entries = Array.isArray(value) ? value.map((item, i) => [i, item] as const) : Object.entries(value);
  return [prefix, ...entries.flatMap(([key, item]) => pathsOf(item, [...prefix, key]))];
}

function replaced(pod: Pod, path: (string | number)[], value: unknown, remove: boolean): Pod {
  const copy = JSON.parse(JSON.stringify(pod)) as Record<string | number, unknown>;
  let parent = copy;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  const last = path[path.length - 1] as string | number;
  if (remove && Array.isArray(parent)) parent.splice(last as number, 1);
  else if (remove) delete parent[last];
  else parent[last] = value;
  return copy as unknown as Pod;
}

/** A fixture pod with any one field replaced by any JSON value, or removed. */
function brokenPods(): fc.Arbitrary<Pod> {
  const pods = FIXTURE_NAMES.map(loadPod);
  return fc
    .record({ podIndex: fc.nat({ max: pods.length - 1 }), pathSeed: fc.nat(), value: fc.jsonValue({ maxDepth: 2 }), remove: fc.boolean() })
    .map(({ podIndex, pathSeed, value, remove }) => {
      const pod = pods[podIndex] as Pod;
      const paths = pathsOf(pod).filter((path) => path.length > 0);
      return replaced(pod, paths[pathSeed % paths.length] as (string | number)[], value, remove);
    });
}

test('property: the quick shape test passes a pod exactly when the field-by-field walk finds no problem', () => {
  for (const name of FIXTURE_NAMES) expect(podFitsShape(loadPod(name))).toBe(true);
  let misfits = 0;
  fc.assert(
    fc.property(brokenPods(), (pod) => {
      const problems = walkPodShape(pod);
      expect(podFitsShape(pod)).toBe(problems.length === 0);
      expect(podShapeProblems(pod)).toEqual(problems);
      if (problems.length > 0) misfits += 1;
    }),
    { numRuns: 3000 },
  );
  // The generator must break pods often enough for the comparison to mean something.
  expect(misfits).toBeGreaterThan(300);
});

test('property: whatever JSON replaces any field of a real pod, mutate never throws, and a patch it gives applies', () => {
  const broken = brokenPods();
  fc.assert(
    fc.property(broken, (pod) => {
      const result = mutate(pod, defaultConfig());
      if (result.status === 'mutated') applyIndependently(pod, result.patch);
    }),
    { numRuns: 1500 },
  );
});
