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
 * watch keeps of each pod only what a relist needs to tell what vanished meanwhile (`WatchedPod`): no
 * pod, page or answer is ever held whole. What decides which pods are reported is `viewOf`, the one
 * place an object from the API server becomes a pod view (a further filter, a namespace's, goes there).
 */
import type { Logger } from 'pino';
import { KubeRequestError, segment, statusMessage, type KubeApiClient, type KubeAnswer } from '../kube-api/client';
import { JsonLines, JsonListItems } from '../kube-api/json-stream';
import { PROTECTED_LABEL, PROTECTED_LABEL_VALUE } from '../mutate';
import { REPORTED_BY_ANNOTATION, type EventBody } from './drain-event';
import { viewPod, workloadOf, type ControllerRef, type PodView, type WatchedPod } from './pod-view';
import { ApiFailure, type ReporterApi } from './reporter';

/** The label the webhook puts on every pod whose drain it installed: the watch's label selector. */
export const PROTECTED_SELECTOR = `${PROTECTED_LABEL}=${PROTECTED_LABEL_VALUE}`;

/** The longest wait before listing or watching again after a failure. */
const MAX_RESTART_DELAY_MS = 5000;

/** Pods per list page (kubectl's page size); a page is read item by item, so its size costs no memory. */
const LIST_PAGE_SIZE = 500;

/**
 * A watch asks the API server to end it after 5 to 10 minutes (client-go's reflectors ask the same),
 * then resumes from where it was: a connection that died without a word is noticed within that time
 * plus `requestTimeoutMs`, since nothing arrives on it any more.
 */
const WATCH_SECONDS_MIN = 300;

function failure(what: string, answer: KubeAnswer): ApiFailure {
  const message = statusMessage(answer.text);
  return new ApiFailure(`${what}: HTTP ${answer.status}${message !== '' ? ` (${message})` : ''}`, answer.status);
}

/** The request's answer, or an ApiFailure without a status when none came. */
async function call(what: string, send: () => Promise<KubeAnswer>): Promise<KubeAnswer> {
  try {
    return await send();
  } catch (error) {
    if (error instanceof KubeRequestError) throw new ApiFailure(`${what}: ${error.message}`, undefined);
    throw error;
  }
}

const ok = (status: number) => status >= 200 && status < 300;

export function kubernetesReporterApi(client: KubeApiClient): ReporterApi {
  return {
    async createEvent(event: EventBody) {
      const { namespace, name } = event.metadata;
      const what = `create event ${namespace}/${name}`;
      const answer = await call(what, () => client.request('POST', `/api/v1/namespaces/${segment(namespace)}/events`, event));
      if (ok(answer.status)) return 'created';
      if (answer.status === 409) return 'exists';
      throw failure(what, answer);
    },
    async eventReportedBy(namespace, name) {
      const what = `get event ${namespace}/${name}`;
      const answer = await call(what, () => client.request('GET', `/api/v1/namespaces/${segment(namespace)}/events/${segment(name)}`));
      if (answer.status === 404) return undefined;
      if (!ok(answer.status)) throw failure(what, answer);
      const by = (JSON.parse(answer.text) as { metadata?: { annotations?: Record<string, unknown> } }).metadata?.annotations?.[REPORTED_BY_ANNOTATION];
      return typeof by === 'string' ? by : undefined;
    },
    async replicaSetController(namespace, name) {
      const what = `get replicaset ${namespace}/${name}`;
      const answer = await call(what, () => client.request('GET', `/apis/apps/v1/namespaces/${segment(namespace)}/replicasets/${segment(name)}`));
      if (answer.status === 404) return undefined;
      if (!ok(answer.status)) throw failure(what, answer);
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

/** A watch event's object, and the resourceVersion the watch has reached with it. */
interface WatchEvent {
  type?: unknown;
  object?: { metadata?: { resourceVersion?: unknown }; code?: unknown; message?: unknown };
}

/** Ends a watch stream from inside its event handler: a 410 Expired (list again) or another ERROR. */
class WatchEnded extends Error {
  constructor(readonly expired: boolean, message: string) {
    super(message);
  }
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
 * Watches the protected pods of every namespace: a paged list, then a watch from its resourceVersion,
 * as client-go's reflector does. A watch that ends is resumed from the last resourceVersion it
 * delivered (bookmarks keep it current); a 410 Expired lists again, and what the new list no longer
 * holds has vanished; any other failure retries with backoff.
 */
export function watchProtectedPods(client: KubeApiClient, options: PodWatchOptions): PodWatch {
  const { handlers, logger } = options;
  const baseDelay = options.restartDelayMs ?? 1000;
  const pods = new Map<string, WatchedPod>();
  const interned = new Interned();
  let resourceVersion = '';
  let synced = false;
  let healthy = false;
  let stopped = false;
  let failures = 0;
  let current: AbortController | undefined;
  let wake: (() => void) | undefined;
  const progressWaiters = new Set<{ resourceVersion: number; resolve: () => void }>();
  const seenUpTo = () => Number(resourceVersion) || 0;
  const progressed = () => {
    for (const waiter of progressWaiters) {
      if (seenUpTo() >= waiter.resourceVersion) {
        progressWaiters.delete(waiter);
        waiter.resolve();
      }
    }
  };

  const keyOf = (pod: PodView) => `${pod.metadata.namespace}/${pod.metadata.name}`;
  /** The one place an object from the API server becomes a pod the reporter sees. */
  const viewOf = (object: unknown): PodView | undefined => viewPod(object);
  const remember = (pod: PodView): WatchedPod => ({
    namespace: interned.of(pod.metadata.namespace),
    name: pod.metadata.name,
    uid: pod.metadata.uid,
    resourceVersion: pod.metadata.resourceVersion,
    workload: interned.of(workloadOf(pod).label),
    running: pod.envoy.filter((container) => container.ended === undefined).map((container) => interned.of(container.name)),
  });
  const selector = `labelSelector=${encodeURIComponent(PROTECTED_SELECTOR)}`;

  /** A streamed GET that `stop` can end (it then resolves with status 0). */
  async function request(what: string, path: string, onChunk: (chunk: Buffer) => void, idleTimeoutMs?: number): Promise<KubeAnswer> {
    const controller = new AbortController();
    current = controller;
    try {
      return await call(what, () => client.stream(path, onChunk, { signal: controller.signal, ...(idleTimeoutMs !== undefined ? { idleTimeoutMs } : {}) }));
    } finally {
      if (current === controller) current = undefined;
    }
  }

  async function list(): Promise<void> {
    const listed = new Set<string>();
    let listVersion = '';
    let next = '';
    do {
      const items = new JsonListItems((item) => {
        const pod = viewOf(item);
        if (pod === undefined) return;
        const key = keyOf(pod);
        listed.add(key);
        if (pods.get(key)?.resourceVersion === pod.metadata.resourceVersion) return;
        pods.set(key, remember(pod));
        handlers.seen(pod);
      });
      const path = `/api/v1/pods?${selector}&limit=${LIST_PAGE_SIZE}${next !== '' ? `&continue=${encodeURIComponent(next)}` : ''}`;
      const answer = await request('list pods', path, (chunk) => items.push(chunk));
      if (answer.status !== 200) throw failure('list pods', answer);
      const metadata = (items.end().metadata ?? {}) as { resourceVersion?: unknown; continue?: unknown };
      // Every page of one list is a snapshot at the first page's resourceVersion.
      if (listVersion === '') listVersion = typeof metadata.resourceVersion === 'string' ? metadata.resourceVersion : '';
      next = typeof metadata.continue === 'string' ? metadata.continue : '';
    } while (next !== '');
    for (const [key, pod] of pods) {
      if (listed.has(key)) continue;
      pods.delete(key);
      handlers.vanished(pod);
    }
    resourceVersion = listVersion;
    synced = true;
    healthy = true;
    failures = 0;
    progressed();
  }

  function deliver(event: WatchEvent): void {
    const { type, object } = event;
    if (type === 'ERROR') {
      const code = object?.code;
      throw new WatchEnded(code === 410, `watch error${typeof code === 'number' ? ` ${code}` : ''}: ${String(object?.message ?? 'no message')}`);
    }
    if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') {
      const pod = viewOf(object);
      if (pod !== undefined) {
        const key = keyOf(pod);
        if (type === 'DELETED') {
          pods.delete(key);
          handlers.deleted(pod);
        } else {
          pods.set(key, remember(pod));
          handlers.seen(pod);
        }
      }
    }
    // BOOKMARK, and every other event: the watch has reached its resourceVersion.
    const version = object?.metadata?.resourceVersion;
    if (typeof version === 'string' && version !== '') resourceVersion = version;
    progressed();
  }

  /** Watches from `resourceVersion` until the API server ends the watch; `expired` when it must list again. */
  async function watch(): Promise<'ended' | 'expired'> {
    const seconds = WATCH_SECONDS_MIN + Math.floor(Math.random() * WATCH_SECONDS_MIN);
    const path = `/api/v1/pods?watch=true&${selector}&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(resourceVersion)}&timeoutSeconds=${seconds}`;
    let ended: WatchEnded | undefined;
    const lines = new JsonLines((value) => {
      if (ended) return;
      try {
        deliver(value as WatchEvent);
      } catch (error) {
        if (!(error instanceof WatchEnded)) throw error;
        ended = error;
        current?.abort();
      }
    });
    const answer = await request(
      'watch pods',
      path,
      (chunk) => {
        // The API server answered 200: the watch is established.
        healthy = true;
        lines.push(chunk);
      },
      seconds * 1000 + options.requestTimeoutMs,
    );
    if (stopped) return 'ended';
    if (ended) {
      if (ended.expired) return 'expired';
      throw new ApiFailure(`watch pods: ${ended.message}`, undefined);
    }
    if (answer.status === 410) return 'expired';
    if (answer.status !== 200) throw failure('watch pods', answer);
    healthy = true;
    lines.end();
    return 'ended';
  }

  async function run(): Promise<void> {
    while (!stopped) {
      try {
        if (resourceVersion === '') await list();
        if (stopped) break;
        if ((await watch()) === 'expired') resourceVersion = '';
        failures = 0;
      } catch (error) {
        if (stopped) break;
        healthy = false;
        failures++;
        // Capped low: after an API server restart, the sooner the relist, the fewer pods can end and go
        // unseen in between (see docs/report.md, "Exactly once").
        const delay = Math.min(baseDelay * 2 ** (failures - 1), MAX_RESTART_DELAY_MS);
        logger.warn({ error: (error as Error).message, retryInMs: delay }, 'listing or watching protected pods failed; will retry');
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delay);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    }
  }
  const running = run();

  return {
    get watchedPods() {
      return pods.size;
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
    reached(version) {
      if (seenUpTo() >= version) return Promise.resolve();
      return new Promise((resolve) => progressWaiters.add({ resourceVersion: version, resolve }));
    },
    async stop() {
      stopped = true;
      current?.abort();
      wake?.();
      await running;
    },
  };
}
