/**
 * The reporter's Kubernetes calls, through @kubernetes/client-node:
 *
 *   list, watch pods   labelSelector drainguard.io/protected=true, all namespaces (client-node's
 *                      ListWatch informer: list, then watch from the list's resourceVersion; a 410
 *                      Expired relists; bookmarks keep the resourceVersion current)
 *   create events      the pod's and the workload's Event
 *   get events         only after a create whose answer was lost (./reporter.ts)
 *   get replicasets    a Deployment pod's ReplicaSet, for the Deployment's uid
 *
 * The informer's cache holds pod views (./pod-view.ts), never whole pods: the list is read a page
 * at a time and every object is reduced before the cache sees it.
 */
import type * as k8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import type { Logger } from 'pino';
import { loadKubernetesClient, requestTimeoutOptions } from '../certs/kube';
import { PROTECTED_LABEL, PROTECTED_LABEL_VALUE } from '../mutate';
import { REPORTED_BY_ANNOTATION, type EventBody } from './drain-event';
import { viewPod, type ControllerRef, type PodView } from './pod-view';
import { ApiFailure, type ReporterApi } from './reporter';

/** The label the webhook puts on every pod whose drain it installed: the watch's label selector. */
export const PROTECTED_SELECTOR = `${PROTECTED_LABEL}=${PROTECTED_LABEL_VALUE}`;

/** The longest wait before listing or watching again after a failure. */
const MAX_RESTART_DELAY_MS = 5000;

/** Pods per list page (kubectl's page size): memory during a relist stays one page of whole pods. */
const LIST_PAGE_SIZE = 500;

/** Any failure of a client call as an ApiFailure: the HTTP status when one came, the cause when none did. */
async function failure(error: unknown, what: string): Promise<ApiFailure> {
  const client = await loadKubernetesClient();
  if (error instanceof client.ApiException) {
    const code = (error as { code: number }).code;
    return new ApiFailure(`${what}: HTTP ${code}${statusMessage((error as { body?: unknown }).body)}`, code);
  }
  const cause = (error as { cause?: { message?: unknown } } | null)?.cause;
  const message = typeof cause?.message === 'string' ? cause.message : String((error as { message?: unknown } | null)?.message ?? error);
  return new ApiFailure(`${what}: ${message}`, undefined);
}

function statusMessage(body: unknown): string {
  try {
    const message = (typeof body === 'string' ? (JSON.parse(body) as { message?: unknown }) : (body as { message?: unknown } | null))?.message;
    return typeof message === 'string' && message !== '' ? ` (${message})` : '';
  } catch {
    return '';
  }
}

export async function kubernetesReporterApi(kubeConfig: k8s.KubeConfig, requestTimeoutMs: number): Promise<ReporterApi> {
  const client = await loadKubernetesClient();
  const core = kubeConfig.makeApiClient(client.CoreV1Api);
  const apps = kubeConfig.makeApiClient(client.AppsV1Api);
  const options = await requestTimeoutOptions(requestTimeoutMs, kubeConfig);
  return {
    async createEvent(event: EventBody) {
      try {
        await core.createNamespacedEvent({ namespace: event.metadata.namespace, body: event as unknown as k8s.CoreV1Event }, options);
        return 'created';
      } catch (error) {
        const problem = await failure(error, `create event ${event.metadata.namespace}/${event.metadata.name}`);
        if (problem.status === 409) return 'exists';
        throw problem;
      }
    },
    async eventReportedBy(namespace, name) {
      try {
        const event = await core.readNamespacedEvent({ namespace, name }, options);
        return event.metadata?.annotations?.[REPORTED_BY_ANNOTATION];
      } catch (error) {
        const problem = await failure(error, `get event ${namespace}/${name}`);
        if (problem.status === 404) return undefined;
        throw problem;
      }
    },
    async replicaSetController(namespace, name) {
      try {
        const replicaSet = await apps.readNamespacedReplicaSet({ namespace, name }, options);
        const reference = (replicaSet.metadata?.ownerReferences ?? []).find((owner) => owner.controller === true);
        return reference ? ({ apiVersion: reference.apiVersion, kind: reference.kind, name: reference.name, uid: reference.uid } satisfies ControllerRef) : undefined;
      } catch (error) {
        const problem = await failure(error, `get replicaset ${namespace}/${name}`);
        if (problem.status === 404) return undefined;
        throw problem;
      }
    },
  };
}

export interface PodWatchHandlers {
  /** A pod was added, changed, or listed again after a relist. */
  seen(pod: PodView): void;
  /**
   * A pod is gone: `deleted` when the watch delivered its deletion (with its last status),
   * `vanished` when a relist no longer lists it (the view is the last one this watch saw).
   */
  gone(pod: PodView, how: 'deleted' | 'vanished'): void;
}

export interface PodWatch {
  /** Pods in the informer's cache. */
  readonly watchedPods: number;
  /** The first list has completed. */
  readonly synced: boolean;
  /** Listing or watching works now (false while it is failing and retrying). */
  readonly healthy: boolean;
  /** The resourceVersion the informer has seen up to. */
  readonly resourceVersion: number;
  /** Resolves once every change up to `resourceVersion` has been handed to the handlers. */
  reached(resourceVersion: number): Promise<void>;
  stop(): Promise<void>;
}

export interface PodWatchOptions {
  handlers: PodWatchHandlers;
  logger: Logger;
  requestTimeoutMs: number;
  /** First delay before restarting a failed list or watch; doubled per failure up to 5 s. */
  restartDelayMs?: number;
}

/**
 * Watches the protected pods of every namespace with client-node's ListWatch. client-node stops its
 * informer on any error but 410 (which it answers with a relist itself); this restarts it with
 * backoff, resuming from the last resourceVersion it saw.
 */
