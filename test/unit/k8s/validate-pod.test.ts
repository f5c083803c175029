import type { Container, Pod } from '../../../src/k8s';
import { portNameProblem, validatePod } from '../../../src/k8s/validate';

function pod(containers: Container[], extra: Partial<Pod['spec']> = {}): Pod {
  return { spec: { containers, ...extra } };
}

test('a valid pod has no violations', () => {
  expect(
    validatePod(
      pod(
        [
          {
            name: 'envoy',
            ports: [{ containerPort: 8002, name: 'metrics' }],
            volumeMounts: [{ name: 'config', mountPath: '/config' }],
            lifecycle: { preStop: { exec: { command: ['x'] } } },
            livenessProbe: { httpGet: { port: 8002 } },
            resources: { requests: { cpu: '100m' }, limits: { cpu: '0.1' } },
          },
        ],
        { volumes: [{ name: 'config', emptyDir: {} }] },
      ),
    ),
  ).toEqual([]);
});

test('at least one container', () => {
  expect(validatePod(pod([]))).toEqual(['spec.containers must have at least one container']);
});

test('container names are unique across containers, initContainers and ephemeralContainers', () => {
  expect(validatePod(pod([{ name: 'a' }], { initContainers: [{ name: 'a' }] }))).toEqual([expect.stringContaining('duplicate container name a')]);
  expect(validatePod(pod([{ name: 'a' }], { ephemeralContainers: [{ name: 'a' }] }))).toHaveLength(1);
});

test('every volumeMount names an existing volume, mount paths unique per container', () => {
  const problems = validatePod(
    pod([
      {
        name: 'a',
        volumeMounts: [
          { name: 'missing', mountPath: '/x' },
          { name: 'v', mountPath: '/x' },
        ],
      },
    ], { volumes: [{ name: 'v', emptyDir: {} }] }),
  );
  expect(problems).toEqual([expect.stringContaining('names missing volume missing'), expect.stringContaining('mounted twice')]);
});

test('volume names are unique', () => {
  expect(validatePod(pod([{ name: 'a' }], { volumes: [{ name: 'v' }, { name: 'v' }] }))).toEqual(['spec.volumes: duplicate volume name v']);
});

test('exactly one handler per lifecycle hook and per probe', () => {
  const problems = validatePod(
    pod([
      {
        name: 'a',
        lifecycle: { preStop: { exec: { command: ['x'] }, httpGet: { port: 1 } }, postStart: {} },
        readinessProbe: { tcpSocket: { port: 1 }, grpc: { port: 1 } },
        startupProbe: { periodSeconds: 1 },
      },
    ]),
  );
  expect(problems).toEqual([
    expect.stringContaining('lifecycle.preStop'),
    expect.stringContaining('lifecycle.postStart'),
    expect.stringContaining('readinessProbe'),
    expect.stringContaining('startupProbe'),
  ]);
});

test('requests must not exceed limits, and must parse', () => {
  expect(validatePod(pod([{ name: 'a', resources: { requests: { memory: '129Mi' }, limits: { memory: '128Mi' } } }]))).toEqual([
    expect.stringContaining('memory request 129Mi exceeds limit 128Mi'),
  ]);
  expect(validatePod(pod([{ name: 'a', resources: { requests: { cpu: 'x' }, limits: { cpu: '1' } } }]))).toEqual([
    expect.stringContaining('not a valid quantity'),
  ]);
});

describe('port names (IANA_SVC_NAME)', () => {
  test.each(['metrics', 'http-shutdown', 'a1', 'abcdefghijklmno'])('%j is valid', (name) => {
    expect(portNameProblem(name)).toBeUndefined();
  });
  test.each(['abcdefghijklmnop', 'Metrics', 'http_x', '-http', 'http-', 'a--b', '8080', ''])('%j is invalid', (name) => {
    expect(portNameProblem(name)).toBeDefined();
    expect(validatePod(pod([{ name: 'a', ports: [{ containerPort: 1, name }] }]))).toHaveLength(1);
  });
});
