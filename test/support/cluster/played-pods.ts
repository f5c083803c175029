/**
 * Pods whose kubelet is the test. The kubelet stand-in (./kubelet) runs every pod bound to its nodes
 * except those whose pod template carries PLAYED_BY_TEST; for these the test writes through the API what
 * a node's kubelet writes, in the kubelet's order: the running status (init containers completed, every
 * container running, Ready), a container that ends by itself and is restarted (`lastState`,
 * `restartCount`), and a deletion carried out (the containers' terminated states with their termination
 * messages and the kubelet's `finishedAt`, the terminal phase, then the final delete with grace 0).
 *
 * For the outcomes no running Envoy simulator gives on demand: a drain record of the test's choosing
 * (a deadline with connections left on a named listener, UDP sessions, a killed drain), an OOM kill, a
 * kubelet clock the test sets. What reads these pods (the reporter, `drainguard check`) sees the same
 * API objects and watch events as from a kubelet; nothing runs for them (no process, no pod IP).
 */
import type { KubeApi } from './api';
import { imageId, kubeTime, newContainerId, type ContainerStatus, type Pod, type TerminatedState } from './pod-spec';

/** The pod annotation (set in a workload's pod template) that keeps the stand-in from running the pod. */
export const PLAYED_BY_TEST = 'test.drainguard.io/kubelet';
const PLAYED_BY_TEST_VALUE = 'played-by-test';

/** Whether the stand-in leaves the pod to the test. */
export function isPlayedByTest(pod: { metadata: { annotations?: Record<string, string> } }): boolean {
  return pod.metadata.annotations?.[PLAYED_BY_TEST] === PLAYED_BY_TEST_VALUE;
}

/** `template` (a Pod or pod template) with PLAYED_BY_TEST: its pods are the test's to play. */
export function playedByTest<T extends { metadata?: { annotations?: Record<string, string> } }>(template: T): T {
  return { ...template, metadata: { ...template.metadata, annotations: { ...template.metadata?.annotations, [PLAYED_BY_TEST]: PLAYED_BY_TEST_VALUE } } };
}

/** How one container ended: the runtime's exit code and reason, and what its termination message file held. */
export interface ContainerEnd {
  exitCode: number;
  /** `Completed` for exit 0, `Error` otherwise, unless given (`OOMKilled`, …). */
  reason?: string;
  /** The termination message as the kubelet stores it (a drain record: well under its 4096 bytes). */
  message?: string;
}

const podPath = (namespace: string, name: string) => `/api/v1/namespaces/${namespace}/pods/${name}`;

function terminated(status: ContainerStatus, end: ContainerEnd, finishedAt: Date): TerminatedState {
  return {
    exitCode: end.exitCode,
    reason: end.reason ?? (end.exitCode === 0 ? 'Completed' : 'Error'),
    ...(end.message ? { message: end.message } : {}),
    startedAt: status.state.running?.startedAt ?? kubeTime(finishedAt),
    finishedAt: kubeTime(finishedAt),
    containerID: status.containerID ?? newContainerId(),
  };
}

async function patchStatus(api: KubeApi, pod: Pod, status: Record<string, unknown>): Promise<Pod> {
  return api.patch<Pod>(`${podPath(pod.metadata.namespace!, pod.metadata.name)}/status`, { status }, 'merge');
}

/**
 * The pod started as its kubelet starts it: init containers completed (a native sidecar running), every
 * container running and ready, phase Running. Returns the pod as stored.
 */
export async function runPlayedPod(api: KubeApi, namespace: string, name: string, at = new Date()): Promise<Pod> {
  const pod = await api.get<Pod>(podPath(namespace, name));
  const startedAt = kubeTime(at);
  const running = (spec: { name: string; image: string }): ContainerStatus => ({
    name: spec.name,
    state: { running: { startedAt } },
    lastState: {},
    ready: true,
    started: true,
    restartCount: 0,
    image: spec.image,
    imageID: imageId(spec.image),
    containerID: newContainerId(),
  });
  const initContainers = pod.spec.initContainers ?? [];
  const condition = (type: string) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: startedAt });
  return patchStatus(api, pod, {
    phase: 'Running',
    startTime: startedAt,
    conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map(condition),
    ...(initContainers.length > 0
      ? {
          initContainerStatuses: initContainers.map((spec): ContainerStatus => {
            if (spec.restartPolicy === 'Always') return running(spec);
            const status = running(spec);
            return { ...status, state: { terminated: terminated(status, { exitCode: 0 }, at) }, ready: false, started: false };
          }),
        }
      : {}),
    containerStatuses: pod.spec.containers.map(running),
  });
}

/**
 * Container `container` ended by itself (`end`, at `at`) and was restarted, as restartPolicy Always
 * does: the ended container in `lastState`, a new one running, `restartCount` one more.
 */
export async function restartPlayedContainer(api: KubeApi, pod: Pod, container: string, end: ContainerEnd, at = new Date()): Promise<Pod> {
  const current = await api.get<Pod>(podPath(pod.metadata.namespace!, pod.metadata.name));
  const statuses = (current.status?.containerStatuses ?? []) as ContainerStatus[];
  const status = statuses.find((candidate) => candidate.name === container);
  if (!status?.state.running) throw new Error(`container ${container} of ${pod.metadata.name} is not running`);
  const restarted: ContainerStatus = {
    ...status,
    state: { running: { startedAt: kubeTime(at) } },
    lastState: { terminated: terminated(status, end, at) },
    restartCount: status.restartCount + 1,
    containerID: newContainerId(),
  };
  return patchStatus(api, current, { containerStatuses: statuses.map((candidate) => (candidate.name === container ? restarted : candidate)) });
}

/**
 * A deletion carried out, as `kubectl delete pod` and the kubelet do it: the graceful delete (the pod
 * gets its deletionTimestamp), then each container's end (those `ends` does not name exit 0 with no
 * message) at `finishedAt`, the terminal phase, and the kubelet's final delete. Resolves once the pod
 * is gone from the API.
 */
export async function deletePlayedPod(api: KubeApi, pod: Pod, ends: Record<string, ContainerEnd>, finishedAt = new Date()): Promise<void> {
  const path = podPath(pod.metadata.namespace!, pod.metadata.name);
  await api.delete(path);
  const deleting = await api.get<Pod>(path);
  const statuses = (deleting.status?.containerStatuses ?? []) as ContainerStatus[];
  const ended = statuses.map((status): ContainerStatus => ({
    ...status,
    state: { terminated: terminated(status, ends[status.name] ?? { exitCode: 0 }, finishedAt) },
    ready: false,
    started: false,
  }));
  const phase = ended.every((status) => status.state.terminated!.exitCode === 0) ? 'Succeeded' : 'Failed';
  const conditions = ((deleting.status?.conditions ?? []) as { type: string; status: string }[]).map((condition) =>
    ['Ready', 'ContainersReady'].includes(condition.type) ? { ...condition, status: 'False', lastTransitionTime: kubeTime(finishedAt) } : condition,
  );
  await patchStatus(api, deleting, { phase, conditions, containerStatuses: ended });
  await api.delete(path, { gracePeriodSeconds: 0, uid: deleting.metadata.uid });
}
