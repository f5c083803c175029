import type { Config } from '../../../src/config/types';
import type { Pod } from '../../../src/mutate/k8s';
import type { MutationResult, PatchOperation, ShutdownTimeline } from '../../../src/mutate/result';

/**
 * Small stand-ins for the core `mutate`, so the CLI's YAML plumbing is tested on its own: they emit the
 * same kinds of operations the real core does (add a missing annotations map or one key of it, append an
 * init container, remove a container, add a probe), Pod-root-relative.
 */

export const FAKE_STATUS_ANNOTATION = 'drainguard.io/status';

export const FAKE_TIMELINE: ShutdownTimeline = {
  gracePeriodSeconds: 300,
  gracePeriodSource: 'pod',
  drainDelaySeconds: 0,
  minDrainSeconds: 5,
  deadlineSeconds: 290,
  minConnections: 0,
  adminAddress: 'unix:/admin/admin.sock',
  livenessBudgetSeconds: 340,
  livenessSource: 'drainguard',
};

/** Mutates pods with a container named `envoy`, like the core: idempotent through the status annotation. */
export function fakeMutate(pod: Pod, _config: Config): MutationResult {
  const containers = pod.spec.containers ?? [];
  const envoyIndex = containers.findIndex((container) => container.name === 'envoy');
  if (envoyIndex === -1) return { status: 'skipped', reason: 'not-envoy', patch: [], warnings: [] };
  const annotations = pod.metadata?.annotations;
  if (annotations?.['drainguard.io/envoy-cpu'] === 'lots') {
    return { status: 'denied', message: 'drainguard.io/envoy-cpu: "lots" is not a quantity', patch: [], warnings: [] };
  }
  if (annotations?.[FAKE_STATUS_ANNOTATION]) return { status: 'unchanged', patch: [], warnings: [], timeline: FAKE_TIMELINE };

  const patch: PatchOperation[] = [];
  const envoy = containers[envoyIndex]!;
  if (!envoy.livenessProbe) {
    patch.push({
      op: 'add',
      path: `/spec/containers/${envoyIndex}/livenessProbe`,
      value: { httpGet: { path: '/ready', port: 8002 }, periodSeconds: 10, failureThreshold: 34 },
    });
  }
  patch.push({
    op: 'add',
    path: `/spec/initContainers${pod.spec.initContainers ? '/-' : ''}`,
    value: pod.spec.initContainers ? installer() : [installer()],
  });
  const sidecar = containers.findIndex((container) => container.name === 'shutdown-manager');
  if (sidecar !== -1) patch.push({ op: 'remove', path: `/spec/containers/${sidecar}` });
  const status = '{"version":"test","actions":["liveness-probe"]}';
  patch.push(
    annotations
      ? { op: 'add', path: '/metadata/annotations/drainguard.io~1status', value: status }
      : { op: 'add', path: '/metadata/annotations', value: { [FAKE_STATUS_ANNOTATION]: status } },
  );
  return {
    status: 'mutated',
    patch,
    warnings: ['envoy has a memory limit below what the drain program needs'],
    actions: ['liveness-probe', 'installer', 'status'],
    timeline: FAKE_TIMELINE,
  };
}

function installer() {
  // "on" and "0644" must come back as strings: they would read as a boolean / octal number unquoted.
  return { name: 'drainguard-install', image: 'drainguard:test', args: ['install', 'on', '0644'] };
}

export function throwingMutate(): MutationResult {
  throw new Error('patch does not apply');
}
