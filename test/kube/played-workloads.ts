/**
 * Envoy workloads whose pods the test plays the kubelet of (test/support/cluster/played-pods), for the
 * suites that need drain outcomes of their own choosing in the reporter's Events: the workload is
 * created from a fixture pod (test/kube/check-workloads), its controller makes the pods, the webhook
 * rewrites them, and the test starts them and ends them with a drain record. Every helper takes the cluster it works on (the shared one, or a suite's own).
 */
import type { Pod as PodTemplate } from '../../src/mutate';
import type { ContainerEnd } from '../support/cluster/played-pods';
import { deletePlayedPod, playedByTest, runPlayedPod } from '../support/cluster/played-pods';
import type { Pod } from '../support/cluster/pod-spec';
import { eventually } from '../support/cluster/lane';
import { createWorkload } from './check-workloads';
import type { ClusterHandle } from './report/workloads';

export interface PlayedWorkload {
  namespace: string;
  kind: 'Deployment' | 'DaemonSet';
  name: string;
  uid: string;
  /** The pods' label selector. */
  selector: string;
}

/** A Deployment (one replica) or DaemonSet of `template`, labelled `workload: NAME`, whose pods the test plays the kubelet of. */
export async function playedWorkload(cluster: ClusterHandle, namespace: string, kind: PlayedWorkload['kind'], name: string, template: PodTemplate): Promise<PlayedWorkload> {
  await createWorkload(cluster.api, namespace, kind, name, playedByTest(template), { labels: { workload: name } });
  const stored = await cluster.api.get(`/apis/apps/v1/namespaces/${namespace}/${kind.toLowerCase()}s/${name}`);
  return { namespace, kind, name, uid: stored.metadata.uid!, selector: `workload=${name}` };
}

/**
 * The workload's pods not being deleted, once there are `count` bound to a node, each protected by the webhook and
 * started (Running) by the test as its kubelet; sorted by name.
 */
export async function runningPods(cluster: ClusterHandle, workload: PlayedWorkload, count: number): Promise<Pod[]> {
  const pods = await eventually(`${count} pods of ${workload.kind} ${workload.namespace}/${workload.name}`, async () => {
    const list = await cluster.api.list<Pod>(`/api/v1/namespaces/${workload.namespace}/pods?labelSelector=${encodeURIComponent(workload.selector)}`);
    const live = list.items.filter((pod) => !pod.metadata.deletionTimestamp);
    // A kubelet starts only pods bound to its node; an unbound pod would also be deleted at once, with no grace.
    return live.length === count && live.every((pod) => pod.spec.nodeName) ? live : undefined;
  });
  const running: Pod[] = [];
  for (const pod of pods) running.push(pod.status?.phase === 'Running' ? pod : await runPlayedPod(cluster.api, workload.namespace, pod.metadata.name));
  return running.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

/** Envoy's exit after its preStop hook wrote `message`: SIGTERM from the kubelet, exit 0. */
export const drainedExit = (message: string): ContainerEnd => ({ exitCode: 0, message });

/**
 * The workload's one pod deleted, Envoy ending with `end` at `finishedAt` (the kubelet's clock); its
 * controller then makes a replacement. Returns the ended pod's name.
 */
export async function endPod(cluster: ClusterHandle, workload: PlayedWorkload, end: ContainerEnd, finishedAt: Date): Promise<string> {
  const [pod] = await runningPods(cluster, workload, 1);
  await deletePlayedPod(cluster.api, pod!, { envoy: end }, finishedAt);
  return pod!.metadata.name;
}
