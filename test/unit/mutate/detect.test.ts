import { defaultConfig } from '../../../src/config';
import type { Pod } from '../../../src/mutate';
import { findEnvoy, findShutdownManagers, imageRepository, isEnvoyImage, lookedFor } from '../../../src/mutate/facts';
import { bootstrapAdmin, configPath, envoyTokens, readEnvoyArgs } from '../../../src/mutate/facts/envoy-args';

describe('image repository', () => {
  test.each([
    ['envoyproxy/envoy:v1.30.0', 'envoyproxy/envoy'],
    ['docker.io/envoyproxy/envoy:distroless-v1.39.0', 'envoyproxy/envoy'],
    ['registry.local:5000/envoyproxy/envoy-distroless@sha256:abc', 'envoyproxy/envoy-distroless'],
    ['localhost/envoyproxy/envoy', 'envoyproxy/envoy'],
    ['envoyproxy/envoy', 'envoyproxy/envoy'],
    ['nginx', 'nginx'],
  ])('%s → %s', (image, repository) => {
    expect(imageRepository(image)).toBe(repository);
  });

  test.each([
    ['mirror.example.com/dockerhub/envoyproxy/envoy:v1', true],
    ['envoyproxy/envoy-alpine:v1.21', false],
    ['example.com/notenvoyproxy/envoy:v1', false],
    ['bitnami/envoy:1.34', false],
  ])('%s is Envoy: %s', (image, expected) => {
    expect(isEnvoyImage(image, defaultConfig().envoyImageRepositories)).toBe(expected);
  });
});

