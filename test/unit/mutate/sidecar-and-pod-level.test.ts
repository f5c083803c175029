/** Sidecar disarm, the grace period floor, safe-to-evict merging and the status annotation. */
import { defaultConfig } from '../../../src/config';
import { mutate } from '../../../src/mutate';
import { SAFE_TO_EVICT_LOCAL_VOLUMES } from '../../../src/mutate/parse';
import { VERSION } from '../../../src/version';
import { configWith, container, drainArgs, loadPod, mutateOk, seconds, withAnnotations } from './support';

describe('disarm mode (Contour v1.23.0: sidecar with preStop and liveness probe)', () => {
  const pod = loadPod('contour-v1.23.0.yaml');
  const { result, after } = mutateOk(pod, configWith((c) => (c.sidecarMode = 'disarm')));
  const sidecar = container(after, 'shutdown-manager');

  test('keeps the sidecar but strips its preStop and liveness probe; a lifecycle left empty goes whole', () => {
    expect(container(pod, 'shutdown-manager').lifecycle).toHaveProperty('preStop');
    expect(sidecar).not.toHaveProperty('lifecycle');
    expect(result.patch).toContainEqual({ op: 'remove', path: '/spec/containers/0/lifecycle' });
    expect(sidecar.livenessProbe).toBeUndefined();
    expect(sidecar.command).toEqual(container(pod, 'shutdown-manager').command);
    expect(result.actions).toContain('sidecar-disarmed');
    expect(result.actions).not.toContain('sidecar-removed');
  });

  test('gives the sidecar requests; Envoy still gets the drain', () => {
    expect(sidecar.resources?.requests).toEqual(defaultConfig().requests.sidecar);
    expect(drainArgs(container(after, 'envoy')).flags.get('--admin')).toEqual(['unix:/admin/admin.sock']);
  });

  test('idempotent', () => {
    expect(mutate(after, configWith((c) => (c.sidecarMode = 'disarm'))).status).toBe('unchanged');
  });

  test('a lifecycle with more than the preStop keeps the rest', () => {
    const withPostStart = loadPod('contour-v1.23.0.yaml');
    const manager = container(withPostStart, 'shutdown-manager');
    manager.lifecycle = { ...manager.lifecycle, postStart: { exec: { command: ['/bin/true'] } } };
    const disarmed = container(mutateOk(withPostStart, configWith((c) => (c.sidecarMode = 'disarm'))).after, 'shutdown-manager');
    expect(disarmed.lifecycle).toEqual({ postStart: { exec: { command: ['/bin/true'] } } });
  });
});

describe('grace period floor (opt-in)', () => {
  const floor = configWith((c) => {
    c.gracePeriodFloor = { enabled: true, minimumSeconds: 120 };
  });

  test('off by default: a short grace period is left alone', () => {
    const pod = loadPod('plain-envoy.yaml');
    const { result, after } = mutateOk(pod);
    expect(after.spec.terminationGracePeriodSeconds).toBeUndefined();
    expect(result.actions).not.toContain('grace-period');
  });

  test('raises an unset grace period to the minimum and plans the drain with it', () => {
    const { result, after } = mutateOk(loadPod('plain-envoy.yaml'), floor);
    expect(after.spec.terminationGracePeriodSeconds).toBe(120);
    expect(result.timeline).toMatchObject({ gracePeriodSeconds: 120, gracePeriodSource: 'floor', deadlineSeconds: 110 });
    expect(seconds(drainArgs(container(after, 'proxy')).flags.get('--deadline')?.[0])).toBe(110);
    expect(result.actions).toContain('grace-period');
  });

  test('never lowers a longer grace period', () => {
    const { after } = mutateOk(loadPod('contour-main.yaml'), floor);
    expect(after.spec.terminationGracePeriodSeconds).toBe(300);
  });
});

describe('safe-to-evict-local-volumes', () => {
  test('merged with names already there: order kept, duplicates dropped, spaces trimmed', () => {
    const pod = withAnnotations(loadPod('contour-main.yaml'), { [SAFE_TO_EVICT_LOCAL_VOLUMES]: 'scratch, envoy-config' });
    const { result, after } = mutateOk(pod);
    expect(after.metadata?.annotations?.[SAFE_TO_EVICT_LOCAL_VOLUMES]).toBe('scratch,envoy-config,envoy-admin');
    expect(result.patch).toContainEqual({
      op: 'replace',
      path: '/metadata/annotations/cluster-autoscaler.kubernetes.io~1safe-to-evict-local-volumes',
      value: 'scratch,envoy-config,envoy-admin',
    });
  });

  test('a pod left whole (no drain, so no drainguard volume) gets no annotation either', () => {
    const pod = loadPod('plain-envoy.yaml');
    container(pod, 'proxy').lifecycle = { preStop: { exec: { command: ['/custom'] } } };
    expect(mutate(pod, defaultConfig())).toMatchObject({ status: 'skipped', reason: 'drain-not-installed', patch: [] });
  });
});

describe('status annotation', () => {
  test('records the version and the actions as compact JSON', () => {
    const { result, after } = mutateOk(loadPod('contour-main.yaml'));
    const status = after.metadata?.annotations?.['drainguard.io/status'];
    expect(status).toBe(JSON.stringify({ version: VERSION, actions: result.actions.filter((a) => a !== 'status') }));
  });

  test('a status from another version is replaced after re-running every (idempotent) mutation', () => {
    const { after } = mutateOk(loadPod('contour-main.yaml'));
    const old = withAnnotations(after, { 'drainguard.io/status': '{"version":"0.0.1","actions":[]}' });
    const result = mutate(old, defaultConfig());
    expect(result.status).toBe('mutated');
    expect(result.patch).toEqual([
      { op: 'replace', path: '/metadata/annotations/drainguard.io~1status', value: JSON.stringify({ version: VERSION, actions: [] }) },
    ]);
  });

  test('unchanged pods still carry their timeline and annotation warnings', () => {
    const { after } = mutateOk(withAnnotations(loadPod('bitnami-envoy.yaml'), { 'drainguard.io/typo': 'x' }));
    const again = mutate(after, defaultConfig());
    expect(again.status).toBe('unchanged');
    if (again.status !== 'unchanged') return;
    expect(again.timeline).toMatchObject({ deadlineSeconds: 290, livenessBudgetSeconds: 120, livenessSource: 'user' });
    expect(again.warnings.some((w) => w.includes('drainguard.io/typo'))).toBe(true);
  });
});

describe('installer upgrades', () => {
  test('an installer from another drainguard version is replaced in place, not duplicated', () => {
    const { after } = mutateOk(loadPod('contour-main.yaml'));
    const old = withAnnotations(after, { 'drainguard.io/status': '{"version":"0.0.1","actions":[]}' });
    const installerIndex = old.spec.initContainers?.findIndex((c) => c.name === 'drainguard-install') ?? -1;
    const installer = old.spec.initContainers?.[installerIndex];
    if (installer === undefined) throw new Error('no installer');
    installer.image = 'ghcr.io/drainguard/drainguard:0.0.1';
    const { result, after: upgraded } = mutateOk(old);
    expect(result.patch).toContainEqual({ op: 'replace', path: `/spec/initContainers/${installerIndex}`, value: expect.objectContaining({ image: defaultConfig().installer.image }) });
    expect(upgraded.spec.initContainers?.filter((c) => c.name === 'drainguard-install')).toHaveLength(1);
  });
});
