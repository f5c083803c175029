/** Bitnami, Envoy Gateway, plain Envoy, native sidecar and a non-Envoy pod. */
import { defaultConfig } from '../../../src/config';
import { mutate, validatePod } from '../../../src/mutate';
import { SAFE_TO_EVICT_LOCAL_VOLUMES } from '../../../src/mutate/parse';
import { container, drainArgs, hasContainer, loadPod, mutateOk, seconds } from './support';

describe('Bitnami chart (one empty-dir volume with subPaths)', () => {
  const pod = loadPod('bitnami-envoy.yaml');
  const { result, after } = mutateOk(pod);
  const envoy = container(after, 'envoy');
  const installer = container(after, 'drainguard-install');

  test('the installer mounts the same empty-dir volume with the same subPath at /config, writable', () => {
    expect(installer.volumeMounts).toEqual([{ name: 'empty-dir', mountPath: '/config', subPath: 'app-conf-dir' }]);
    expect(installer.command?.slice(-2)).toEqual(['--to', '/config/drainguard']);
  });

  test('the installer runs as Envoy\'s container user', () => {
    expect(installer.securityContext?.runAsUser).toBe(1001);
  });

  test('the shutdown-manager (declared port 8090, tcpSocket liveness) is removed and the httpGet hook replaced', () => {
    expect(hasContainer(after, 'shutdown-manager')).toBe(false);
    const { program, flags } = drainArgs(envoy);
    expect(program).toBe('/config/drainguard/envoy-shutdown');
    expect(flags.get('--admin')).toEqual(['unix:/admin/admin.sock']);
    // Contour's stats and health listener, and its read-only admin listener (the socket releases).
    expect(flags.get('--exclude-listener')).toEqual(['_8002$', '_9001$']);
  });

  test('Envoy\'s own tcpSocket liveness probe is kept without a warning; its budget is 20 s × 6, the initial delay aside', () => {
    expect(envoy.livenessProbe).toEqual(container(pod, 'envoy').livenessProbe);
    expect(envoy.startupProbe).toBeUndefined();
    expect(result.warnings.filter((w) => w.includes('liveness'))).toEqual([]);
    expect(result.timeline).toMatchObject({ livenessSource: 'user', livenessBudgetSeconds: 120 });
  });

  test('user requests are kept; the single emptyDir is listed as safe to evict', () => {
    expect(envoy.resources).toEqual(container(pod, 'envoy').resources);
    expect(after.metadata?.annotations?.[SAFE_TO_EVICT_LOCAL_VOLUMES]).toBe('empty-dir');
    expect(validatePod(after)).toEqual([]);
  });
});

describe('Bitnami without the shutdown manager: Envoy preStop `sh -c "sleep 300; kill 1"`', () => {
  test('the sleep hook is recognised and replaced by the drain', () => {
    const pod = loadPod('bitnami-envoy.yaml');
    pod.spec.containers = pod.spec.containers.filter((c) => c.name !== 'shutdown-manager');
    container(pod, 'envoy').lifecycle = { preStop: { exec: { command: ['sh', '-c', 'sleep 300; kill 1'] } } };
    const { after } = mutateOk(pod);
    expect(drainArgs(container(after, 'envoy')).subcommand).toBe('drain');
  });
});

describe('Envoy Gateway (inline --config-yaml bootstrap, admin on TCP 127.0.0.1:19000)', () => {
  const pod = loadPod('envoy-gateway-envoy.yaml');
  const { result, after } = mutateOk(pod);
  const envoy = container(after, 'envoy');

  test('the admin address comes from Envoy\'s own --config-yaml', () => {
    expect(drainArgs(envoy).flags.get('--admin')).toEqual(['http://127.0.0.1:19000']);
    expect(result.timeline.adminAddressSource).toBe('envoy-args');
  });

  test('the httpGet /shutdown/ready :19002 hook is replaced; the deadline is the shutdown manager\'s default drain timeout (60 s from v1.2)', () => {
    expect(envoy.lifecycle?.preStop?.httpGet).toBeUndefined();
    expect(seconds(drainArgs(envoy).flags.get('--deadline')?.[0])).toBe(60);
    expect(seconds(drainArgs(envoy).flags.get('--min-drain')?.[0])).toBe(10);
  });

  test('no -c file and no writable volume: a dedicated emptyDir, read-only in Envoy, writable in the installer', () => {
    const { volumeName, mountPath } = defaultConfig().installer;
    expect(after.spec.volumes).toContainEqual({ name: volumeName, emptyDir: {} });
    expect(envoy.volumeMounts).toContainEqual({ name: volumeName, mountPath: mountPath, readOnly: true });
    const installer = container(after, 'drainguard-install');
    expect(installer.volumeMounts).toEqual([{ name: volumeName, mountPath: mountPath }]);
    expect(drainArgs(envoy).program).toBe(`${mountPath}/drainguard/envoy-shutdown`);
    expect(installer.securityContext).toMatchObject({ runAsUser: 65532, runAsGroup: 65532 });
  });

  test('the `envoy-gateway envoy shutdown-manager` sidecar is removed; Envoy\'s own short liveness probe is kept, no warning', () => {
    expect(after.spec.containers.map((c) => c.name)).toEqual(['envoy']);
    expect(envoy.livenessProbe).toEqual(container(pod, 'envoy').livenessProbe);
    expect(result.warnings.filter((w) => w.includes('liveness'))).toEqual([]);
  });

  test('the stats port 19001 and the readiness listener 19003 are excluded from the drain, the admin port is not listed', () => {
    expect(drainArgs(envoy).flags.get('--exclude-listener')).toEqual(['_19001$', '_19003$']);
  });

  test('only drainguard\'s own emptyDir is safe to evict (the others are a Secret and a ConfigMap)', () => {
    expect(after.metadata?.annotations?.[SAFE_TO_EVICT_LOCAL_VOLUMES]).toBe('drainguard');
    expect(after.metadata?.annotations?.['prometheus.io/port']).toBe('19001');
  });
});

