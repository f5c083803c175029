/**
 * The Contour pod grown to a given review size with one kind of content at a time. Each is still a valid
 * Envoy pod, so drainguard must decide on it like on any other. Used by the growth check (a loop over any
 * kind of pod content that is not linear shows up as a cost per KiB that rises with size), by
 * `npm run bench:fuzz` and `npm run bench:memory` (reviews just under the server's body limit: what an
 * adversary inside the cluster can send to `/mutate`), and by the server test that decides such reviews
 * while `/healthz` keeps answering. The kinds are every list or map in a pod that drainguard reads (see the
 * hostile-input findings: a long safe-to-evict annotation and many emptyDir volumes were quadratic).
 *
 * Sizes are tracked incrementally (base size + each item's JSON length and its comma), so building a
 * 3 MiB pod is linear too; the result is about the size asked for (within an item and a key or two).
 */
import type { Container, Pod } from '../../../src/mutate';
import { DEFAULT_LIMITS } from '../../../src/server/sizing';
import { contourPod } from './pods';
import { reviewBody } from './review';

export const CONTENT_KINDS = [
  'containers',
  'volumes',
  'volumeMounts',
  'env',
  'annotations',
  'safeToEvictList',
  'args',
  'ports',
] as const;
export type ContentKind = (typeof CONTENT_KINDS)[number];

/** What each kind adds, in words, for the report. */
export const CONTENT_DESCRIPTIONS: Record<ContentKind, string> = {
  containers: 'extra application containers (name and image)',
  volumes: 'extra emptyDir volumes',
  volumeMounts: "extra mounts on Envoy's container (one existing volume at many paths)",
  env: "extra environment entries on Envoy's container",
  annotations: 'extra pod annotations',
  safeToEvictList: 'one cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes annotation listing many volume names',
  args: "extra arguments on Envoy's container (`--component-log-level` pairs Envoy accepts)",
  ports: "extra container ports on Envoy's container (unique port and protocol)",
};

const SAFE_TO_EVICT = 'cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes';
const PROTOCOLS = ['TCP', 'UDP', 'SCTP'];
/** Ports 10000-59999 per protocol: 150,000 unique port/protocol pairs, more than 3 MiB holds. */
const PORTS_PER_PROTOCOL = 50_000;

function envoyContainer(pod: Pod): Container {
  const envoy = pod.spec.containers.find((c) => c.name === 'envoy');
  if (!envoy) throw new Error('the Contour fixture has no container named envoy');
  return envoy;
}

/** An item's share of the body: its JSON and the comma after it. */
const jsonBytes = (item: unknown) => JSON.stringify(item).length + 1;

/** Appends items made by `make(i)` to `list` until they add `bytesToAdd` to the body. */
function fill<T>(list: T[], bytesToAdd: number, make: (index: number) => T, bytes: (item: T) => number = jsonBytes): void {
  let added = 0;
  for (let i = 0; added < bytesToAdd; i += 1) {
    const item = make(i);
    list.push(item);
    added += bytes(item);
  }
}

/** The Contour pod with content of `kind` added until its AdmissionReview is about `targetBytes` long. */
export function podWithContent(kind: ContentKind, targetBytes: number): Pod {
  const pod = contourPod();
  const bytesToAdd = Math.max(0, targetBytes - reviewBody(pod).length);
  const envoy = envoyContainer(pod);
  const annotations = (pod.metadata ??= {}).annotations ?? {};
  pod.metadata.annotations = annotations;
  switch (kind) {
    case 'containers':
      fill(pod.spec.containers, bytesToAdd, (i) => ({ name: `app-${i}`, image: `registry.example.com/team/app:${i}` }));
      break;
    case 'volumes':
      fill((pod.spec.volumes ??= []), bytesToAdd, (i) => ({ name: `scratch-${i}`, emptyDir: {} }));
      break;
    case 'volumeMounts': {
      const volume = pod.spec.volumes?.[0]?.name;
      if (volume === undefined) throw new Error('the Contour fixture has no volume');
      fill((envoy.volumeMounts ??= []), bytesToAdd, (i) => ({ name: volume, mountPath: `/bench/mount-${i}`, readOnly: true }));
      break;
    }
    case 'env':
      fill((envoy.env ??= []), bytesToAdd, (i) => ({ name: `BENCH_SETTING_${i}`, value: `value-${i}` }));
      break;
    case 'annotations': {
      let added = 0;
      for (let i = 0; added < bytesToAdd; i += 1) {
        const key = `bench.example.com/key-${i}`;
        const value = `value-${i}`;
        annotations[key] = value;
        added += key.length + value.length + 6;
      }
      break;
    }
    case 'safeToEvictList': {
      const names: string[] = [];
      fill(names, bytesToAdd, (i) => `scratch-${i}`, (name) => name.length + 1);
      annotations[SAFE_TO_EVICT] = names.join(',');
      break;
    }
    case 'args': {
      // Pairs Envoy itself accepts, so the pod stays a valid Envoy pod whatever drainguard reads from args.
      const pairs: [string, string][] = [];
      fill(pairs, bytesToAdd, () => ['--component-log-level', 'upstream:debug'], (pair) => jsonBytes(pair) - 2);
      const args = (envoy.args ??= []);
      for (const pair of pairs) args.push(...pair);
      break;
    }
    case 'ports':
      fill((envoy.ports ??= []), bytesToAdd, (i) => ({
        containerPort: 10_000 + (i % PORTS_PER_PROTOCOL),
        protocol: PROTOCOLS[Math.floor(i / PORTS_PER_PROTOCOL) % PROTOCOLS.length] as string,
      }));
      break;
  }
  return pod;
}

/** Far enough under drainguard's body limit that the size tracker's slack never crosses it. */
export const LARGE_REVIEW_BYTES = DEFAULT_LIMITS.bodyLimitBytes - 16 * 1024;

/**
 * The review of the Contour pod grown with `kind` to about `targetBytes`: a big but acceptable request.
 * Throws rather than return a body the server would refuse as too large.
 */
export function largeReviewBody(kind: ContentKind, uid: string, targetBytes = LARGE_REVIEW_BYTES): string {
  const body = reviewBody(podWithContent(kind, targetBytes), uid);
  const bytes = Buffer.byteLength(body);
  if (bytes > DEFAULT_LIMITS.bodyLimitBytes) {
    throw new Error(`a ${kind} review asked for ${targetBytes} bytes came to ${bytes}, over the server's body limit of ${DEFAULT_LIMITS.bodyLimitBytes}`);
  }
  return body;
}
