/**
 * Pods with very many annotations or mounts get a complete answer, never a crash; and the behaviour
 * of the code paths rewritten to run in linear time. How the cost grows with size is measured by
 * `npm run bench`, never asserted here.
 */
import { defaultConfig } from '../../../src/config';
import { mutate, validatePod, type Pod } from '../../../src/mutate';
import { SAFE_TO_EVICT_LOCAL_VOLUMES } from '../../../src/mutate/parse';
import { container, loadPod, mutateOk } from './support';

/** More than a function call takes as spread arguments in V8 (about 120,000). */
const BEYOND_ARGUMENT_LIMIT = 200_000;

test('every unknown drainguard.io annotation gets its warning, however many there are', () => {
  const pod = loadPod('contour-main.yaml');
  const annotations: Record<string, string> = {};
  for (let i = 0; i < BEYOND_ARGUMENT_LIMIT; i += 1) annotations[`drainguard.io/unknown-${i}`] = '';
  pod.metadata = { ...pod.metadata, annotations };
  const { result } = mutateOk(pod);
  const unknown = result.warnings.filter((warning) => warning.startsWith('unknown annotation drainguard.io/unknown-'));
  expect(unknown).toHaveLength(BEYOND_ARGUMENT_LIMIT);
});

test('pod validation lists every problem of a container with very many bad mounts', () => {
  const pod = loadPod('plain-envoy.yaml');
  const envoy = pod.spec.containers[0];
  if (envoy === undefined) throw new Error('no container');
  envoy.volumeMounts = Array.from({ length: BEYOND_ARGUMENT_LIMIT }, (_, i) => ({ name: `missing-${i}`, mountPath: `/m/${i}` }));
  const problems = validatePod(pod);
  expect(problems).toHaveLength(BEYOND_ARGUMENT_LIMIT);
  expect(problems[BEYOND_ARGUMENT_LIMIT - 1]).toContain(`names missing volume missing-${BEYOND_ARGUMENT_LIMIT - 1}`);
  // The input's own problems are the API server's to report: drainguard still answers.
  expect(mutate(pod, defaultConfig()).status).toBe('mutated');
});

test('the autoscaler annotation keeps every listed name once, in order, with the pod\'s emptyDirs added', () => {
  const pod = loadPod('contour-main.yaml');
  pod.metadata = { ...pod.metadata, annotations: { [SAFE_TO_EVICT_LOCAL_VOLUMES]: ' b,a,, b ,envoy-config,c' } };
  const { after } = mutateOk(pod);
  const emptyDirs = (pod.spec.volumes ?? []).filter((v) => v.emptyDir !== undefined).map((v) => v.name);
  expect(emptyDirs).toContain('envoy-config');
  const added = emptyDirs.filter((name) => name !== 'envoy-config');
  expect(after.metadata?.annotations?.[SAFE_TO_EVICT_LOCAL_VOLUMES]).toBe(['b', 'a', 'envoy-config', 'c', ...added].join(','));
});

test('a mount path with trailing slashes is the same path without them', () => {
  const pod: Pod = loadPod('contour-main.yaml');
  const envoy = container(pod, 'envoy');
  for (const mount of envoy.volumeMounts ?? []) if (mount.mountPath === '/config') mount.mountPath = '/config///';
  const { after } = mutateOk(pod);
  expect(container(after, 'envoy').lifecycle?.preStop?.exec?.command?.[0]).toBe('/config/drainguard/envoy-shutdown');
});
