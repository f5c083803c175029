/**
 * The kubelet's side of a pod's life, written into the API double as the kubelet writes it (status
 * updates through the status manager, then the final deletion), so a watcher sees the same sequence
 * of objects it sees in a cluster:
 *
 *   run            → phase Running, every container `state.running` with a fresh containerID
 *   beginDeletion  → what `kubectl delete` / a controller's delete does: deletionTimestamp (now + grace)
 *                    and deletionGracePeriodSeconds; the pod stays, the kubelet now runs preStop hooks
 *   containerExited→ one container ended: `state.terminated` {exitCode, reason, message, startedAt,
 *                    finishedAt, containerID}, ready false
 *   finishDeletion → terminal phase (Succeeded when every container exited 0, else Failed), then the
 *                    kubelet's final delete: DELETED to watchers, with that last status
 *   restartContainer → restartPolicy Always on a pod that is not being deleted: `lastState.terminated`
 *                    keeps the ended container, a new one runs (new containerID), restartCount + 1
 *
 * The termination message is read as the kubelet reads it (pkg/kubelet/kuberuntime
 * `getTerminationMessage`): at most the last 4096 bytes of the file (tail.ReadAtMost with
 * MaxContainerTerminationMessageLength); with `FallbackToLogsOnError`, an empty file and a non-zero exit
 * take the end of the container's log instead; the runtime's own message goes first
 * (`convertToKubeContainerStatus`), and the status manager keeps the head of 12288 / (number of
 * containers) bytes of it (`normalizeStatus`).
 */
import { randomBytes } from 'node:crypto';
import type { KubeApiDouble, KubeObject } from '../kube-api-double';
import { headBytes as head, MAX_FALLBACK_LOG_BYTES, MAX_POD_TERMINATION_MESSAGE_BYTES, MAX_TERMINATION_MESSAGE_BYTES, tailBytes as tail } from '../cluster/termination-message';

export { MAX_TERMINATION_MESSAGE_BYTES, readTerminationMessageFile } from '../cluster/termination-message';

export interface ContainerExit {
  exitCode: number;
  /** The runtime's reason: `Completed` (exit 0), `Error`, `OOMKilled`, …; derived from the exit code when absent. */
  reason?: string;
  /** What the termination message file held (its last 4096 bytes become the message). */
  message?: string;
  /** The container's log, for FallbackToLogsOnError. */
  log?: string;
  /** The runtime's own message, which the kubelet puts before the file's text (`<runtime>: <file>`). */
  runtimeMessage?: string;
}

interface ContainerSpec {
  name: string;
  terminationMessagePolicy?: string;
}

interface TerminatedState {
  exitCode: number;
  reason: string;
  message?: string;
  startedAt: string;
  finishedAt: string;
  containerID: string;
}

interface ContainerStatus {
  name: string;
  state: { running?: { startedAt: string }; terminated?: TerminatedState; waiting?: { reason: string } };
  lastState: { terminated?: TerminatedState };
  ready: boolean;
  started: boolean;
  restartCount: number;
  image: string;
  imageID: string;
  containerID: string;
}

interface PodStatus {
  phase: string;
  containerStatuses: ContainerStatus[];
  [key: string]: unknown;
}

/** `containerd://` and 64 hex digits, as containerd names containers. */
export function newContainerId(): string {
  return `containerd://${randomBytes(32).toString('hex')}`;
}

