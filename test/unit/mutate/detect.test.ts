import { defaultConfig } from '../../../src/config';
import type { Pod } from '../../../src/mutate';
import { findEnvoy, findShutdownManagers, imageRepository, isEnvoyImage } from '../../../src/mutate/envoy/detect';
import { bootstrapAdmin, configPath, envoyTokens } from '../../../src/mutate/envoy/args';

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

describe('findEnvoy', () => {
  const pod: Pod = { spec: { containers: [{ name: 'app', image: 'nginx' }, { name: 'gw', image: 'envoyproxy/envoy:v1' }, { name: 'envoy', image: 'custom' }] } };
  test('by name first, then by image, then the override', () => {
    expect(findEnvoy(pod, defaultConfig(), undefined)).toEqual({ found: true, index: 2 });
    expect(findEnvoy({ spec: { containers: pod.spec.containers.slice(0, 2) } }, defaultConfig(), undefined)).toEqual({ found: true, index: 1 });
    expect(findEnvoy(pod, defaultConfig(), 'app')).toEqual({ found: true, index: 0 });
    expect(findEnvoy(pod, defaultConfig(), 'nope')).toEqual({ found: false, missingOverride: 'nope' });
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
    expect(configPath({ name: 'e', args: ['-c', 'envoy.yaml'] })).toBeUndefined();
  });

  test('--config-yaml admin: socket address, wildcard, IPv6 loopback, pipe, unparsable', () => {
    const admin = (yaml: string) => bootstrapAdmin({ name: 'e', args: ['--config-yaml', yaml] });
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
