/**
 * Whether the pods the real API server stored for a workload are what `drainguard inject` writes, the
 * comparison the admission suites share (test/kube/admission-fixtures.test.ts, over the whole corpus;
 * test/kube/admission-image-volume.test.ts, in image-volume mode). For a workload's pod template T
 * (as applied), inject's output I for it (with the release's configuration), the pods S its controller
 * made in a namespace opted in to the release, and D, the API server's reading of I (a server-side dry
 * run creating I as a Pod in a namespace no webhook sees: defaulting, validation and the built-in
 * admission plugins, no drainguard):
 *
 * - W, the fields drainguard writes: the paths where I differs from T, lists of named items
 *   (containers, volumes, env, mounts, …) keyed by name (./pod-comparison);
 * - at every path of W, D holds what inject wrote: every scalar and list element unchanged; fields only
 *   D has are allowed inside the objects drainguard wrote (defaulting), elements only D has in a list
 *   drainguard wrote are not, but for the ServiceAccount token's volume and mounts. Anything else is
 *   the API server changing what drainguard writes (a finding);
 * - each S equals D in every field but those the pod's controller and the scheduler set (the pod's
 *   identity, the controllers' hash labels, the node's topology labels copied at binding,
 *   spec.nodeName, and for a DaemonSet's pods the node affinity and tolerations its controller adds),
 *   none of which is in W; the token volume's random name and its place among the volumes and mounts
 *   (it is appended before or after drainguard's, by the order the two ran) are the only
 *   normalisation. So the webhook wrote exactly what inject writes, no more and no less, and the API
 *   server kept it;
 * - drainguard's second look changes nothing: the pure core on each stored pod (what a re-invocation
 *   receives), and the webhook on I (a dry run in the opted-in namespace, A) against D.
 */
import type { Config } from '../../src/config';
import { mutate, type Pod } from '../../src/mutate';
import { asSentByApiServer } from '../support/upstream-fixtures';
import { adminApi } from '../support/cluster/lane';
import { isRewritten, type StoredPod } from './admission-kit';
import { coverage, keyed, pathText, valueAt, writesBetween, type Path, type Write } from './pod-comparison';

export type PodTemplate = { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: StoredPod['spec'] };

export type WorkloadKind = 'Deployment' | 'DaemonSet' | 'Pod';

/** A workload as applied and as inject rewrote it. */
export interface InjectedWorkload {
  kind: WorkloadKind;
  /** The pod template as applied (a Pod's own metadata and spec). */
  template: PodTemplate;
  /** drainguard inject's output for it. */
  injected: PodTemplate;
}

/** What the API server made of one workload. */
export interface Admitted {
  /** The pods its controller created, as stored. */
  pods: StoredPod[];
  /** inject's pod template as the API server reads it (dry run, no webhook): D. */
  reference: StoredPod;
  /** The same, sent to drainguard again (dry run in the opted-in namespace): A. */
  again: StoredPod;
}

/** A pod template as a Pod, created by a server-side dry run: the API server's reading of it, nothing stored. */
export async function dryRunPod(namespace: string, template: PodTemplate, generateName: string): Promise<StoredPod> {
  const { name: _name, ...metadata } = (template.metadata ?? {}) as PodTemplate['metadata'] & { name?: string };
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { ...metadata, generateName, namespace }, spec: template.spec };
  return adminApi().create<StoredPod>(`/api/v1/namespaces/${namespace}/pods?dryRun=All`, pod);
}

/** D and A for inject's template: read by the API server where no webhook sees it, and where the release's does. */
export async function referencesOf(injected: PodTemplate, generateName: string, namespaces: { plain: string; optedIn: string }): Promise<Pick<Admitted, 'reference' | 'again'>> {
  return { reference: await dryRunPod(namespaces.plain, injected, generateName), again: await dryRunPod(namespaces.optedIn, injected, generateName) };
}

/** Labels the pod's controller sets, and the node's topology labels the API server copies at binding. */
const CONTROLLER_LABELS = ['pod-template-hash', 'controller-revision-hash', 'pod-template-generation', 'topology.kubernetes.io/zone', 'topology.kubernetes.io/region'];
/** The ServiceAccount admission plugin's token volume: a random suffix per pod. */
const TOKEN_VOLUME = /^kube-api-access-[a-z0-9]{5}$/;

/** The fields of a stored pod that only the controllers and the scheduler set, as paths of the keyed view. */
export function controllerOwned(kind: WorkloadKind): Path[] {
  return [
    ...CONTROLLER_LABELS.map((label) => ['metadata', 'labels', label]),
    ['spec', 'nodeName'],
    ...(kind === 'DaemonSet' ? [['spec', 'affinity'], ['spec', 'tolerations']] : []),
  ];
}

