/**
 * The reporter's Kubernetes calls, over the lean client of src/kube-api (credentials applied by
 * client-node's KubeConfig):
 *
 *   list, watch pods   labelSelector drainguard.io/protected=true, all namespaces: the list in pages
 *                      of 500, each read item by item as it arrives; then a watch from the list's
 *                      resourceVersion, with bookmarks; a 410 Expired lists again
 *   create events      the pod's and the workload's Event
 *   get events         only after a create whose answer was lost (./reporter.ts)
 *   get replicasets    a Deployment pod's ReplicaSet, for the Deployment's uid
 *
 * Every pod that arrives is reduced to its view (./pod-view.ts) before anything else sees it, and the
 * watch (../kube-api/list-watch.ts) keeps of each pod only what a relist needs to tell what vanished
 * meanwhile (`WatchedPod`): no pod, page or answer is ever held whole. Which of them are reported is
 * the admission scope's decision (./admission-scope.ts), made per termination by the reporter.
 */
import type { Logger } from 'pino';
import { segment, type KubeApiClient } from '../kube-api/client';
import { answerFailure, succeeded } from '../kube-api/failure';
import { listWatch } from '../kube-api/list-watch';
import { PROTECTED_LABEL, PROTECTED_LABEL_VALUE } from '../mutate';
import { REPORTED_BY_ANNOTATION, type EventBody } from './drain-event';
import { viewPod, workloadOf, type ControllerRef, type PodView, type WatchedPod } from './pod-view';
import type { ReporterApi } from './reporter';

/** The label the webhook puts on every pod whose drain it installed: the watch's label selector. */
export const PROTECTED_SELECTOR = `${PROTECTED_LABEL}=${PROTECTED_LABEL_VALUE}`;

export function kubernetesReporterApi(client: KubeApiClient): ReporterApi {
  return {
    async createEvent(event: EventBody) {
      const { namespace, name } = event.metadata;
      const what = `create event ${namespace}/${name}`;
      const answer = await client.request('POST', `/api/v1/namespaces/${segment(namespace)}/events`, event);
      if (succeeded(answer.status)) return 'created';
      if (answer.status === 409) return 'exists';
      throw answerFailure(what, answer);
    },
    async eventReportedBy(namespace, name) {
      const what = `get event ${namespace}/${name}`;
      const answer = await client.request('GET', `/api/v1/namespaces/${segment(namespace)}/events/${segment(name)}`);
      if (answer.status === 404) return undefined;
      if (!succeeded(answer.status)) throw answerFailure(what, answer);
      const by = (JSON.parse(answer.text) as { metadata?: { annotations?: Record<string, unknown> } }).metadata?.annotations?.[REPORTED_BY_ANNOTATION];
      return typeof by === 'string' ? by : undefined;
    },
    async replicaSetController(namespace, name) {
      const what = `get replicaset ${namespace}/${name}`;
      const answer = await client.request('GET', `/apis/apps/v1/namespaces/${segment(namespace)}/replicasets/${segment(name)}`);
      if (answer.status === 404) return undefined;
      if (!succeeded(answer.status)) throw answerFailure(what, answer);
      const owners = (JSON.parse(answer.text) as { metadata?: { ownerReferences?: Partial<ControllerRef & { controller: boolean }>[] } }).metadata?.ownerReferences ?? [];
      const reference = owners.find((owner) => owner.controller === true);
      return reference ? { apiVersion: String(reference.apiVersion), kind: String(reference.kind), name: String(reference.name), uid: String(reference.uid) } : undefined;
    },
  };
}

export interface PodWatchHandlers {
  /** A pod was added, changed, or listed again with a new resourceVersion. */
  seen(pod: PodView): void;
  /** The watch delivered a pod's deletion, with its last status. */
  deleted(pod: PodView): void;
  /** A relist no longer lists a pod: what this watch last knew of it. */
  vanished(pod: WatchedPod): void;
}

export interface PodWatch {
  /** Pods the watch knows. */
  readonly watchedPods: number;
  /** The first list has completed. */
  readonly synced: boolean;
  /** Listing or watching works now (false while it is failing and retrying). */
  readonly healthy: boolean;
  /** The resourceVersion the watch has seen up to. */
  readonly resourceVersion: number;
  /** Resolves once every change up to `resourceVersion` has been handed to the handlers. */
  reached(resourceVersion: number): Promise<void>;
  stop(): Promise<void>;
}

export interface PodWatchOptions {
  handlers: PodWatchHandlers;
  logger: Logger;
  /** A watch with nothing arriving for its own timeout plus this long is given up and resumed. */
  requestTimeoutMs: number;
  /** First delay before restarting a failed list or watch; doubled per failure up to 5 s. */
  restartDelayMs?: number;
}

/** The same text for the same value: namespaces, workloads and container names repeat across pods. */
class Interned {
  private readonly values = new Map<string, string>();
  of(value: string): string {
    const known = this.values.get(value);
    if (known !== undefined) return known;
    // Bounded by what the cluster holds; reset rather than grow without end on a churning cluster.
    if (this.values.size >= 65_536) this.values.clear();
    this.values.set(value, value);
    return value;
  }
}

/**
 * Watches the protected pods of every namespace (../kube-api/list-watch.ts), keeping of each pod only
 * what a relist needs to tell what vanished meanwhile (`WatchedPod`).
 */
export function watchProtectedPods(client: KubeApiClient, options: PodWatchOptions): PodWatch {
  const interned = new Interned();
  const pods = listWatch<PodView, WatchedPod>(client, {
    what: 'protected pods',
    path: '/api/v1/pods',
    selector: `labelSelector=${encodeURIComponent(PROTECTED_SELECTOR)}`,
    view: viewPod,
    keyOf: (pod) => `${pod.metadata.namespace}/${pod.metadata.name}`,
    keep: (pod) => ({
      namespace: interned.of(pod.metadata.namespace),
      name: pod.metadata.name,
      uid: pod.metadata.uid,
      resourceVersion: pod.metadata.resourceVersion,
      workload: interned.of(workloadOf(pod).label),
      running: pod.envoy.filter((container) => container.ended === undefined).map((container) => interned.of(container.name)),
    }),
    handlers: options.handlers,
    logger: options.logger,
    requestTimeoutMs: options.requestTimeoutMs,
    ...(options.restartDelayMs !== undefined ? { restartDelayMs: options.restartDelayMs } : {}),
  });
  return {
    get watchedPods() {
      return pods.size;
    },
    get synced() {
      return pods.synced;
    },
    get healthy() {
      return pods.healthy;
    },
    get resourceVersion() {
      return pods.resourceVersion;
    },
    reached: (version) => pods.reached(version),
    stop: () => pods.stop(),
  };
}
