/**
 * AdmissionReviews of about 3 MiB, each made large by one kind of pod content: many containers,
 * volumes, volume mounts, environment entries, annotations, one huge
 * `cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes` list, or arguments. Each is a valid
 * Envoy pod (Contour's), so drainguard must decide on it like on any other: these are what an
 * adversary inside the cluster can send to `/mutate`, and what a loop over pod content that is not
 * linear turns into seconds of work. Shared by the server tests and `npm run bench:fuzz`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { Container, Pod } from '../../../src/mutate/k8s';
import { CONTOUR_FIXTURES_DIR } from '../../support/build';
import { admissionReview } from './webhook-test-kit';

export const LARGE_CONTENT_KINDS = ['containers', 'volumes', 'volumeMounts', 'env', 'annotations', 'safe-to-evict-list', 'args'] as const;
export type LargeContentKind = (typeof LARGE_CONTENT_KINDS)[number];

/** drainguard's body limit is 3 MiB; these stay just under it, as a hostile but acceptable request would. */
export const LARGE_REVIEW_BYTES = 3 * 1024 * 1024 - 16 * 1024;

function contourPod(): Pod {
  const daemonSet = parse(readFileSync(join(CONTOUR_FIXTURES_DIR, '03-envoy-main.yaml'), 'utf8')) as { spec: { template: Pod } };
  return { apiVersion: 'v1', kind: 'Pod', ...structuredClone(daemonSet.spec.template), metadata: { ...daemonSet.spec.template.metadata, namespace: 'projectcontour', generateName: 'envoy-' } };
}

function envoyOf(pod: Pod): Container {
  return pod.spec.containers.find((c) => c.name === 'envoy') as Container;
}

/** Adds one item of `kind`'s content to the pod; `index` keeps names unique. Items of a kind are all one size. */
function grow(pod: Pod, kind: LargeContentKind, index: number): void {
  const i = String(index).padStart(7, '0');
  const annotations = (pod.metadata!.annotations ??= {});
  switch (kind) {
    case 'containers':
      pod.spec.containers.push({ name: `app-${i}`, image: `registry.example.com/app:${i}` });
      return;
    case 'volumes':
      (pod.spec.volumes ??= []).push({ name: `scratch-${i}`, emptyDir: {} });
      return;
    case 'volumeMounts':
      // One volume mounted at many paths (Kubernetes allows it; each mountPath is unique).
      (envoyOf(pod).volumeMounts ??= []).push({ name: 'envoy-config', mountPath: `/mnt/extra/${i}`, readOnly: true });
      return;
    case 'env':
      (envoyOf(pod).env ??= []).push({ name: `EXTRA_SETTING_${i}`, value: `value-${i}` });
      return;
    case 'annotations':
      annotations[`example.com/key-${i}`] = `value-${i}`;
      return;
    case 'safe-to-evict-list': {
      const key = 'cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes';
      annotations[key] = annotations[key] ? `${annotations[key]},volume-${i}` : `volume-${i}`;
      return;
    }
    case 'args':
      (envoyOf(pod).args ??= []).push(`--component-log-level=upstream:debug,connection:trace,x${i}:info`);
      return;
  }
}

/**
 * A valid Contour Envoy pod grown with `kind` until its AdmissionReview is about `targetBytes` of JSON.
 * Grows in batches sized from the bytes one item adds, so building it stays linear too.
 */
export function largePod(kind: LargeContentKind, targetBytes = LARGE_REVIEW_BYTES): Pod {
  const pod = contourPod();
  const size = () => Buffer.byteLength(JSON.stringify(admissionReview(pod)));
  let next = 0;
  for (let current = size(); current < targetBytes; current = size()) {
    const before = current;
    grow(pod, kind, next++);
    const perItem = Math.max(1, size() - before);
    const batch = Math.max(0, Math.floor((targetBytes - size()) / perItem) - 1);
    for (let k = 0; k < batch; k += 1) grow(pod, kind, next++);
    if (batch === 0) break;
  }
  if (size() > targetBytes) throw new Error(`largePod(${kind}) grew past ${targetBytes} bytes`);
  return pod;
}

/** The AdmissionReview body for `largePod(kind)`. */
export function largeReviewBody(kind: LargeContentKind, uid: string, targetBytes = LARGE_REVIEW_BYTES): string {
  return JSON.stringify(admissionReview(largePod(kind, targetBytes), { uid }));
}