export class KubeletSimulator {
  constructor(
    private readonly double: KubeApiDouble,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private time(): string {
    // metav1.Time: RFC 3339, whole seconds.
    return this.now().toISOString().replace(/\.\d{3}Z$/, 'Z');
  }

  /** Stores the pod (as its controller created it) and starts it: Running, each container running. */
  run(pod: KubeObject): KubeObject {
    const containers = ((pod.spec as { containers?: ContainerSpec[] })?.containers ?? []) as ContainerSpec[];
    const startedAt = this.time();
    const status: PodStatus = {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: startedAt }],
      hostIP: '10.0.0.1',
      podIP: `10.1.${randomBytes(1)[0]}.${randomBytes(1)[0]}`,
      startTime: startedAt,
      containerStatuses: containers.map((container) => ({
        name: container.name,
        state: { running: { startedAt } },
        lastState: {},
        ready: true,
        started: true,
        restartCount: 0,
        image: 'docker.io/envoyproxy/envoy:v1.31.2',
        imageID: `docker.io/envoyproxy/envoy@sha256:${randomBytes(32).toString('hex')}`,
        containerID: newContainerId(),
      })),
    };
    return this.double.put({ ...pod, status });
  }

  /** The API server's graceful delete: deletionTimestamp = now + the pod's grace period. */
  beginDeletion(namespace: string, name: string, gracePeriodSeconds?: number): KubeObject {
    return this.double.update('pods', namespace, name, (pod) => {
      const grace = gracePeriodSeconds ?? ((pod.spec as { terminationGracePeriodSeconds?: number }).terminationGracePeriodSeconds ?? 30);
      const deletion = new Date(this.now().getTime() + grace * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
      return { ...pod, metadata: { ...pod.metadata, deletionTimestamp: deletion, deletionGracePeriodSeconds: grace } };
    });
  }

  /** One container ended; its termination message is read as the kubelet reads it. */
  containerExited(namespace: string, name: string, container: string, exit: ContainerExit): KubeObject {
    return this.double.update('pods', namespace, name, (pod) => {
      const spec = ((pod.spec as { containers: ContainerSpec[] }).containers ?? []).find((c) => c.name === container);
      const status = pod.status as PodStatus;
      const current = status.containerStatuses.find((c) => c.name === container);
      if (!spec || !current) throw new Error(`pod ${namespace}/${name} has no container ${container}`);
      if (!current.state.running) throw new Error(`container ${container} of ${namespace}/${name} is not running`);
      let text = tail(exit.message ?? '', MAX_TERMINATION_MESSAGE_BYTES);
      if (text === '' && spec.terminationMessagePolicy === 'FallbackToLogsOnError' && exit.exitCode !== 0) {
        text = tail(exit.log ?? '', MAX_FALLBACK_LOG_BYTES);
      }
      const joined = exit.runtimeMessage && text ? `${exit.runtimeMessage}: ${text}` : exit.runtimeMessage || text;
      // The status manager's normalizeStatus: the pod's budget shared by all its containers, the head kept.
      const containers = ['containers', 'initContainers', 'ephemeralContainers'].reduce((n, key) => n + (((pod.spec as Record<string, unknown[]>)[key] ?? []).length), 0);
      const message = head(joined, Math.floor(MAX_POD_TERMINATION_MESSAGE_BYTES / Math.max(containers, 1)));
      const terminated: TerminatedState = {
        exitCode: exit.exitCode,
        reason: exit.reason ?? (exit.exitCode === 0 ? 'Completed' : 'Error'),
        ...(message !== '' ? { message } : {}),
        startedAt: current.state.running.startedAt,
        finishedAt: this.time(),
        containerID: current.containerID,
      };
      const updated: ContainerStatus = { ...current, state: { terminated }, ready: false, started: false };
      return { ...pod, status: { ...status, containerStatuses: status.containerStatuses.map((c) => (c.name === container ? updated : c)) } };
    });
  }

  /** Every container has ended: the terminal phase, then the kubelet's final delete. */
  finishDeletion(namespace: string, name: string): KubeObject {
    this.double.update('pods', namespace, name, (pod) => {
      const status = pod.status as PodStatus;
      const ended = status.containerStatuses.map((c) => c.state.terminated);
      if (ended.some((state) => state === undefined)) throw new Error(`pod ${namespace}/${name} still has running containers`);
      const phase = ended.every((state) => state!.exitCode === 0) ? 'Succeeded' : 'Failed';
      return { ...pod, status: { ...status, phase } };
    });
    return this.double.remove('pods', namespace, name);
  }

  /**
   * A pod's deletion from start to end, as a rollout does it: the delete, each container's exit (in
   * the order given; a container not named exits 0 with no message), the final delete.
   */
  deletePod(namespace: string, name: string, exits: Record<string, ContainerExit>): KubeObject {
    const pod = this.beginDeletion(namespace, name);
    const containers = ((pod.spec as { containers?: ContainerSpec[] })?.containers ?? []).map((c) => c.name);
    for (const container of [...Object.keys(exits), ...containers.filter((c) => !(c in exits))]) {
      this.containerExited(namespace, name, container, exits[container] ?? { exitCode: 0 });
    }
    return this.finishDeletion(namespace, name);
  }

  /** restartPolicy Always: the ended container moves to lastState and a new one runs. */
  restartContainer(namespace: string, name: string, container: string): KubeObject {
    return this.double.update('pods', namespace, name, (pod) => {
      if ((pod.metadata as { deletionTimestamp?: string }).deletionTimestamp) throw new Error(`pod ${namespace}/${name} is being deleted: nothing restarts`);
      const status = pod.status as PodStatus;
      const current = status.containerStatuses.find((c) => c.name === container);
      if (!current?.state.terminated) throw new Error(`container ${container} of ${namespace}/${name} has not ended`);
      const restarted: ContainerStatus = {
        ...current,
        state: { running: { startedAt: this.time() } },
        lastState: { terminated: current.state.terminated },
        ready: true,
        started: true,
        restartCount: current.restartCount + 1,
        containerID: newContainerId(),
      };
      return { ...pod, status: { ...status, containerStatuses: status.containerStatuses.map((c) => (c.name === container ? restarted : c)) } };
    });
  }
}
