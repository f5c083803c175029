/** Envoy's preStop: which hooks are replaced, and how every drain argument is computed. */
import { defaultConfig } from '../../../src/config';
import { mutate, type LifecycleHandler, type Pod } from '../../../src/mutate';
import { container, drainArgs, hasContainer, loadPod, mutateOk, seconds, withAnnotations } from './support';

function contourWithEnvoyPreStop(preStop: LifecycleHandler): Pod {
  const pod = loadPod('contour-main.yaml');
  container(pod, 'envoy').lifecycle = { preStop };
  return pod;
}

describe('an unrecognised user preStop: no half protection, the pod is left whole', () => {
  const userHook = { exec: { command: ['/usr/local/bin/my-drain', '--wait'] } };
  const pod = contourWithEnvoyPreStop(userHook);
  const result = mutate(pod, defaultConfig());

  test('nothing is changed: no drain, no probes, no requests, no installer, the sidecar stays', () => {
    expect(result).toMatchObject({ status: 'skipped', reason: 'drain-not-installed', patch: [] });
  });

  test('the warning says which hook keeps the drain out, how to let it in, and that the pod is left whole', () => {
    expect(result.warnings).toEqual([
      'container envoy: its preStop hook (exec ["/usr/local/bin/my-drain","--wait"]) is not a recognised shutdown-manager hook ' +
        'and is kept (remove it from the pod template for drainguard to drain Envoy): the drain cannot be installed, so drainguard ' +
        'leaves the pod whole (no drain, probes, requests or installer; a shutdown-manager stays as it is)',
    ]);
    expect(result.status === 'skipped' && result.message).toBe(result.warnings[0]);
  });

  test('the same rule when the drainguard.io/envoy-container annotation forces a container with such a hook', () => {
    const forced = withAnnotations(contourWithEnvoyPreStop(userHook), { 'drainguard.io/envoy-container': 'envoy' });
    expect(mutate(forced, defaultConfig())).toMatchObject({ status: 'skipped', reason: 'drain-not-installed', patch: [] });
    const other = withAnnotations(loadPod('contour-main.yaml'), { 'drainguard.io/envoy-container': 'shutdown-manager' });
    // The sidecar's own preStop is `contour envoy shutdown`, which drainguard replaces: named Envoy, it is drained.
    expect(mutate(other, defaultConfig()).status).toBe('mutated');
  });

  test('a pod with no place for the program is left whole too', () => {
    const blocked = contourWithEnvoyPreStop({ httpGet: { path: '/shutdown', port: 8090 } });
    blocked.spec.containers.push({ name: 'drainguard-install', image: 'x' });
    const left = mutate(blocked, defaultConfig());
    expect(left).toMatchObject({ status: 'skipped', reason: 'drain-not-installed', patch: [] });
    expect(left.warnings[0]).toMatch(/^a container named drainguard-install already exists and is not an init container: the drain cannot be installed/);
  });
});

describe('recognised shutdown-manager hooks are replaced', () => {
  test.each<[string, LifecycleHandler]>([
    ['Contour httpGet /shutdown :8090', { httpGet: { path: '/shutdown', port: 8090, scheme: 'HTTP' } }],
    ['Envoy Gateway httpGet /shutdown/ready :19002', { httpGet: { path: '/shutdown/ready', port: 19002 } }],
    ['a named sidecar port', { httpGet: { path: '/shutdown', port: 'http-shutdown' } }],
    ['sh -c "sleep 30"', { exec: { command: ['/bin/sh', '-c', 'sleep 30'] } }],
    ['Contour\'s exec on Envoy', { exec: { command: ['/bin/contour', 'envoy', 'shutdown'] } }],
    ['a sleep action', { sleep: { seconds: 15 } }],
  ])('%s', (_label, preStop) => {
    const pod = contourWithEnvoyPreStop(preStop);
    const sidecar = container(pod, 'shutdown-manager');
    sidecar.ports = [{ containerPort: 8090, name: 'http-shutdown' }];
    const { after } = mutateOk(pod);
    expect(drainArgs(container(after, 'envoy')).subcommand).toBe('drain');
    expect(hasContainer(after, 'shutdown-manager')).toBe(false);
  });

  test.each<[string, LifecycleHandler]>([
    ['/shutdown on an unrelated port', { httpGet: { path: '/shutdown', port: 9000 } }],
    ['a shell script doing more than sleeping', { exec: { command: ['sh', '-c', 'sleep 5; curl -X POST localhost:9901/quitquitquit'] } }],
  ])('not: %s (the pod is left whole)', (_label, preStop) => {
    expect(mutate(contourWithEnvoyPreStop(preStop), defaultConfig())).toMatchObject({ status: 'skipped', reason: 'drain-not-installed', patch: [] });
  });
});

