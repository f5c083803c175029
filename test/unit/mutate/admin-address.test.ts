/**
 * Where the drain talks to Envoy's admin API, read from the pod itself (docs/design.md, "The admin
 * address"): Contour's admin moved from TCP 127.0.0.1:9001 to the unix socket /admin/admin.sock in
 * v1.19.0 (back-ported to v1.14.2, v1.15.2, v1.16.1, v1.17.2, v1.18.1), and only the pod's shape tells
 * which one a pod runs.
 */
import { defaultConfig } from '../../../src/config';
import { mutate, type Container, type Pod } from '../../../src/mutate';
import { container, drainArgs, loadPod, mutateOk, withAnnotations } from './support';

/** Contour's socket-era pod without its /admin emptyDir: the shape of every release up to v1.18.0. */
function tcpEraContour(): Pod {
  const pod = loadPod('contour-main.yaml');
  pod.spec.volumes = (pod.spec.volumes ?? []).filter((v) => v.name !== 'envoy-admin');
  for (const c of [...pod.spec.containers, ...(pod.spec.initContainers ?? [])]) {
    c.volumeMounts = (c.volumeMounts ?? []).filter((m) => m.name !== 'envoy-admin');
  }
  return pod;
}

function sidecarShutdown(pod: Pod, ...flags: string[]): void {
  container(pod, 'shutdown-manager').lifecycle = { preStop: { exec: { command: ['/bin/contour', 'envoy', 'shutdown', ...flags] } } };
}

function admin(pod: Pod, envoyName = 'envoy') {
  const { result, after } = mutateOk(pod);
  return { address: drainArgs(container(after, envoyName)).flags.get('--admin')?.[0], timeline: result.timeline, warnings: result.warnings };
}

function withoutSidecar(pod: Pod): Pod {
  pod.spec.containers = pod.spec.containers.filter((c) => c.name !== 'shutdown-manager');
  return pod;
}

describe('Contour', () => {
  test('a release without the admin socket (no /admin emptyDir) drains over TCP 127.0.0.1:9001, saying why, without a warning', () => {
    const { address, timeline, warnings } = admin(tcpEraContour());
    expect(address).toBe('http://127.0.0.1:9001');
    expect(timeline).toMatchObject({ adminAddressSource: 'contour-tcp', adminAddressGuessed: false });
    expect(timeline.adminAddressReason).toMatch(/Contour release without the admin socket: no \/admin emptyDir/);
    expect(warnings.filter((w) => w.includes('admin'))).toEqual([]);
  });

  test('a release with the admin socket drains over the socket, never over 9001 (the read-only admin proxy listener)', () => {
    const { address, timeline, warnings } = admin(loadPod('contour-main.yaml'));
    expect(address).toBe('unix:/admin/admin.sock');
    expect(timeline).toMatchObject({ adminAddressSource: 'admin-volume', adminAddressGuessed: false });
    expect(timeline.adminAddressReason).toMatch(/emptyDir mounted at \/admin/);
    expect(warnings.filter((w) => w.includes('admin'))).toEqual([]);
  });

  test('the sidecar\'s --admin-port (Contour v1.15 to v1.18.0) gives the TCP port', () => {
    const pod = tcpEraContour();
    sidecarShutdown(pod, '--admin-port=9002');
    const { address, timeline } = admin(pod);
    expect(address).toBe('http://127.0.0.1:9002');
    expect(timeline.adminAddressSource).toBe('sidecar-admin-port');
    expect(timeline.adminAddressReason).toContain('--admin-port=9002');
  });

  test('the sidecar\'s --admin-port as a separate argument', () => {
    const pod = tcpEraContour();
    sidecarShutdown(pod, '--admin-port', '9003');
    expect(admin(pod).address).toBe('http://127.0.0.1:9003');
  });

  test('a deprecated --admin-port on a socket-era pod is ignored with a warning: Contour itself ignores it there', () => {
    const pod = loadPod('contour-main.yaml');
    sidecarShutdown(pod, '--admin-port=9001');
    const { address, warnings } = admin(pod);
    expect(address).toBe('unix:/admin/admin.sock');
    expect(warnings).toContainEqual(expect.stringMatching(/--admin-port=9001.*ignored.*\/admin emptyDir/));
  });

  test('the sidecar\'s --admin-address on its `contour envoy shutdown` preStop wins over the shape', () => {
    const pod = loadPod('contour-main.yaml');
    sidecarShutdown(pod, '--admin-address=/admin/other.sock');
    const { address, timeline } = admin(pod);
    expect(address).toBe('unix:/admin/other.sock');
    expect(timeline.adminAddressSource).toBe('sidecar-admin-address');
  });

  test('a host in the sidecar\'s --admin-address goes with its --admin-port', () => {
    const pod = tcpEraContour();
    sidecarShutdown(pod, '--admin-address=127.0.0.1', '--admin-port=9004');
    const { address, timeline } = admin(pod);
    expect(address).toBe('http://127.0.0.1:9004');
    expect(timeline.adminAddressSource).toBe('sidecar-admin-address');
  });

  test('`contour bootstrap --admin-port` in the init container gives the TCP port when no sidecar says more', () => {
    const pod = withoutSidecar(tcpEraContour());
    container(pod, 'envoy-initconfig').args?.push('--admin-port=9100');
    const { address, timeline } = admin(pod);
    expect(address).toBe('http://127.0.0.1:9100');
    expect(timeline.adminAddressSource).toBe('bootstrap-flag');
    expect(timeline.adminAddressReason).toContain('contour bootstrap');
  });

  test('`contour bootstrap --admin-address` with a path gives that socket', () => {
    const pod = loadPod('contour-main.yaml');
    container(pod, 'envoy-initconfig').args?.push('--admin-address', '/admin/boot.sock');
    const { address, timeline } = admin(withoutSidecar(pod));
    expect(address).toBe('unix:/admin/boot.sock');
    expect(timeline.adminAddressSource).toBe('bootstrap-flag');
  });

  test('without a sidecar, the `contour bootstrap` init container alone marks a Contour pod (TCP era: 9001)', () => {
    const { address, timeline, warnings } = admin(withoutSidecar(tcpEraContour()));
    expect(address).toBe('http://127.0.0.1:9001');
    expect(timeline.adminAddressSource).toBe('contour-tcp');
    expect(warnings.filter((w) => w.includes('admin'))).toEqual([]);
  });

  test('a value that is no loopback or unix address is ignored with a warning, and the next source applies', () => {
    const pod = tcpEraContour();
    sidecarShutdown(pod, '--admin-address=10.0.0.1');
    const { address, warnings } = admin(pod);
    expect(address).toBe('http://127.0.0.1:9001');
    expect(warnings).toContainEqual(expect.stringMatching(/10\.0\.0\.1.*ignored/));
  });

  test('the annotation still wins over everything', () => {
    const { address, timeline } = admin(withAnnotations(tcpEraContour(), { 'drainguard.io/admin-address': 'http://127.0.0.1:9555' }));
    expect(address).toBe('http://127.0.0.1:9555');
    expect(timeline).toMatchObject({ adminAddressSource: 'annotation', adminAddressGuessed: false });
  });
});

