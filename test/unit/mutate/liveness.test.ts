/**
 * The liveness probe (and, with it, the startup probe) drainguard gives Envoy: fast recovery of a
 * stuck Envoy. The kubelet stops liveness and startup probes before it runs preStop hooks, so the
 * probe need not outlast the grace period (docs/design.md, "The liveness probe").
 */
import { defaultConfig, parseConfig } from '../../../src/config';
import type { Pod, Probe } from '../../../src/mutate';
import { configWith, container, loadPod, mutateOk } from './support';

const drainguardProbe = (target: Probe['httpGet']): Probe => ({
  httpGet: target,
  periodSeconds: 10,
  timeoutSeconds: 5,
  successThreshold: 1,
  failureThreshold: 6,
  terminationGracePeriodSeconds: 10,
});

function withGrace(pod: Pod, seconds: number): Pod {
  pod.spec.terminationGracePeriodSeconds = seconds;
  return pod;
}

describe('the probe drainguard adds', () => {
  test('restarts a stuck Envoy after about a minute: period 10 s, timeout 5 s, 6 failures, probe-level grace 10 s', () => {
    const { result, after } = mutateOk(loadPod('contour-main.yaml'));
    expect(container(after, 'envoy').livenessProbe).toEqual(drainguardProbe({ path: '/ready', port: 8002 }));
    expect(result.timeline).toMatchObject({ livenessSource: 'drainguard', livenessBudgetSeconds: 60 });
  });

  test('is the same whatever the grace period: it does not have to outlast the drain', () => {
    const short = container(mutateOk(withGrace(loadPod('contour-main.yaml'), 30)).after, 'envoy').livenessProbe;
    const long = container(mutateOk(withGrace(loadPod('contour-main.yaml'), 3600)).after, 'envoy').livenessProbe;
    const huge = container(mutateOk(withGrace(loadPod('contour-main.yaml'), Number.MAX_SAFE_INTEGER)).after, 'envoy').livenessProbe;
    expect(long).toEqual(short);
    expect(huge).toEqual(short);
  });

  test('comes with a startup probe on the same target, so a slow first xDS configuration does not restart Envoy', () => {
    const { result, after } = mutateOk(loadPod('contour-main.yaml'));
    expect(container(after, 'envoy').startupProbe).toEqual({
      httpGet: { path: '/ready', port: 8002 },
      periodSeconds: 10,
      timeoutSeconds: 5,
      successThreshold: 1,
      failureThreshold: 30,
      terminationGracePeriodSeconds: 10,
    });
    expect(result.actions).toEqual(expect.arrayContaining(['liveness-probe', 'startup-probe']));
    expect(result.timeline).toMatchObject({ startupSource: 'drainguard', startupBudgetSeconds: 300 });
  });

  test('Envoy\'s own startup probe is kept: only the liveness probe is added', () => {
    const pod = loadPod('contour-main.yaml');
    const own: Probe = { httpGet: { path: '/ready', port: 8002 }, periodSeconds: 5, failureThreshold: 120 };
    container(pod, 'envoy').startupProbe = own;
    const { result, after } = mutateOk(pod);
    expect(container(after, 'envoy').startupProbe).toEqual(own);
    expect(container(after, 'envoy').livenessProbe).toEqual(drainguardProbe({ path: '/ready', port: 8002 }));
    expect(result.actions).not.toContain('startup-probe');
    expect(result.timeline).toMatchObject({ startupSource: 'user', startupBudgetSeconds: 600 });
  });

  test('copies port, path and scheme from an httpGet readiness probe', () => {
    const pod = loadPod('contour-main.yaml');
    container(pod, 'envoy').readinessProbe = { httpGet: { path: '/healthz', port: 'metrics', scheme: 'HTTPS' }, periodSeconds: 3 };
    const { after } = mutateOk(pod);
    expect(container(after, 'envoy').livenessProbe).toEqual(drainguardProbe({ path: '/healthz', port: 'metrics', scheme: 'HTTPS' }));
  });

  test('follows the liveness settings of the configuration', () => {
    const config = configWith((c) => Object.assign(c.liveness, { periodSeconds: 20, timeoutSeconds: 8, failureThreshold: 4, startupFailureThreshold: 9, terminationGracePeriodSeconds: 15 }));
    const { result, after } = mutateOk(loadPod('contour-main.yaml'), config);
    const envoy = container(after, 'envoy');
    expect(envoy.livenessProbe).toMatchObject({ periodSeconds: 20, timeoutSeconds: 8, failureThreshold: 4, terminationGracePeriodSeconds: 15 });
    expect(envoy.startupProbe).toMatchObject({ periodSeconds: 20, timeoutSeconds: 8, failureThreshold: 9, terminationGracePeriodSeconds: 15 });
    expect(result.timeline).toMatchObject({ livenessBudgetSeconds: 80, startupBudgetSeconds: 180 });
  });
});