describe('drain arguments', () => {
  test('the exact command for Contour', () => {
    const { after } = mutateOk(loadPod('contour-main.yaml'));
    expect(container(after, 'envoy').lifecycle?.preStop).toEqual({
      exec: {
        command: [
          '/config/drainguard/envoy-shutdown', 'drain',
          '--admin', 'unix:/admin/admin.sock',
          '--deadline', '290s',
          '--drain-delay', '0s',
          '--min-drain', '0s',
          '--min-connections', '0',
          '--poll-interval', '5s',
          '--exclude-listener', '_8002$',
          '--exclude-listener', '_9001$',
          '--termination-message-path', '/dev/termination-log',
        ],
      },
    });
  });

  test('probe ports (named ones resolved) and metrics/stats-named ports are excluded, sorted and deduplicated', () => {
    const pod = loadPod('contour-main.yaml');
    const envoy = container(pod, 'envoy');
    envoy.ports = [...(envoy.ports ?? []), { containerPort: 9102, name: 'envoy-stats' }, { containerPort: 8003, name: 'health' }];
    envoy.readinessProbe = { httpGet: { path: '/ready', port: 'health' } };
    const { after } = mutateOk(pod);
    expect(drainArgs(container(after, 'envoy')).flags.get('--exclude-listener')).toEqual(['_8002$', '_8003$', '_9001$', '_9102$']);
  });

  test('a tiny grace period gets a floored deadline and a warning', () => {
    const pod = loadPod('contour-main.yaml');
    pod.spec.terminationGracePeriodSeconds = 8;
    const { result, after } = mutateOk(pod);
    const { flags } = drainArgs(container(after, 'envoy'));
    expect(seconds(flags.get('--deadline')?.[0])).toBe(5);
    expect(seconds(flags.get('--min-drain')?.[0])).toBeLessThanOrEqual(5);
    expect(result.warnings.some((w) => w.includes('terminationGracePeriodSeconds 8'))).toBe(true);
  });

  test('a zero grace period still gives a positive deadline', () => {
    const pod = loadPod('contour-main.yaml');
    pod.spec.terminationGracePeriodSeconds = 0;
    const { after } = mutateOk(pod);
    expect(seconds(drainArgs(container(after, 'envoy')).flags.get('--deadline')?.[0])).toBe(1);
  });

  test('drain delay + minimum drain longer than the deadline are shrunk to fit, with a warning', () => {
    const pod = withAnnotations(loadPod('contour-main.yaml'), { 'drainguard.io/drain-delay': '60s', 'drainguard.io/min-drain': '60s' });
    pod.spec.terminationGracePeriodSeconds = 90;
    const { result, after } = mutateOk(pod);
    const { flags } = drainArgs(container(after, 'envoy'));
    expect(seconds(flags.get('--deadline')?.[0])).toBe(80);
    expect(seconds(flags.get('--drain-delay')?.[0])).toBe(60);
    expect(seconds(flags.get('--min-drain')?.[0])).toBe(20);
    expect(result.warnings.some((w) => w.includes('do not fit'))).toBe(true);
  });
});

