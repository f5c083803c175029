/** What drainguard does to each upstream Contour DaemonSet's pod template, at the mutate level. */
import { defaultConfig } from '../../../src/config';
import { mutate, validatePod } from '../../../src/mutate';
import { SAFE_TO_EVICT_LOCAL_VOLUMES } from '../../../src/mutate/parse';
import { compareQuantities } from '../../../src/k8s/quantity';
import { applyIndependently, container, drainArgs, hasContainer, loadPod, mutateOk, seconds } from './support';

const CONTOUR_FIXTURES = ['contour-main.yaml', 'contour-v1.23.0.yaml', 'contour-v1.33.6.yaml'];

describe.each(CONTOUR_FIXTURES)('Contour %s', (fixture) => {
  const pod = loadPod(fixture);
  const { result, after } = mutateOk(pod);
  const envoy = container(after, 'envoy');
  const installer = container(after, 'drainguard-install');

  test('the shutdown-manager sidecar is gone, its volumes stay', () => {
    expect(hasContainer(pod, 'shutdown-manager')).toBe(true);
    expect(hasContainer(after, 'shutdown-manager')).toBe(false);
    expect(after.spec.volumes?.map((v) => v.name)).toEqual(pod.spec.volumes?.map((v) => v.name));
    expect(result.actions).toContain('sidecar-removed');
  });

  test('Envoy preStop runs the installed envoy-shutdown drain from /config with the Contour admin socket', () => {
    const { program, subcommand, flags } = drainArgs(envoy);
    expect(envoy.lifecycle?.preStop?.httpGet).toBeUndefined();
    expect(program).toBe('/config/drainguard/envoy-shutdown');
    expect(subcommand).toBe('drain');
    expect(flags.get('--admin')).toEqual(['unix:/admin/admin.sock']);
    const deadline = seconds(flags.get('--deadline')?.[0]);
    expect(deadline).toBeLessThan(300);
    expect(deadline).toBe(290);
    // The stats and health listener, and the read-only admin listener of the socket releases.
    expect(flags.get('--exclude-listener')).toEqual(['_8002$', '_9001$']);
    // Contour's own defaults from v1.22 on: no --check-delay, polls every 5s.
    expect(seconds(flags.get('--min-drain')?.[0])).toBe(0);
    expect(seconds(flags.get('--poll-interval')?.[0])).toBe(5);
    expect(flags.get('--min-connections')).toEqual(['0']);
  });

  test('an init container mounts envoy-config writable at /config and installs the program into it', () => {
    const initNames = after.spec.initContainers?.map((c) => c.name);
    expect(initNames?.[initNames.length - 1]).toBe('drainguard-install');
    expect(installer.volumeMounts).toEqual([{ name: 'envoy-config', mountPath: '/config' }]);
    expect(installer.command).toEqual([defaultConfig().installer.programPath, 'install', '--to', '/config/drainguard']);
    expect(installer.securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    // Envoy has no runAsUser of its own: the installer inherits the pod's 65534.
    expect(installer.securityContext?.runAsUser).toBeUndefined();
  });

  test('Envoy gets a liveness probe and a startup probe on GET /ready :8002', () => {
    const { liveness } = defaultConfig();
    expect(envoy.livenessProbe).toMatchObject({
      httpGet: { path: '/ready', port: 8002 },
      periodSeconds: liveness.periodSeconds,
      failureThreshold: liveness.failureThreshold,
      terminationGracePeriodSeconds: liveness.terminationGracePeriodSeconds,
    });
    expect(envoy.startupProbe).toMatchObject({ httpGet: { path: '/ready', port: 8002 }, failureThreshold: liveness.startupFailureThreshold });
    expect(result.timeline).toMatchObject({ livenessSource: 'drainguard', livenessBudgetSeconds: liveness.periodSeconds * liveness.failureThreshold });
  });

  test('cpu and memory requests on every container drainguard owns or touches', () => {
    for (const touched of [envoy, installer]) {
      expect(touched.resources?.requests?.cpu).toBeDefined();
      expect(touched.resources?.requests?.memory).toBeDefined();
    }
    expect(envoy.resources?.requests).toEqual(defaultConfig().requests.envoy);
  });

  test('status annotation and safe-to-evict for envoy-admin and envoy-config', () => {
    const annotations = after.metadata?.annotations ?? {};
    expect(JSON.parse(annotations['drainguard.io/status'] ?? '{}')).toMatchObject({ version: expect.any(String), actions: expect.any(Array) });
    expect(annotations[SAFE_TO_EVICT_LOCAL_VOLUMES]?.split(',').sort()).toEqual(['envoy-admin', 'envoy-config']);
  });

  test('the result passes pod validation and the other containers are untouched', () => {
    expect(validatePod(after)).toEqual([]);
    expect(container(after, 'envoy-initconfig')).toEqual(container(pod, 'envoy-initconfig'));
    for (const [request, limit] of Object.entries(envoy.resources?.requests ?? {})) {
      const max = envoy.resources?.limits?.[request];
      if (max !== undefined) expect(compareQuantities(limit, max)).toBeLessThanOrEqual(0);
    }
  });

  test('timeline', () => {
    expect(result.timeline).toMatchObject({
      gracePeriodSeconds: 300,
      gracePeriodSource: 'pod',
      deadlineSeconds: 290,
      adminAddress: 'unix:/admin/admin.sock',
      adminAddressSource: 'admin-volume',
      drainInstalled: true,
    });
  });

  test('idempotent: the result is unchanged, and without the status only the status is rewritten', () => {
    const again = mutate(after, defaultConfig());
    expect(again.status).toBe('unchanged');
    expect(again.patch).toEqual([]);
    if (again.status !== 'unchanged') throw new Error('unreachable');
    // Same plan; the admin address, the drain settings and the listeners are now read back from
    // drainguard's own hook (the sidecar is gone), so only where they came from differs.
    const source = { adminAddressSource: 'x', adminAddressReason: 'x', drainSources: 'x', excludedListeners: 'x', replaces: 'x', droppedFlags: 'x' } as const;
    expect({ ...again.timeline, ...source }).toEqual({ ...result.timeline, ...source });
    expect(again.timeline.excludedListeners?.map((listener) => listener.port)).toEqual(result.timeline.excludedListeners?.map((listener) => listener.port));
    expect(again.timeline.adminAddressSource).toBe('drainguard-hook');
    expect(Object.values(again.timeline.drainSources ?? {}).map((source) => source.origin)).toEqual([
      'grace-period',
      'drainguard-hook',
      'drainguard-hook',
      'drainguard-hook',
      'drainguard-hook',
    ]);

    const withoutStatus = JSON.parse(JSON.stringify(after)) as typeof after;
    delete withoutStatus.metadata?.annotations?.['drainguard.io/status'];
    const third = mutate(withoutStatus, defaultConfig());
    expect(third.status).toBe('mutated');
    expect(third.patch).toEqual([{ op: 'add', path: '/metadata/annotations/drainguard.io~1status', value: expect.any(String) }]);
    expect(applyIndependently(withoutStatus, third.patch).spec).toEqual(after.spec);
  });
});

test('Contour v1.23.0: the sidecar liveness probe goes with the sidecar (problem 1)', () => {
  const pod = loadPod('contour-v1.23.0.yaml');
  expect(container(pod, 'shutdown-manager').livenessProbe).toBeDefined();
  const { after } = mutateOk(pod);
  expect(after.spec.containers.map((c) => c.name)).toEqual(['envoy']);
});

test('Contour pod template without metadata: the label and the annotations are created with their parent', () => {
  const pod = loadPod('contour-main.yaml');
  delete pod.metadata;
  const { result, after } = mutateOk(pod);
  expect(result.patch.filter((op) => op.path.startsWith('/metadata'))).toEqual([
    { op: 'add', path: '/metadata', value: { labels: { 'drainguard.io/protected': 'true' } } },
    { op: 'add', path: '/metadata/annotations', value: { [SAFE_TO_EVICT_LOCAL_VOLUMES]: 'envoy-admin,envoy-config' } },
    { op: 'add', path: '/metadata/annotations/drainguard.io~1status', value: expect.any(String) },
  ]);
  expect(after.metadata?.annotations?.['drainguard.io/status']).toBeDefined();
  for (const op of result.patch) expect(op.path).toMatch(/^\/(metadata|spec)(\/|$)/);
});

describe('the bootstrap emptyDir holds the program unless its sizeLimit leaves no room', () => {
  test.each([
    ['memory-backed', { medium: 'Memory' }],
    ['size-limited with room to spare', { sizeLimit: '64Mi' }],
    ['size-limited to exactly the room the program needs', { sizeLimit: '4Mi' }],
  ])('%s: installed into the bootstrap volume', (_label, emptyDir) => {
    const pod = loadPod('contour-main.yaml');
    const config = pod.spec.volumes?.find((v) => v.name === 'envoy-config');
    if (config === undefined) throw new Error('fixture without envoy-config');
    config.emptyDir = emptyDir;
    const { after } = mutateOk(pod);
    expect(after.spec.volumes?.map((v) => v.name)).not.toContain(defaultConfig().installer.volumeName);
    expect(container(after, 'drainguard-install').volumeMounts).toEqual([{ name: 'envoy-config', mountPath: '/config' }]);
    expect(drainArgs(container(after, 'envoy')).program).toBe('/config/drainguard/envoy-shutdown');
  });

  test.each([
    ['size-limited below the room the program needs (exceeding it gets the pod evicted)', { sizeLimit: '1Mi' }],
    ['size-limited by a quantity drainguard cannot read', { sizeLimit: 'lots' }],
  ])('%s: drainguard\'s own volume instead', (_label, emptyDir) => {
    const pod = loadPod('contour-main.yaml');
    const config = pod.spec.volumes?.find((v) => v.name === 'envoy-config');
    if (config === undefined) throw new Error('fixture without envoy-config');
    config.emptyDir = emptyDir;
    const { after } = mutateOk(pod);
    const { volumeName, mountPath } = defaultConfig().installer;
    expect(after.spec.volumes).toContainEqual({ name: volumeName, emptyDir: {} });
    expect(container(after, 'drainguard-install').volumeMounts).toEqual([{ name: volumeName, mountPath: mountPath }]);
    expect(drainArgs(container(after, 'envoy')).program).toBe(`${mountPath}/drainguard/envoy-shutdown`);
    // The bootstrap volume itself is left exactly as it was.
    expect(after.spec.volumes?.find((v) => v.name === 'envoy-config')).toEqual({ name: 'envoy-config', emptyDir });
  });
});