/**
 * What the comparison reads of a pod (labels, annotations, spec), without the controller-owned fields.
 * The ServiceAccount token volume gets a random name per pod, so its name is made equal; and it is
 * appended by an admission plugin that runs before the webhooks, so whether it comes before or after a
 * volume or mount drainguard appends depends only on which ran first: it is put last in both.
 */
export function compared(pod: StoredPod | PodTemplate, kind: WorkloadKind): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify({ metadata: { labels: pod.metadata?.labels ?? {}, annotations: pod.metadata?.annotations ?? {} }, spec: pod.spec })) as { spec: StoredPod['spec'] };
  const tokenLast = <T extends { name: string }>(list: T[] | undefined) =>
    list && [...list.filter((item) => !TOKEN_VOLUME.test(item.name)), ...list.filter((item) => TOKEN_VOLUME.test(item.name)).map((item) => ({ ...item, name: 'kube-api-access-(generated)' }))];
  if (copy.spec.volumes) copy.spec.volumes = tokenLast(copy.spec.volumes);
  for (const container of [...copy.spec.containers, ...(copy.spec.initContainers ?? [])]) if (container.volumeMounts) container.volumeMounts = tokenLast(container.volumeMounts);
  for (const path of controllerOwned(kind)) {
    const parent = valueAt(copy, path.slice(0, -1)) as Record<string, unknown> | undefined;
    if (parent) delete parent[path.at(-1)!];
  }
  return copy;
}

function isTokenVolumeOrMount(path: Path): boolean {
  const last = path.at(-1) ?? '';
  return last.startsWith('[name=') && TOKEN_VOLUME.test(last.slice('[name='.length, -1));
}

export const startsWith = (path: Path, prefix: Path) => prefix.every((segment, index) => path[index] === segment);

/** What drainguard writes to a workload's pods: inject's template against the input's, as the API server receives them. */
export function writesOf(workload: InjectedWorkload): Write[] {
  const input = asSentByApiServer(workload.template);
  const output = asSentByApiServer(workload.injected);
  return writesBetween(keyed({ metadata: input.metadata ?? {}, spec: input.spec }), keyed({ metadata: output.metadata ?? {}, spec: output.spec }));
}

/** Where the API server's reading of inject's pod departs from what inject wrote (findings), and what it defaulted. */
export function apiServerChanges(workload: InjectedWorkload, reference: StoredPod): { changed: string[]; defaulted: string[] } {
  const stored = keyed(reference);
  const written = keyed(asSentByApiServer(workload.injected));
  const changed: string[] = [];
  const defaulted: string[] = [];
  for (const write of writesOf(workload)) {
    if (write.kind === 'removed') {
      if (valueAt(stored, write.path) !== undefined) changed.push(`${pathText(write.path)}: drainguard removed it, the API server stores ${JSON.stringify(valueAt(stored, write.path))}`);
      continue;
    }
    const result = coverage(valueAt(stored, write.path), valueAt(written, write.path), write.path, isTokenVolumeOrMount);
    changed.push(...result.changed);
    defaulted.push(...result.added);
  }
  return { changed, defaulted };
}

/** Fields where two pods differ, for a readable failure (the assertion after it compares them whole, order included). */
export function differences(actual: unknown, expected: unknown): string[] {
  return writesBetween(keyed(expected), keyed(actual)).map(
    (write) => `${pathText(write.path)}: expected ${JSON.stringify(valueAt(keyed(expected), write.path))}, stored ${JSON.stringify(valueAt(keyed(actual), write.path))}`,
  );
}

/**
 * The comparison above, as assertions: the API server kept every field inject writes, each stored pod
 * is D but for the controllers' fields, and a second look by drainguard (the core on each stored pod,
 * the webhook on inject's pod) writes nothing.
 */
export function expectStoredAsInjected(workload: InjectedWorkload, admitted: Admitted, config: Config): void {
  const { pods, reference, again } = admitted;
  const writes = writesOf(workload);
  // The controllers' and the scheduler's fields are never drainguard's.
  for (const owned of controllerOwned(workload.kind)) expect(writes.filter((write) => startsWith(write.path, owned) || startsWith(owned, write.path))).toEqual([]);

  expect(apiServerChanges(workload, reference).changed).toEqual([]);
  const expected = compared(reference, workload.kind);
  for (const pod of pods) {
    expect(isRewritten(pod)).toBe(writes.length > 0);
    expect(differences(compared(pod, workload.kind), expected)).toEqual([]);
    expect(compared(pod, workload.kind)).toEqual(expected);
  }
  for (const pod of pods) expect(mutate(pod as Pod, config)).toMatchObject({ status: writes.length > 0 ? 'unchanged' : 'skipped', patch: [] });
  expect(differences(compared(again, workload.kind), compared(reference, workload.kind))).toEqual([]);
}