export async function watchProtectedPods(kubeConfig: k8s.KubeConfig, options: PodWatchOptions): Promise<PodWatch> {
  const client = await loadKubernetesClient();
  const core = kubeConfig.makeApiClient(client.CoreV1Api);
  const requestOptions = await requestTimeoutOptions(options.requestTimeoutMs, kubeConfig);
  const { handlers, logger } = options;
  const baseDelay = options.restartDelayMs ?? 1000;
  let synced = false;
  let healthy = false;
  let stopped = false;
  let failures = 0;
  let restartTimer: NodeJS.Timeout | undefined;
  /** Set while the informer handles a DELETED watch event: its delete callback then means `deleted`. */
  let deliveringDeletion = false;
  const progressWaiters = new Set<{ resourceVersion: number; resolve: () => void }>();
  const seenUpTo = () => Number(informer.latestResourceVersion()) || 0;
  const progressed = () => {
    for (const waiter of [...progressWaiters]) {
      if (seenUpTo() >= waiter.resourceVersion) {
        progressWaiters.delete(waiter);
        waiter.resolve();
      }
    }
  };

  /** client-node's Watch, asking for bookmarks and handing the informer pod views instead of pods. */
  class PodViewWatch extends client.Watch {
    override async watch(
      path: string,
      queryParams: Record<string, string | number | boolean | undefined>,
      callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
      done: (err: unknown) => void,
    ): Promise<AbortController> {
      const reduce = (phase: string, object: unknown, raw?: unknown) => {
        healthy = true;
        if (phase === 'ADDED' || phase === 'MODIFIED' || phase === 'DELETED') {
          const view = viewPod(object);
          deliveringDeletion = phase === 'DELETED';
          try {
            if (view) callback(phase, view, raw);
          } finally {
            deliveringDeletion = false;
          }
        } else {
          callback(phase, object, raw);
        }
        // The informer has taken the event's resourceVersion by now.
        progressed();
      };
      let ended = false;
      const end = (error: unknown) => {
        ended = true;
        done(error);
      };
      try {
        const controller = await super.watch(path, { ...queryParams, allowWatchBookmarks: true }, reduce, end);
        // The API server answered 200: the watch is established (an error answer has ended it already).
        if (!ended) healthy = true;
        return controller;
      } catch (error) {
        // Failures before the request (credentials that cannot be read) end this watch like any other.
        end(error);
        return new AbortController();
      }
    }
  }

  const list = async (): Promise<k8s.KubernetesListObject<PodView>> => {
    const items: PodView[] = [];
    let resourceVersion = '';
    let next: string | undefined;
    do {
      const page = await core.listPodForAllNamespaces({ labelSelector: PROTECTED_SELECTOR, limit: LIST_PAGE_SIZE, ...(next ? { _continue: next } : {}) }, requestOptions);
      // Every page of one list is a snapshot at the first page's resourceVersion.
      if (resourceVersion === '') resourceVersion = page.metadata?.resourceVersion ?? '';
      for (const pod of page.items) {
        const view = viewPod(pod);
        if (view) items.push(view);
      }
      next = page.metadata?._continue || undefined;
    } while (next);
    synced = true;
    healthy = true;
    failures = 0;
    // The informer takes the list's resourceVersion once it has handed the items over.
    setImmediate(progressed);
    return { apiVersion: 'v1', kind: 'PodList', metadata: { resourceVersion }, items: items as unknown as k8s.KubernetesObject[] } as unknown as k8s.KubernetesListObject<PodView>;
  };

  const informer = new client.ListWatch<PodView & k8s.KubernetesObject>(
    '/api/v1/pods',
    new PodViewWatch(kubeConfig),
    list as unknown as k8s.ListPromise<PodView & k8s.KubernetesObject>,
    false,
    PROTECTED_SELECTOR,
  );
  informer.on('add', (pod) => handlers.seen(pod));
  informer.on('update', (pod) => handlers.seen(pod));
  informer.on('delete', (pod) => handlers.gone(pod, deliveringDeletion ? 'deleted' : 'vanished'));
  informer.on('error', (error: unknown) => {
    healthy = false;
    if (stopped) return;
    failures++;
    // Capped low: after an API server restart, the sooner the relist, the fewer pods can end and go
    // unseen in between (see docs/report.md, "Exactly once").
    const delay = Math.min(baseDelay * 2 ** (failures - 1), MAX_RESTART_DELAY_MS);
    logger.warn({ error: describeError(error), retryInMs: delay }, 'listing or watching protected pods failed; will retry');
    clearTimeout(restartTimer);
    restartTimer = setTimeout(() => {
      if (!stopped) void informer.start();
    }, delay);
  });
  void informer.start();

  return {
    get watchedPods() {
      return informer.list().length;
    },
    get synced() {
      return synced;
    },
    get healthy() {
      return healthy;
    },
    get resourceVersion() {
      return seenUpTo();
    },
    reached(resourceVersion) {
      if (seenUpTo() >= resourceVersion) return Promise.resolve();
      return new Promise((resolve) => progressWaiters.add({ resourceVersion, resolve }));
    },
    async stop() {
      stopped = true;
      clearTimeout(restartTimer);
      await informer.stop();
    },
  };
}

function describeError(error: unknown): string {
  const status = (error as { statusCode?: unknown; code?: unknown } | null)?.statusCode ?? (error as { code?: unknown } | null)?.code;
  const cause = (error as { cause?: { message?: unknown } } | null)?.cause?.message;
  const message = (error as { message?: unknown } | null)?.message;
  return [typeof status === 'number' ? `HTTP ${status}` : undefined, typeof message === 'string' ? message : String(error), typeof cause === 'string' ? cause : undefined]
    .filter(Boolean)
    .join(': ');
}