describe('findEnvoy: identity by evidence, never by name alone', () => {
  const config = defaultConfig();
  const find = (containers: Pod['spec']['containers'], override?: string, initContainers?: Pod['spec']['initContainers']) =>
    findEnvoy({ spec: { containers, ...(initContainers ? { initContainers } : {}) } }, config, override);

  test('the envoy binary in the command, or without a command as the first argument', () => {
    expect(find([{ name: 'app', image: 'nginx' }, { name: 'edge', image: 'bitnami/envoy:1.34', command: ['/opt/bitnami/envoy/bin/envoy'] }])).toEqual({
      found: true, index: 1, evidence: 'runs the envoy binary',
    });
    expect(find([{ name: 'edge', image: 'mirror/proxy:1', args: ['envoy', '-c', '/x'] }])).toMatchObject({ found: true, index: 0 });
    expect(find([{ name: 'edge', image: 'mirror/proxy:1', command: ['envoy -c /x'] }])).toMatchObject({ found: true, index: 0 });
    // An argument is not the program when there is a command, and a flag never is.
    expect(find([{ name: 'edge', image: 'mirror/proxy:1', command: ['/bin/sh'], args: ['envoy'] }])).toMatchObject({ found: false, kind: 'none' });
    expect(find([{ name: 'edge', image: 'mirror/proxy:1', args: ['-envoy-executable-path=/usr/local/bin/envoy'] }])).toMatchObject({ found: false });
  });

  test('an Envoy image, at any registry', () => {
    expect(find([{ name: 'gw', image: 'mirror.example/envoyproxy/envoy:v1' }])).toEqual({ found: true, index: 0, evidence: 'runs the Envoy image mirror.example/envoyproxy/envoy:v1' });
  });

  test("Envoy's name alone is not enough; with a known upstream shape it is", () => {
    expect(find([{ name: 'envoy', image: 'custom' }])).toEqual({ found: false, kind: 'none', namedOnly: 'envoy' });
    const sidecar = { name: 'shutdown-manager', image: 'ghcr.io/projectcontour/contour:v1.30.0', command: ['/bin/contour'], args: ['envoy', 'shutdown-manager'] };
    expect(find([{ name: 'envoy', image: 'custom' }, sidecar])).toEqual({
      found: true, index: 0, evidence: "has Envoy's name in the Contour shape (shutdown-manager sidecar shutdown-manager)",
    });
    const bootstrap = { name: 'envoy-initconfig', image: 'custom-contour', command: ['contour'], args: ['bootstrap', '/config/envoy.json'] };
    expect(find([{ name: 'envoy', image: 'custom' }], undefined, [bootstrap])).toMatchObject({ found: true, index: 0 });
    // The shape makes only the container with Envoy's name Envoy.
    expect(find([{ name: 'proxy', image: 'custom' }, sidecar])).toMatchObject({ found: false, kind: 'none', namedOnly: undefined });
  });

  test("the container with Envoy's name wins when several run Envoy", () => {
    expect(find([{ name: 'gw', image: 'envoyproxy/envoy:v1' }, { name: 'envoy', command: ['envoy'] }])).toMatchObject({ found: true, index: 1 });
    expect(find([{ name: 'gw', image: 'envoyproxy/envoy:v1' }, { name: 'gw2', command: ['envoy'] }])).toMatchObject({ found: true, index: 0 });
  });

  test.each([
    [{ name: 'envoy', image: 'hashicorp/consul-dataplane:2.0.3', args: ['-envoy-admin-bind-port=19000'] }, 'consul-dataplane'],
    [{ name: 'gw', image: 'registry.example/dp:1', command: ['privileged-consul-dataplane'] }, 'consul-dataplane'],
    [{ name: 'istio-proxy', image: 'docker.io/istio/proxyv2:1.24.0', args: ['proxy', 'router'] }, "Istio's pilot-agent"],
    [{ name: 'higress-gateway', image: 'higress-registry.example/higress/gateway:2.0', args: ['proxy', 'router', '--domain'] }, "Istio's pilot-agent"],
    [{ name: 'cilium-envoy', image: 'quay.io/cilium/cilium-envoy:v1.31', command: ['/usr/bin/cilium-envoy-starter'] }, 'cilium-envoy'],
    // Cilium's chart (install/kubernetes/cilium/templates/cilium-envoy/daemonset.yaml): Cilium's own Envoy build.
    [{ name: 'cilium-envoy', image: 'mirror.example/cilium-envoy:v1.34', command: ['/usr/bin/cilium-envoy'], args: ['-c /var/run/cilium/envoy/bootstrap-config.json'] }, 'cilium-envoy'],
    [{ name: 'kgateway-proxy', image: 'cr.kgateway.dev/kgateway-dev/envoy-wrapper:v2.0.0' }, 'envoyinit (Gloo, kgateway)'],
  ])('%j runs Envoy under %s: never drainguard\'s', (container, supervisor) => {
    const found = find([container]);
    expect(found).toMatchObject({ found: false, kind: 'supervised', container: container.name, forced: false });
    expect(found.found === false && found.kind === 'supervised' && found.supervisor.name).toBe(supervisor);
  });

  test('a plain Envoy beside a supervised one is still Envoy', () => {
    expect(find([{ name: 'istio-proxy', image: 'istio/proxyv2:1.24', args: ['proxy', 'sidecar'] }, { name: 'app', image: 'envoyproxy/envoy:v1' }])).toMatchObject({
      found: true,
      index: 1,
    });
  });

  test('the annotation names the container; a supervised one stays left alone; a missing one is reported', () => {
    const containers = [{ name: 'app', image: 'nginx' }, { name: 'envoy', image: 'hashicorp/consul-dataplane:2.0.3' }];
    expect(find(containers, 'app')).toEqual({ found: true, index: 0, evidence: 'named by the drainguard.io/envoy-container annotation' });
    expect(find(containers, 'envoy')).toMatchObject({ found: false, kind: 'supervised', forced: true });
    expect(find(containers, 'nope')).toEqual({ found: false, kind: 'missing-override', missingOverride: 'nope' });
  });

  test('what it looks for names every kind of evidence', () => {
    expect(lookedFor(config)).toBe(
      'looked for a container whose command (or first argument) runs the envoy binary, an image of envoyproxy/envoy or ' +
        'envoyproxy/envoy-distroless, or a container named envoy in a known upstream shape (a Contour or Envoy Gateway ' +
        'shutdown-manager, or contour bootstrap)',
    );
  });
});