describe('Envoy Gateway', () => {
  test('its sidecar\'s fixed 19000 applies when Envoy\'s arguments name no admin, as an inference, not a guess', () => {
    const pod = loadPod('envoy-gateway-envoy.yaml');
    container(pod, 'envoy').args = ['--config-yaml', 'node: {id: x}\n'];
    const { address, timeline, warnings } = admin(pod);
    expect(address).toBe('http://127.0.0.1:19000');
    expect(timeline).toMatchObject({ adminAddressSource: 'envoy-gateway-default', adminAddressGuessed: false });
    expect(warnings.filter((w) => w.includes('admin'))).toEqual([]);
  });
});

describe('plain Envoy', () => {
  test('the last resort 9901 is a guess: a warning says what to set, and the timeline marks it', () => {
    const { address, timeline, warnings } = admin(loadPod('plain-envoy.yaml'), 'proxy');
    expect(address).toBe('http://127.0.0.1:9901');
    expect(timeline).toMatchObject({ adminAddressSource: 'default', adminAddressGuessed: true });
    expect(warnings).toContainEqual(expect.stringMatching(/http:\/\/127\.0\.0\.1:9901.*guess.*drainguard\.io\/admin-address/));
  });

  test('no guess warning when no drain is installed (the admin address is then unused)', () => {
    const pod = loadPod('plain-envoy.yaml');
    (container(pod, 'proxy') as Container).lifecycle = { preStop: { exec: { command: ['/custom-drain'] } } };
    const result = mutate(pod, defaultConfig());
    expect(result.status).toBe('skipped');
    expect(result.warnings.filter((w) => w.includes('guess'))).toEqual([]);
  });

  test('an emptyDir at /admin outside Contour is read as Contour\'s socket directory, not guessed', () => {
    const pod = loadPod('plain-envoy.yaml');
    pod.spec.volumes?.push({ name: 'admin', emptyDir: {} });
    container(pod, 'proxy').volumeMounts?.push({ name: 'admin', mountPath: '/admin' });
    const { address, timeline } = admin(pod, 'proxy');
    expect(address).toBe('unix:/admin/admin.sock');
    expect(timeline).toMatchObject({ adminAddressSource: 'admin-volume', adminAddressGuessed: false });
  });
});