describe('admin address precedence', () => {
  test('Envoy\'s --config-yaml pipe beats the sidecar\'s default', () => {
    const pod = loadPod('contour-main.yaml');
    container(pod, 'envoy').args?.push('--config-yaml', 'admin:\n  address:\n    pipe:\n      path: /admin/envoy.sock\n');
    const { result, after } = mutateOk(pod);
    expect(drainArgs(container(after, 'envoy')).flags.get('--admin')).toEqual(['unix:/admin/envoy.sock']);
    expect(result.timeline.adminAddressSource).toBe('envoy-args');
  });

  test('the sidecar\'s --admin-address flag beats the /admin emptyDir', () => {
    const pod = loadPod('contour-main.yaml');
    container(pod, 'shutdown-manager').args = ['envoy', 'shutdown-manager', '--admin-address=/admin/other.sock'];
    const { result, after } = mutateOk(pod);
    expect(drainArgs(container(after, 'envoy')).flags.get('--admin')).toEqual(['unix:/admin/other.sock']);
    expect(result.timeline.adminAddressSource).toBe('sidecar-admin-address');
  });

  test('Envoy Gateway\'s sidecar default applies when Envoy\'s arguments name no admin', () => {
    const pod = loadPod('envoy-gateway-envoy.yaml');
    container(pod, 'envoy').args = ['--config-yaml', 'node: {id: x}\n'];
    const { result, after } = mutateOk(pod);
    expect(drainArgs(container(after, 'envoy')).flags.get('--admin')).toEqual(['http://127.0.0.1:19000']);
    expect(result.timeline.adminAddressSource).toBe('envoy-gateway-default');
  });

  test('no sidecar: a unix socket in an emptyDir mounted at /admin', () => {
    const pod = loadPod('contour-main.yaml');
    pod.spec.containers = pod.spec.containers.filter((c) => c.name !== 'shutdown-manager');
    const { result, after } = mutateOk(pod);
    expect(drainArgs(container(after, 'envoy')).flags.get('--admin')).toEqual(['unix:/admin/admin.sock']);
    expect(result.timeline.adminAddressSource).toBe('admin-volume');
  });

  test('an admin bound to a non-loopback address in --config-yaml is ignored with a warning', () => {
    const pod = loadPod('plain-envoy.yaml');
    container(pod, 'proxy').args = ['--config-yaml', 'admin: {address: {socket_address: {address: 10.1.2.3, port_value: 9901}}}'];
    const { result, after } = mutateOk(pod);
    expect(drainArgs(container(after, 'proxy')).flags.get('--admin')).toEqual(['http://127.0.0.1:9901']);
    expect(result.warnings.some((w) => w.includes('10.1.2.3'))).toBe(true);
  });
});

describe('bootstrap volume from the -c / --config-path forms', () => {
  test.each([
    [['-c', '/config/envoy.json']],
    [['-c /config/envoy.json']],
    [['--config-path', '/config/envoy.json']],
    [['--config-path=/config/envoy.json']],
    [['--service-cluster $(CONTOUR_NAMESPACE)', '--config-path /config/envoy.json']],
  ])('%j installs into envoy-config', (args) => {
    const pod = loadPod('contour-main.yaml');
    container(pod, 'envoy').args = args;
    const { after } = mutateOk(pod);
    expect(container(after, 'drainguard-install').volumeMounts).toEqual([{ name: 'envoy-config', mountPath: '/config' }]);
  });

  test('a config file in a Secret volume falls back to drainguard\'s own volume', () => {
    const pod = loadPod('contour-main.yaml');
    container(pod, 'envoy').args = ['-c', '/certs/envoy.json'];
    const { after } = mutateOk(pod);
    expect(container(after, 'drainguard-install').volumeMounts?.[0]?.name).toBe('drainguard');
  });

  test('the drain is not installed when the fallback volume name is taken by a ConfigMap: the pod is left whole', () => {
    const pod = loadPod('plain-envoy.yaml');
    pod.spec.volumes?.push({ name: 'drainguard', configMap: { name: 'x' } });
    const result = mutate(pod, defaultConfig());
    expect(result).toMatchObject({ status: 'skipped', reason: 'drain-not-installed', patch: [] });
    expect(result.warnings).toEqual([expect.stringMatching(/^volume drainguard already exists and is not an emptyDir: the drain cannot be installed/)]);
  });
});