describe('findShutdownManagers', () => {
  test('by name, by command (Contour, Envoy Gateway), as native sidecar; never Envoy itself or a plain init container', () => {
    const pod: Pod = {
      spec: {
        containers: [
          { name: 'envoy', args: ['envoy shutdown-manager'] },
          { name: 'shutdown-manager', command: ['/custom'] },
          { name: 'sm', command: ['/bin/contour'], args: ['envoy', 'shutdown-manager'] },
        ],
        initContainers: [
          { name: 'eg', command: ['envoy-gateway'], args: ['envoy', 'shutdown-manager'], restartPolicy: 'Always' },
          { name: 'once', command: ['contour'], args: ['envoy', 'shutdown-manager'] },
        ],
      },
    };
    expect(findShutdownManagers(pod, defaultConfig(), 0).map((s) => [s.list, s.index, s.flavor])).toEqual([
      ['containers', 1, 'unknown'],
      ['containers', 2, 'contour'],
      ['initContainers', 0, 'envoy-gateway'],
    ]);
  });
});

describe('Envoy command line', () => {
  test('flag and value in one element (TCLAP splits on the space) and --flag=value', () => {
    expect(envoyTokens({ name: 'e', command: ['envoy'], args: ['--service-cluster $(NS)', '--log-level=info', '-c', '/x'] })).toEqual([
      'envoy', '--service-cluster', '$(NS)', '--log-level', 'info', '-c', '/x',
    ]);
  });

  test('relative config paths are not used', () => {
    expect(configPath(readEnvoyArgs({ name: 'e', args: ['-c', 'envoy.yaml'] }))).toBeUndefined();
    expect(configPath(readEnvoyArgs({ name: 'e', args: ['--config-path=/etc/envoy.yaml'] }))).toBe('/etc/envoy.yaml');
  });

  test('every flag drainguard reads, in one pass: the token after its first occurrence, whatever it is', () => {
    expect(readEnvoyArgs({ name: 'e', command: ['envoy'], args: ['-c /a.yaml', '--drain-time-s', '60', '-c', '/b.yaml', '--config-yaml', 'admin: {}'] })).toEqual({
      configPath: '/a.yaml',
      configYaml: 'admin: {}',
      drainTimeSeconds: '60',
    });
    // A flag's value may be another flag's name, which then has its own value.
    expect(readEnvoyArgs({ name: 'e', args: ['-c', '--config-yaml', 'x'] })).toEqual({ configPath: '--config-yaml', configYaml: 'x' });
    expect(readEnvoyArgs({ name: 'e', args: ['--log-level', 'info'] })).toEqual({});
  });

  test('--config-yaml admin: socket address, wildcard, IPv6 loopback, pipe, unparsable', () => {
    const admin = (yaml: string) => bootstrapAdmin(readEnvoyArgs({ name: 'e', args: ['--config-yaml', yaml] }).configYaml);
    expect(admin('admin: {address: {socket_address: {address: 127.0.0.1, port_value: 19000}}}')).toEqual({
      kind: 'tcp', address: 'http://127.0.0.1:19000', bindHost: '127.0.0.1', port: 19000,
    });
    expect(admin('admin: {address: {socket_address: {address: "::", port_value: 9901}}}')).toMatchObject({ address: 'http://[::1]:9901' });
    expect(admin('admin: {address: {pipe: {path: /sock/admin}}}')).toEqual({ kind: 'unix', address: 'unix:/sock/admin' });
    expect(admin('admin: {address: {pipe: {path: "@abstract"}}}')).toMatchObject({ kind: 'unusable' });
    expect(admin('admin: [unclosed')).toBeUndefined();
    expect(admin('node: {id: x}')).toBeUndefined();
  });
});
