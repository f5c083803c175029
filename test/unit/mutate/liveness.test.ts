/** The grace-period-aware liveness probe. */
import { defaultConfig } from '../../../src/config';
import type { Pod } from '../../../src/mutate';
import { container, loadPod, mutateOk } from './support';

function budget(pod: Pod, name: string): number {
  const probe = container(pod, name).livenessProbe;
  if (probe === undefined) throw new Error('no liveness probe');
  return (probe.initialDelaySeconds ?? 0) + (probe.periodSeconds ?? 10) * (probe.failureThreshold ?? 3);
}

test('no grace period set: the budget exceeds the Kubernetes default 30 s plus the margin', () => {
  const pod = loadPod('contour-main.yaml');
  delete pod.spec.terminationGracePeriodSeconds;
  const { result, after } = mutateOk(pod);
  expect(budget(after, 'envoy')).toBeGreaterThan(30 + defaultConfig().liveness.marginSeconds);
  expect(result.timeline).toMatchObject({ gracePeriodSeconds: 30, gracePeriodSource: 'kubernetes-default', deadlineSeconds: 20 });
});

test('the probe copies port, path and scheme from an httpGet readiness probe, with the configured timeouts', () => {
  const pod = loadPod('contour-main.yaml');
  container(pod, 'envoy').readinessProbe = { httpGet: { path: '/healthz', port: 'metrics', scheme: 'HTTPS' }, periodSeconds: 3 };
  const { after } = mutateOk(pod);
  const probe = container(after, 'envoy').livenessProbe;
  const { liveness } = defaultConfig();
  expect(probe).toMatchObject({
    httpGet: { path: '/healthz', port: 'metrics', scheme: 'HTTPS' },
    periodSeconds: liveness.periodSeconds,
    timeoutSeconds: liveness.timeoutSeconds,
    terminationGracePeriodSeconds: liveness.terminationGracePeriodSeconds,
  });
  expect(budget(after, 'envoy')).toBeGreaterThan(300 + liveness.marginSeconds);
});

test('a user liveness probe whose budget is not above the grace period is kept and warned about', () => {
  const pod = loadPod('contour-main.yaml');
  const userProbe = { httpGet: { path: '/ready', port: 8002 }, periodSeconds: 10, failureThreshold: 3 };
  container(pod, 'envoy').livenessProbe = userProbe;
  const { result, after } = mutateOk(pod);
  expect(container(after, 'envoy').livenessProbe).toEqual(userProbe);
  expect(result.warnings.some((w) => w.includes('liveness probe gives up after 30s'))).toBe(true);
  expect(result.timeline.livenessSource).toBe('user');
});

test('a user liveness probe with a budget above the grace period: kept, no warning', () => {
  const pod = loadPod('contour-main.yaml');
  container(pod, 'envoy').livenessProbe = { tcpSocket: { port: 8002 }, periodSeconds: 20, failureThreshold: 20 };
  const { result } = mutateOk(pod);
  expect(result.warnings.some((w) => w.includes('liveness'))).toBe(false);
  expect(result.timeline.livenessBudgetSeconds).toBe(400);
});

test('no httpGet readiness and a unix admin socket: no probe, with a warning', () => {
  const pod = loadPod('contour-main.yaml');
  container(pod, 'envoy').readinessProbe = { tcpSocket: { port: 8002 } };
  const { result, after } = mutateOk(pod);
  expect(container(after, 'envoy').livenessProbe).toBeUndefined();
  expect(result.warnings.some((w) => w.includes('no liveness probe added') && w.includes('unix socket'))).toBe(true);
  expect(result.timeline.livenessSource).toBe('none');
});

test('no httpGet readiness and an admin bound to loopback only (kubelet cannot reach it): no probe, with a warning', () => {
  const pod = loadPod('envoy-gateway-envoy.yaml');
  const envoy = container(pod, 'envoy');
  delete envoy.readinessProbe;
  delete envoy.livenessProbe;
  const { result, after } = mutateOk(pod);
  expect(container(after, 'envoy').livenessProbe).toBeUndefined();
  expect(result.warnings.some((w) => w.includes('loopback only'))).toBe(true);
});

test('no httpGet readiness and an admin bound to all interfaces: probe admin /ready', () => {
  const pod = loadPod('plain-envoy.yaml');
  container(pod, 'proxy').args = ['--config-yaml', 'admin:\n  address:\n    socket_address: {address: 0.0.0.0, port_value: 9902}\n'];
  const { after } = mutateOk(pod);
  expect(container(after, 'proxy').livenessProbe?.httpGet).toEqual({ path: '/ready', port: 9902 });
});
