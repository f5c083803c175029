/** Per-pod annotation overrides: each invalid value denies, naming annotation, value and form. */
import { defaultConfig } from '../../../src/config';
import { mutate } from '../../../src/mutate';
import { container, drainArgs, hasContainer, loadPod, mutateOk, withAnnotations } from './support';

const contour = loadPod('contour-main.yaml');

describe('invalid overrides deny the pod', () => {
  test.each([
    ['drainguard.io/envoy-cpu-request', 'lots', 'quantity'],
    ['drainguard.io/envoy-cpu-request', '0', 'positive'],
    ['drainguard.io/envoy-memory-request', '128MB', 'quantity'],
    ['drainguard.io/envoy-memory-request', '-1Gi', 'positive'],
    ['drainguard.io/drain-delay', '5', '"s" suffix'],
    ['drainguard.io/drain-delay', '3601s', '3600s'],
    ['drainguard.io/min-drain', '1m', '"s" suffix'],
    ['drainguard.io/min-drain', '05s', '"s" suffix'],
    ['drainguard.io/min-connections', '-1', 'non-negative'],
    ['drainguard.io/min-connections', '1e3', 'whole number'],
    ['drainguard.io/min-connections', '1000001', '1000000'],
    ['drainguard.io/admin-address', 'http://10.0.0.1:9901', 'http://127.0.0.1:PORT'],
    ['drainguard.io/admin-address', 'http://evil.example.com:9901', 'http://localhost:PORT'],
    ['drainguard.io/admin-address', 'unix:/admin/../etc/passwd', 'no ".." segment'],
    ['drainguard.io/admin-address', 'unix:/admin/admin.sock; rm -rf /', 'unix:/absolute/path'],
    ['drainguard.io/admin-address', 'unix:relative.sock', 'unix:/absolute/path'],
    ['drainguard.io/admin-address', 'http://127.0.0.1:65536', 'http://127.0.0.1:PORT'],
    ['drainguard.io/admin-address', 'http://127.0.0.09:9901', 'any 127.x.y.z in plain decimal'],
    ['drainguard.io/admin-address', 'http://127.0.0.010:9901', 'any 127.x.y.z in plain decimal'],
    ['drainguard.io/admin-address', 'http://127.1:9901', 'any 127.x.y.z in plain decimal'],
    ['drainguard.io/admin-address', 'http://localhost.:9901', 'http://localhost:PORT'],
    ['drainguard.io/admin-address', 'http://[::ffff:127.0.0.1]:9901', 'http://[::1]:PORT'],
    ['drainguard.io/admin-address', 'unix:/admin/./admin.sock', 'no "." segment'],
    ['drainguard.io/drain-delay', '5000ms', '"s" suffix'],
    ['drainguard.io/sidecar-mode', 'delete', '"remove" or "disarm"'],
    ['drainguard.io/envoy-container', 'Envoy_Main', "pod's containers"],
    ['drainguard.io/envoy-container', 'missing', "pod's containers"],
    ['drainguard.io/inject', 'yes', '"enabled" or "disabled"'],
  ])('%s: %j', (key, value, form) => {
    const result = mutate(withAnnotations(contour, { [key]: value }), defaultConfig());
    expect(result.status).toBe('denied');
    if (result.status !== 'denied') return;
    expect(result.patch).toEqual([]);
    expect(result.message).toContain(key);
    expect(result.message).toContain(JSON.stringify(value));
    expect(result.message).toContain(form);
  });

  test('a unix socket path longer than sun_path holds (107 bytes) is denied', () => {
    const result = mutate(withAnnotations(contour, { 'drainguard.io/admin-address': `unix:/${'a'.repeat(107)}` }), defaultConfig());
    expect(result.status === 'denied' && result.message).toMatch(/drainguard\.io\/admin-address.*at most 107 bytes/);
    expect(mutateOk(withAnnotations(contour, { 'drainguard.io/admin-address': `unix:/${'a'.repeat(106)}` })).result.timeline.adminAddressSource).toBe('annotation');
  });

  test('several invalid values are all reported', () => {
    const result = mutate(withAnnotations(contour, { 'drainguard.io/drain-delay': 'x', 'drainguard.io/min-drain': 'y' }), defaultConfig());
    expect(result.status === 'denied' && result.message).toMatch(/drain-delay.*min-drain/);
  });

  test('an invalid inject value does not hide the other invalid annotations', () => {
    const pod = withAnnotations(contour, { 'drainguard.io/inject': 'yes', 'drainguard.io/drain-delay': 'x', 'drainguard.io/sidecar-mode': 'delete' });
    const result = mutate(pod, defaultConfig());
    expect(result.status === 'denied' && result.message).toMatch(/drainguard\.io\/inject.*drainguard\.io\/drain-delay.*drainguard\.io\/sidecar-mode/);
  });

  test('an envoy-container naming no container does not hide the other invalid annotations', () => {
    const pod = withAnnotations(contour, { 'drainguard.io/envoy-container': 'missing', 'drainguard.io/min-connections': '-1' });
    const result = mutate(pod, defaultConfig());
    expect(result.status === 'denied' && result.message).toMatch(/drainguard\.io\/min-connections.*drainguard\.io\/envoy-container: invalid value "missing"/);
  });

  test('an envoy-container that is not a DNS label is named once, with the accepted form', () => {
    const result = mutate(withAnnotations(contour, { 'drainguard.io/envoy-container': 'Envoy_Main' }), defaultConfig());
    expect(result.status === 'denied' && result.message.match(/drainguard\.io\/envoy-container/g)).toHaveLength(1);
  });

  test('an invalid inject value on a pod without Envoy is denied, naming the other invalid annotations too', () => {
    const pod = withAnnotations(loadPod('plain-envoy.yaml'), { 'drainguard.io/inject': 'on', 'drainguard.io/min-drain': '1m' });
    pod.spec.containers = [{ name: 'web', image: 'nginx:1.27' }];
    const result = mutate(pod, defaultConfig());
    expect(result.status === 'denied' && result.message).toMatch(/drainguard\.io\/inject.*drainguard\.io\/min-drain/);
  });

  test('a pod without Envoy is skipped even with an invalid override: the override would change nothing', () => {
    const pod = withAnnotations(loadPod('plain-envoy.yaml'), { 'drainguard.io/min-drain': '1m' });
    pod.spec.containers = [{ name: 'web', image: 'nginx:1.27' }];
    expect(mutate(pod, defaultConfig())).toMatchObject({ status: 'skipped', reason: 'not-envoy' });
  });

  test('a very long value is shown truncated', () => {
    const result = mutate(withAnnotations(contour, { 'drainguard.io/drain-delay': 'x'.repeat(500) }), defaultConfig());
    expect(result.status === 'denied' && result.message.length).toBeLessThan(300);
  });
});