describe('a liveness probe of the workload\'s own', () => {
  test('is kept, with no startup probe added and no warning, however short it is', () => {
    const pod = loadPod('contour-main.yaml');
    const own: Probe = { httpGet: { path: '/ready', port: 8002 }, periodSeconds: 10, failureThreshold: 3 };
    container(pod, 'envoy').livenessProbe = own;
    const { result, after } = mutateOk(pod);
    expect(container(after, 'envoy').livenessProbe).toEqual(own);
    expect(container(after, 'envoy').startupProbe).toBeUndefined();
    expect(result.warnings.filter((w) => w.includes('liveness'))).toEqual([]);
    expect(result.timeline).toMatchObject({ livenessSource: 'user', livenessBudgetSeconds: 30, startupSource: 'none', startupBudgetSeconds: null });
  });

  test('has the budget of a running container: initialDelaySeconds does not count (Bitnami: delay 120, period 20 × 6)', () => {
    const pod = loadPod('bitnami-envoy.yaml');
    const { result } = mutateOk(pod);
    expect(container(pod, 'envoy').livenessProbe).toMatchObject({ initialDelaySeconds: 120, periodSeconds: 20, failureThreshold: 6 });
    expect(result.timeline.livenessBudgetSeconds).toBe(120);
  });

  test('a long initialDelaySeconds changes nothing about the budget', () => {
    const pod = loadPod('bitnami-envoy.yaml');
    container(pod, 'envoy').livenessProbe = { tcpSocket: { port: 8002 }, initialDelaySeconds: 200, periodSeconds: 20, failureThreshold: 6 };
    expect(mutateOk(pod).result.timeline.livenessBudgetSeconds).toBe(120);
  });

  test('unset fields count with the Kubernetes defaults (period 10 s, 3 failures)', () => {
    const pod = loadPod('contour-main.yaml');
    container(pod, 'envoy').livenessProbe = { tcpSocket: { port: 8002 } };
    expect(mutateOk(pod).result.timeline.livenessBudgetSeconds).toBe(30);
  });
});

describe('no target the kubelet can reach', () => {
  test('no httpGet readiness and a unix admin socket: neither probe, with a warning', () => {
    const pod = loadPod('contour-main.yaml');
    container(pod, 'envoy').readinessProbe = { tcpSocket: { port: 8002 } };
    const { result, after } = mutateOk(pod);
    expect(container(after, 'envoy').livenessProbe).toBeUndefined();
    expect(container(after, 'envoy').startupProbe).toBeUndefined();
    expect(result.warnings.some((w) => w.includes('no liveness probe added') && w.includes('unix socket'))).toBe(true);
    expect(result.timeline.livenessSource).toBe('none');
  });

  test('no httpGet readiness and an admin bound to loopback only: no probe, with a warning', () => {
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
    expect(container(after, 'proxy').startupProbe?.httpGet).toEqual({ path: '/ready', port: 9902 });
  });
});

describe('the liveness settings', () => {
  test('default to the values above', () => {
    expect(defaultConfig().liveness).toEqual({
      periodSeconds: 10,
      timeoutSeconds: 5,
      failureThreshold: 6,
      startupFailureThreshold: 30,
      terminationGracePeriodSeconds: 10,
    });
  });

  test('no longer take a margin over the grace period', () => {
    expect(() => parseConfig('liveness:\n  marginSeconds: 30\n', 'config.yaml')).toThrow(/liveness\.marginSeconds: unknown setting/);
  });
});