describe('plain Envoy (no sidecar, ConfigMap bootstrap, no probes, no grace period, detected by image)', () => {
  const pod = loadPod('plain-envoy.yaml');
  const { result, after } = mutateOk(pod);
  const envoy = container(after, 'proxy');

  test('detected through the image repository behind a mirror with a port, tag and digest', () => {
    expect(result.actions).toContain('prestop');
  });

  test('the ConfigMap cannot be written: the fallback volume is used', () => {
    expect(container(after, 'drainguard-install').volumeMounts?.[0]?.name).toBe('drainguard');
    expect(envoy.volumeMounts).toContainEqual({ name: 'bootstrap', mountPath: '/etc/envoy', readOnly: true });
  });

  test('the Kubernetes default grace period (30 s) drives the deadline', () => {
    expect(result.timeline).toMatchObject({ gracePeriodSeconds: 30, gracePeriodSource: 'kubernetes-default', deadlineSeconds: 20 });
    expect(seconds(drainArgs(envoy).flags.get('--deadline')?.[0])).toBe(20);
  });

  test('no readiness probe and an admin bind that Envoy\'s arguments do not show: no liveness probe, with a warning', () => {
    // A probe on a loopback-only admin would fail forever and restart Envoy in a loop, so an unknown
    // bind is never guessed to be reachable.
    expect(envoy.livenessProbe).toBeUndefined();
    expect(result.timeline).toMatchObject({ livenessBudgetSeconds: null, livenessSource: 'none' });
    expect(result.warnings.some((w) => w.includes('no liveness probe added') && w.includes('readinessProbe'))).toBe(true);
    expect(drainArgs(envoy).flags.get('--admin')).toEqual(['http://127.0.0.1:9901']);
    expect(result.timeline.adminAddressSource).toBe('default');
  });

  test('requests filled, nothing to remove, pod valid', () => {
    expect(envoy.resources?.requests).toEqual(defaultConfig().requests.envoy);
    expect(result.actions).not.toContain('sidecar-removed');
    expect(validatePod(after)).toEqual([]);
  });
});

describe('native sidecar (shutdown-manager as an init container with restartPolicy Always)', () => {
  const pod = loadPod('contour-native-sidecar.yaml');

  test('remove mode deletes the init container; the installer stays last', () => {
    const { after } = mutateOk(pod);
    expect(after.spec.initContainers?.map((c) => c.name)).toEqual(['envoy-initconfig', 'drainguard-install']);
    expect(drainArgs(container(after, 'envoy')).flags.get('--admin')).toEqual(['unix:/admin/admin.sock']);
  });

  test('disarm mode strips its preStop and keeps it with requests', () => {
    const config = defaultConfig();
    config.sidecarMode = 'disarm';
    const { result, after } = mutateOk(pod, config);
    const sidecar = container(after, 'shutdown-manager');
    expect(sidecar.restartPolicy).toBe('Always');
    expect(sidecar.lifecycle?.preStop).toBeUndefined();
    expect(sidecar.resources?.requests).toEqual(config.requests.sidecar);
    expect(result.actions).toContain('sidecar-disarmed');
  });
});

describe('a non-Envoy pod', () => {
  test('is skipped with reason not-envoy and no patch', () => {
    const pod = loadPod('not-envoy.yaml');
    expect(mutate(pod, defaultConfig())).toMatchObject({ status: 'skipped', reason: 'not-envoy', patch: [], warnings: [] });
    expect(mutate(pod, defaultConfig())).toMatchObject({ message: expect.stringMatching(/^no container running Envoy: looked for a container whose command/) });
  });

  test('a pod without containers is skipped with reason no-containers', () => {
    const result = mutate({ spec: { containers: [] } }, defaultConfig());
    expect(result).toMatchObject({ status: 'skipped', reason: 'no-containers' });
  });
});