describe('valid overrides take effect', () => {
  test('drain-delay, min-drain and min-connections become drain arguments', () => {
    const pod = withAnnotations(contour, {
      'drainguard.io/drain-delay': '15s',
      'drainguard.io/min-drain': '30s',
      'drainguard.io/min-connections': '7',
    });
    const { result, after } = mutateOk(pod);
    const { flags } = drainArgs(container(after, 'envoy'));
    expect(flags.get('--drain-delay')).toEqual(['15s']);
    expect(flags.get('--min-drain')).toEqual(['30s']);
    expect(flags.get('--min-connections')).toEqual(['7']);
    expect(result.timeline).toMatchObject({ drainDelaySeconds: 15, minDrainSeconds: 30, minConnections: 7 });
  });

  test.each(['unix:/var/run/envoy/admin.sock', 'http://127.0.0.1:9001', 'http://[::1]:9001', 'http://localhost:19000', 'http://127.3.2.1:9001'])(
    'admin-address %s wins over every other source',
    (address) => {
      const { result, after } = mutateOk(withAnnotations(contour, { 'drainguard.io/admin-address': address }));
      expect(drainArgs(container(after, 'envoy')).flags.get('--admin')).toEqual([address]);
      expect(result.timeline.adminAddressSource).toBe('annotation');
    },
  );

  test('envoy cpu/memory requests fill Envoy\'s missing requests', () => {
    const pod = withAnnotations(contour, { 'drainguard.io/envoy-cpu-request': '250m', 'drainguard.io/envoy-memory-request': '1.5Gi' });
    const { after } = mutateOk(pod);
    expect(container(after, 'envoy').resources?.requests).toEqual({ cpu: '250m', memory: '1.5Gi' });
  });

  test('sidecar-mode disarm keeps the sidecar without its preStop', () => {
    const { after } = mutateOk(withAnnotations(contour, { 'drainguard.io/sidecar-mode': 'disarm' }));
    expect(hasContainer(after, 'shutdown-manager')).toBe(true);
    expect(container(after, 'shutdown-manager').lifecycle?.preStop).toBeUndefined();
  });

  test('envoy-container picks the Envoy container by name', () => {
    const pod = loadPod('plain-envoy.yaml');
    pod.spec.containers.push({ name: 'envoy', image: 'docker.io/library/busybox:1.36' });
    const { after } = mutateOk(withAnnotations(pod, { 'drainguard.io/envoy-container': 'proxy' }));
    expect(drainArgs(container(after, 'proxy')).subcommand).toBe('drain');
    expect(container(after, 'envoy').lifecycle).toBeUndefined();
  });

  test('inject: disabled skips the pod (opted-out), even with otherwise invalid annotations', () => {
    const pod = withAnnotations(contour, { 'drainguard.io/inject': 'disabled', 'drainguard.io/drain-delay': 'bad' });
    expect(mutate(pod, defaultConfig())).toEqual({ status: 'skipped', reason: 'opted-out', message: 'annotated drainguard.io/inject: disabled', patch: [], warnings: [] });
  });

  test('inject: enabled is accepted', () => {
    expect(mutate(withAnnotations(contour, { 'drainguard.io/inject': 'enabled' }), defaultConfig()).status).toBe('mutated');
  });

  test('an unknown drainguard.io/ annotation is named in a warning, not silently dropped', () => {
    const { result } = mutateOk(withAnnotations(contour, { 'drainguard.io/drain-dely': '5s' }));
    expect(result.warnings.some((w) => w.includes('drainguard.io/drain-dely'))).toBe(true);
  });
});
