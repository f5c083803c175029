/**
 * Envoy Gateway main's pod after its newest sidecar fixes (docs/upstream-shapes.md, "Envoy Gateway main
 * after v1.9"): Envoy's preStop `httpGet` with `host: 127.0.0.1` (PR #9861, for hostNetwork pods), a
 * writable emptyDir at /tmp on the shutdown-manager (release note 10119) under a read-only root, and
 * its default 64 Mi memory limit (8912), on a hostNetwork pod. No rendered copy of this shape is stored
 * upstream, so it is the stored fixture with those changes made as the notes and the PR describe them.
 * drainguard still recognises the hook, and what it installs needs none of what the fixes repair.
 */
import type { Pod } from '../../../src/mutate';
import { container, drainArgs, hasContainer, loadPod, mutateOk } from './support';

function envoyGatewayMain(): Pod {
  const pod = loadPod('envoy-gateway-envoy.yaml');
  pod.spec.hostNetwork = true;
  pod.spec.dnsPolicy = 'ClusterFirstWithHostNet';
  const envoy = container(pod, 'envoy');
  envoy.lifecycle = { preStop: { httpGet: { host: '127.0.0.1', path: '/shutdown/ready', port: 19002, scheme: 'HTTP' } } };
  envoy.securityContext = { ...(envoy.securityContext ?? {}), readOnlyRootFilesystem: true };
  const sidecar = container(pod, 'shutdown-manager');
  sidecar.resources = { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '64Mi' } };
  sidecar.securityContext = { ...(sidecar.securityContext ?? {}), readOnlyRootFilesystem: true };
  sidecar.volumeMounts = [...(sidecar.volumeMounts ?? []), { name: 'shutdown-manager-tmp', mountPath: '/tmp' }];
  pod.spec.volumes = [...(pod.spec.volumes ?? []), { name: 'shutdown-manager-tmp', emptyDir: {} }];
  return pod;
}

test('the httpGet hook with host 127.0.0.1 is still the sidecar handshake: replaced by an exec drain, the sidecar removed', () => {
  const { after, result } = mutateOk(envoyGatewayMain());
  const envoy = container(after, 'envoy');
  // An exec hook: nothing for the kubelet to resolve on a hostNetwork pod (kubernetes#134285).
  expect(Object.keys(envoy.lifecycle?.preStop ?? {})).toEqual(['exec']);
  expect(drainArgs(envoy).flags.get('--admin')).toEqual(['http://127.0.0.1:19000']);
  expect(hasContainer(after, 'shutdown-manager')).toBe(false);
  expect(result.actions).toContain('sidecar-removed');
  // Nothing of the fixes is kept or needed for Envoy: no writable path, no limit of the sidecar's.
  expect(envoy.securityContext?.readOnlyRootFilesystem).toBe(true);
  expect(envoy.volumeMounts?.some((mount) => mount.mountPath === '/tmp') ?? false).toBe(false);
  expect(result.warnings.filter((warning) => /preStop|hook/.test(warning))).toEqual([]);
  // The sidecar's /tmp emptyDir stays in the pod, unused, and does not hold up a node drain.
  expect(after.metadata?.annotations?.['cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes']?.split(',')).toContain('shutdown-manager-tmp');
});

