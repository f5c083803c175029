/**
 * The label `drainguard.io/protected: "true"` (the reporter's selector) and the drain record's path:
 * on every pod whose drain drainguard installs, and on no other; the drain writes its record to
 * Envoy's own terminationMessagePath.
 */
import { defaultConfig } from '../../../src/config';
import { mutate, PROTECTED_LABEL, type LifecycleHandler, type Pod } from '../../../src/mutate';
import { applyIndependently, configWith, container, drainArgs, loadPod, mutateOk } from './support';

function labelled(pod: Pod, value: string): Pod {
  const copy = JSON.parse(JSON.stringify(pod)) as Pod;
  copy.metadata = { ...(copy.metadata ?? {}), labels: { ...(copy.metadata?.labels ?? {}), [PROTECTED_LABEL]: value } };
  return copy;
}

function withEnvoyPreStop(pod: Pod, preStop: LifecycleHandler): Pod {
  container(pod, 'envoy').lifecycle = { preStop };
  return pod;
}

describe.each(['contour-main.yaml', 'envoy-gateway-envoy.yaml', 'bitnami-envoy.yaml', 'plain-envoy.yaml', 'contour-native-sidecar.yaml'])('%s', (fixture) => {
  test('the pod whose drain is installed is labelled, and the drain writes its record to the default terminationMessagePath', () => {
    const { result, after } = mutateOk(loadPod(fixture));
    expect(after.metadata?.labels?.[PROTECTED_LABEL]).toBe('true');
    expect(result.actions).toContain('protected-label');
    const envoy = after.spec.containers.find((c) => c.lifecycle?.preStop?.exec?.command?.[1] === 'drain');
    expect(envoy && drainArgs(envoy).flags.get('--termination-message-path')).toEqual([envoy?.terminationMessagePath || '/dev/termination-log']);
  });
});

test('a re-invocation of a labelled pod writes nothing; a label a later webhook removed comes back alone', () => {
  const { after } = mutateOk(loadPod('contour-main.yaml'));
  expect(mutate(after, defaultConfig())).toMatchObject({ status: 'unchanged', patch: [] });
  const unlabelled = JSON.parse(JSON.stringify(after)) as Pod;
  delete unlabelled.metadata?.labels?.[PROTECTED_LABEL];
  const again = mutate(unlabelled, defaultConfig());
  expect(again.patch).toEqual([{ op: 'add', path: '/metadata/labels/drainguard.io~1protected', value: 'true' }]);
});

test('a pod that comes labelled (a template copied from a protected pod) gets no label operation', () => {
  const { result } = mutateOk(labelled(loadPod('contour-main.yaml'), 'true'));
  expect(result.actions).not.toContain('protected-label');
  expect(result.patch.some((op) => op.path.startsWith('/metadata/labels'))).toBe(false);
});

test('another value of drainguard\'s label on a protected pod is set to "true"', () => {
  const { after } = mutateOk(labelled(loadPod('contour-main.yaml'), 'false'));
  expect(after.metadata?.labels?.[PROTECTED_LABEL]).toBe('true');
});

test('disarm mode installs the drain too: labelled', () => {
  const { result, after } = mutateOk(loadPod('contour-v1.23.0.yaml'), configWith((c) => (c.sidecarMode = 'disarm')));
  expect(result.actions).toEqual(expect.arrayContaining(['sidecar-disarmed', 'protected-label']));
  expect(after.metadata?.labels?.[PROTECTED_LABEL]).toBe('true');
});

describe('a user preStop drainguard cannot replace: no drain, the pod left whole, so no label', () => {
  const userHook = { exec: { command: ['/usr/local/bin/my-drain', '--wait'] } };

  test('none is added', () => {
    const result = mutate(withEnvoyPreStop(loadPod('contour-main.yaml'), userHook), defaultConfig());
    expect(result).toMatchObject({ status: 'skipped', reason: 'drain-not-installed', patch: [] });
  });

  test('one the pod carried is removed (the only change), with a warning saying why', () => {
    const pod = labelled(withEnvoyPreStop(loadPod('contour-main.yaml'), userHook), 'true');
    const result = mutate(pod, defaultConfig());
    expect(result).toMatchObject({ status: 'skipped', reason: 'drain-not-installed' });
    expect(result.patch).toEqual([{ op: 'remove', path: '/metadata/labels/drainguard.io~1protected' }]);
    const after = applyIndependently(pod, result.patch);
    expect(after.metadata?.labels?.[PROTECTED_LABEL]).toBeUndefined();
    expect(result.warnings).toContainEqual(`label ${PROTECTED_LABEL} removed: the drain was not installed, so this pod is not protected`);
    // Converges: the next pass changes nothing more.
    expect(mutate(after, defaultConfig()).patch).toEqual([]);
  });
});

describe("Envoy's own terminationMessagePath", () => {
  test('a custom one is where the record goes', () => {
    const pod = loadPod('contour-main.yaml');
    container(pod, 'envoy').terminationMessagePath = '/var/run/envoy/termination.log';
    const { after } = mutateOk(pod);
    expect(drainArgs(container(after, 'envoy')).flags.get('--termination-message-path')).toEqual(['/var/run/envoy/termination.log']);
  });

  test.each([
    ['relative', 'termination.log'],
    ['with a space', '/var/run/my termination.log'],
    ['with a .. segment', '/dev/../etc/passwd'],
  ])('one the drain contract refuses (%s) is not written: the drain is installed without a record, and the response says so', (_case, path) => {
    const pod = loadPod('contour-main.yaml');
    container(pod, 'envoy').terminationMessagePath = path;
    const { result, after } = mutateOk(pod);
    const envoy = container(after, 'envoy');
    expect(drainArgs(envoy).flags.has('--termination-message-path')).toBe(false);
    expect(result.warnings).toContainEqual(expect.stringMatching(/^container envoy: terminationMessagePath .* cannot take the drain record .* unreported$/));
    expect(after.metadata?.labels?.[PROTECTED_LABEL]).toBe('true');
  });

  test('a pod template read before API defaulting (no terminationMessagePath) gets the API default', () => {
    const pod = loadPod('contour-main.yaml');
    delete container(pod, 'envoy').terminationMessagePath;
    const { after } = mutateOk(pod);
    expect(drainArgs(container(after, 'envoy')).flags.get('--termination-message-path')).toEqual(['/dev/termination-log']);
    expect(applyIndependently(pod, mutate(pod, defaultConfig()).patch)).toEqual(after);
  });
});
