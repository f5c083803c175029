/**
 * Which workload owns a pod (following ReplicaSet to Deployment, as `kubectl rollout` does), and the
 * commands that get unprotected pods rewritten: label the namespace when it is not opted in, then
 * recreate the pods through their controller.
 */
import type { Pod } from '../mutate';
import { describeFailure, type ClusterReader, type Read } from './cluster';
import type { EnvoyPodReport, Fix, WorkloadRef } from './report';

interface OwnerReference {
  kind?: string;
  name?: string;
  controller?: boolean;
}

function controllerOf(metadata: { ownerReferences?: unknown } | undefined): OwnerReference | undefined {
  const references = Array.isArray(metadata?.ownerReferences) ? (metadata.ownerReferences as OwnerReference[]) : [];
  return references.find((reference) => reference.controller === true && reference.kind && reference.name);
}

export interface ResolvedOwner {
  owner: WorkloadRef;
  /** Why the owner could not be followed further (a ReplicaSet that could not be read). */
  problem?: string;
}

/**
 * Resolves owners for many pods, reading each ReplicaSet once. Reads run a few at a time: enough to be
 * quick, few enough not to flood the API server on a large cluster.
 */
export class OwnerResolver {
  private readonly replicaSets = new Map<string, Promise<Read<{ controller?: OwnerReference }>>>();

  constructor(private readonly reader: ClusterReader) {}

  async resolve(pod: Pod): Promise<ResolvedOwner> {
    const namespace = pod.metadata?.namespace ?? '';
    const controller = controllerOf(pod.metadata as { ownerReferences?: unknown });
    if (!controller) return { owner: { kind: 'Pod', name: pod.metadata?.name ?? '', namespace } };
    const direct = { kind: controller.kind as string, name: controller.name as string, namespace };
    if (direct.kind !== 'ReplicaSet') return { owner: direct };
    const read = await this.replicaSet(namespace, direct.name);
    if (!read.ok) return { owner: direct, problem: describeFailure(read, `ReplicaSet ${namespace}/${direct.name}`) };
    const parent = read.value.controller;
    return { owner: parent?.kind === 'Deployment' ? { kind: 'Deployment', name: parent.name as string, namespace } : direct };
  }

  private replicaSet(namespace: string, name: string): Promise<Read<{ controller?: OwnerReference }>> {
    const key = `${namespace}/${name}`;
    let pending = this.replicaSets.get(key);
    if (!pending) {
      pending = this.reader.replicaSet(namespace, name).then((read) => {
        if (!read.ok) return read;
        const controller = controllerOf(read.value.metadata as { ownerReferences?: unknown });
        return { ok: true as const, value: controller ? { controller } : {} };
      });
      this.replicaSets.set(key, pending);
    }
    return pending;
  }
}

/** Runs `task` over `items` with at most `limit` in flight, keeping the order of the results. */
export async function mapWithLimit<T, R>(items: readonly T[], limit: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Whether the webhook would see a namespace's pods, and what labelling would change that. */
export interface NamespaceCoverage {
  selected: boolean;
  /** `kubectl label namespace …` when labelling is what is missing. */
  labelCommand?: string;
  /** Selector requirements labelling cannot satisfy (the namespace is excluded). */
  excludedBy?: string[];
}

/** `kubectl rollout restart` works on these; other controllers recreate deleted pods. */
const RESTARTABLE = new Set(['Deployment', 'DaemonSet', 'StatefulSet']);

export interface FixCandidate {
  pod: EnvoyPodReport;
  owner: WorkloadRef;
  coverage: NamespaceCoverage | undefined;
  /** The webhook's objectSelector selects the pod's labels. */
  objectSelected: boolean;
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;

/** Groups pods that a recreation would fix (never rewritten, by another version, or in the other delivery mode) by workload. */
export function planFixes(candidates: readonly FixCandidate[]): Fix[] {
  const groups = new Map<string, FixCandidate[]>();
  for (const candidate of candidates) {
    const { kind, namespace, name } = candidate.owner;
    const key = JSON.stringify([namespace, kind, name]);
    groups.set(key, [...(groups.get(key) ?? []), candidate]);
  }
  return [...groups.keys()].sort().map((key) => planOne(groups.get(key) as FixCandidate[]));
}

function planOne(group: readonly FixCandidate[]): Fix {
  const { owner, coverage } = group[0] as FixCandidate;
  const pods = group.map((candidate) => candidate.pod.name).sort();
  const withProtection = (protection: EnvoyPodReport['protection']) => group.filter((candidate) => candidate.pod.protection === protection).map((candidate) => candidate.pod);
  const notRewritten = withProtection('none').length;
  const otherVersion = withProtection('other-version');
  const versions = [...new Set(otherVersion.map((pod) => pod.drainguardVersion))].sort();
  // Rewritten by this version, in the delivery mode the configuration no longer says.
  const deliveries = withProtection('other-delivery').map((pod) => pod.delivery ?? 'copy');
  const why = [
    ...(notRewritten > 0 ? [`${plural(notRewritten, 'pod')} not rewritten by drainguard`] : []),
    ...(otherVersion.length > 0 ? [`${plural(otherVersion.length, 'pod')} rewritten by drainguard ${versions.join(', ')}`] : []),
    ...[...new Set(deliveries)].sort().map((delivery) => `${plural(deliveries.filter((other) => other === delivery).length, 'pod')} rewritten for installer.delivery: ${delivery}`),
  ].join(', ');
  const base = { workload: owner, pods, why };

  if (coverage?.excludedBy?.length) {
    return {
      ...base,
      commands: [],
      note: `namespace ${owner.namespace} is excluded by the webhook's namespaceSelector (${coverage.excludedBy.join(', ')}): drainguard never rewrites pods there`,
    };
  }
  if (group.some((candidate) => !candidate.objectSelected)) {
    return { ...base, commands: [], note: "the webhook's objectSelector does not select these pods' labels: change webhook.objectSelector, then restart the workload" };
  }
  const commands = coverage?.selected === false && coverage.labelCommand ? [coverage.labelCommand] : [];
  const inNamespace = `kubectl -n ${owner.namespace}`;
  if (RESTARTABLE.has(owner.kind)) {
    return { ...base, commands: [...commands, `${inNamespace} rollout restart ${owner.kind.toLowerCase()}/${owner.name}`] };
  }
  if (owner.kind === 'Pod') {
    return { ...base, commands, note: 'no controller owns it: delete it and create it again from its manifest' };
  }
  return {
    ...base,
    commands: [...commands, `${inNamespace} delete pod ${pods.join(' ')}`],
    note: `its ${owner.kind} ${owner.name} creates the pods again`,
  };
}
