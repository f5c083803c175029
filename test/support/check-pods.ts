/**
 * Pods as `drainguard check` finds them, built from the fixture pods: as their workloads create them, or
 * rewritten by `mutate` (the patch applied with an independent RFC 6902 implementation), or rewritten and
 * recorded as another drainguard version's work. The unit tests judge such pods one by one; the kube
 * lane's suites put them in the real cluster's workloads.
 */
import { randomUUID } from 'node:crypto';
import { defaultConfig, type Config } from '../../src/config';
import { mutate, type Pod } from '../../src/mutate';
import { VERSION } from '../../src/version';
import { fixturePods } from './generators/pods';
import { applyIndependently, jsonCopy } from './independent-patch';

let fixtures: ReturnType<typeof fixturePods> | undefined;

function fixture(name: string): Pod {
  fixtures ??= fixturePods();
  const found = fixtures.find((entry) => entry.name === name);
  if (!found) throw new Error(`no fixture pod ${name}`);
  return jsonCopy(found.pod);
}

/** The pod templates the scenarios use. */
export const templates = {
  /** Contour's Envoy DaemonSet (v1.33.6): envoy plus the shutdown-manager sidecar. */
  contour: () => fixture('contour/03-envoy-v1.33.6.yaml'),
  /** Envoy Gateway's proxy Deployment pod. */
  envoyGateway: () => fixture('envoy-gateway-envoy.yaml'),
  /** Plain Envoy, recognised by its image. */
  plainEnvoy: () => fixture('plain-envoy.yaml'),
  /** nginx: not an Envoy pod. */
  notEnvoy: () => fixture('not-envoy.yaml'),
};

/** `template` as this drainguard's webhook rewrites it, or (`version`) as another version recorded it. */
export function rewritten(template: Pod, options: { version?: string; config?: Config } = {}): Pod {
  const result = mutate(jsonCopy(template), options.config ?? defaultConfig());
  if (result.status !== 'mutated') throw new Error(`expected mutate to rewrite the template, got ${result.status}`);
  const pod = applyIndependently(jsonCopy(template), result.patch);
  if (options.version !== undefined) {
    const annotations = pod.metadata!.annotations!;
    const status = JSON.parse(annotations['drainguard.io/status']!) as { version: string };
    annotations['drainguard.io/status'] = JSON.stringify({ ...status, version: options.version });
  }
  return pod;
}

export type Owner = { kind: 'DaemonSet' | 'ReplicaSet' | 'StatefulSet'; name: string } | undefined;
export type PodState = 'unprotected' | 'protected' | { rewrittenBy: string };

/**
 * A pod as the API server would store it: named, owned, running. `protected` is the template rewritten
 * by this drainguard; `{ rewrittenBy }` the same rewrite recorded by another version.
 */
export function runningPod(template: Pod, options: { name: string; namespace: string; owner?: Owner; state?: PodState; config?: Config }): Pod {
  const { name, namespace, owner, state = 'unprotected', config } = options;
  const spec =
    state === 'unprotected'
      ? jsonCopy(template)
      : rewritten(template, { ...(config ? { config } : {}), ...(typeof state === 'object' ? { version: state.rewrittenBy } : {}) });
  const { generateName: _generateName, ...metadata } = spec.metadata ?? {};
  const containers = [...spec.spec.containers.map((c) => ({ c, init: false })), ...(spec.spec.initContainers ?? []).map((c) => ({ c, init: true }))];
  const running = (c: { name: string }) => ({ name: c.name, ready: true, restartCount: 0, state: { running: { startedAt: '2026-01-01T00:00:00Z' } } });
  return {
    ...spec,
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...metadata,
      name,
      namespace,
      ...(owner ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: owner.kind, name: owner.name, uid: randomUUID(), controller: true, blockOwnerDeletion: true }] } : {}),
    },
    status: {
      phase: 'Running',
      containerStatuses: containers.filter((entry) => !entry.init).map((entry) => running(entry.c)),
      initContainerStatuses: containers
        .filter((entry) => entry.init)
        .map((entry) => (entry.c.restartPolicy === 'Always' ? running(entry.c) : { name: entry.c.name, state: { terminated: { exitCode: 0 } } })),
    },
  } as Pod;
}

export { VERSION };
