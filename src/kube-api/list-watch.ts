/**
 * A collection kept current as client-go's reflector keeps it: a paged list, then a watch from the
 * list's resourceVersion with bookmarks. A watch that ends is resumed from the last resourceVersion it
 * delivered; a 410 Expired lists again, and what the new list no longer holds has vanished; any other
 * failure retries with backoff (doubled per failure, capped at 5 s).
 *
 * Nothing is held whole: a list page is read item by item and a watch line by line as they arrive
 * (./json-stream.ts), each object is turned into the caller's `view` at once, and of each object only
 * what the caller `keep`s stays between events. The reporter's pods (src/report/kube.ts) and the
 * admission scope's webhook configuration and namespaces (src/report/admission-scope.ts) are watched
 * with it.
 */
import type { Logger } from 'pino';
import type { KubeApiClient, KubeAnswer } from './client';
import { ApiFailure, answerFailure } from './failure';
import { JsonLines, JsonListItems } from './json-stream';

/** The longest wait before listing or watching again after a failure. */
const MAX_RESTART_DELAY_MS = 5000;

/** Objects per list page (kubectl's page size); a page is read item by item, so its size costs no memory. */
const LIST_PAGE_SIZE = 500;

/**
 * A watch lasts as long as the API server gives it (a random time above its --min-request-timeout: 30
 * to 60 minutes by default); it is not asked for a shorter one, so the server's setting decides, as
 * for client-node's informer. Meanwhile kube-apiserver sends a bookmark every minute (the watch cache's
 * defaultBookmarkFrequency, k8s.io/apiserver pkg/storage/cacher/cacher.go), so a watch with nothing
 * arriving for two of those plus `requestTimeoutMs` is taken for a connection that died without a
 * word, and is resumed from where it was.
 */
const WATCH_SILENCE_MS = 2 * 60_000;

/** What the watch keeps of an object: at least the resourceVersion, so a relist skips what did not change. */
export interface Kept {
  resourceVersion: string;
}

export interface ListWatchHandlers<View, Keep extends Kept> {
  /** An object was added, changed, or listed again with a new resourceVersion. */
  seen?(view: View): void;
  /** The watch delivered an object's deletion, with its last state. */
  deleted?(view: View): void;
  /** A relist no longer lists an object: what the watch kept of it. */
  vanished?(kept: Keep, key: string): void;
}

export interface ListWatchOptions<View, Keep extends Kept> {
  /** What is watched, for logs and errors: `pods`, `namespaces`. */
  what: string;
  /** The collection: `/api/v1/pods`. */
  path: string;
  /** Query parameters that select (`labelSelector=…`, `fieldSelector=…`), URL-encoded, joined by `&`. */
  selector?: string;
  /** An object from the API server as the caller reads it; undefined for one it ignores. */
  view(object: unknown): View | undefined;
  /** The key the watch tells objects apart by (`namespace/name`). */
  keyOf(view: View): string;
  /** What stays of an object between its events. */
  keep(view: View): Keep;
  handlers?: ListWatchHandlers<View, Keep>;
  logger: Logger;
  /** A list with nothing arriving for this long fails; a watch, for two minutes more. */
  requestTimeoutMs: number;
  /** First delay before restarting a failed list or watch; doubled per failure up to 5 s. */
  restartDelayMs?: number;
}

export interface ListWatch<Keep extends Kept> {
  /** Objects the watch holds. */
  readonly size: number;
  /** What the watch kept of the object with this key. */
  get(key: string): Keep | undefined;
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

/** A watch event's object, and the resourceVersion the watch has reached with it. */
interface WatchEvent {
  type?: unknown;
  object?: { metadata?: { resourceVersion?: unknown }; code?: unknown; message?: unknown };
}

/** Ends a watch stream from inside its event handler: a 410 Expired (list again) or another ERROR. */
class WatchEnded extends Error {
  constructor(
    readonly expired: boolean,
    message: string,
  ) {
    super(message);
  }
}

export function listWatch<View, Keep extends Kept>(client: KubeApiClient, options: ListWatchOptions<View, Keep>): ListWatch<Keep> {
  const { what, logger, handlers = {} } = options;
  const baseDelay = options.restartDelayMs ?? 1000;
  const selector = options.selector !== undefined && options.selector !== '' ? `&${options.selector}` : '';
  const objects = new Map<string, Keep>();
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

  /** A streamed GET that `stop` can end (it then resolves with status 0). */
  async function request(path: string, onChunk: (chunk: Buffer) => void, idleTimeoutMs?: number): Promise<KubeAnswer> {
    const controller = new AbortController();
    current = controller;
    try {
      return await client.stream(path, onChunk, { signal: controller.signal, ...(idleTimeoutMs !== undefined ? { idleTimeoutMs } : {}) });
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
        const view = options.view(item);
        if (view === undefined) return;
        const key = options.keyOf(view);
        listed.add(key);
        const kept = options.keep(view);
        if (objects.get(key)?.resourceVersion === kept.resourceVersion) return;
        objects.set(key, kept);
        handlers.seen?.(view);
      });
      const path = `${options.path}?limit=${LIST_PAGE_SIZE}${selector}${next !== '' ? `&continue=${encodeURIComponent(next)}` : ''}`;
      const answer = await request(path, (chunk) => items.push(chunk));
      if (stopped) return;
      if (answer.status !== 200) throw answerFailure(`list ${what}`, answer);
      const metadata = (items.end().metadata ?? {}) as { resourceVersion?: unknown; continue?: unknown };
      // Every page of one list is a snapshot at the first page's resourceVersion.
      if (listVersion === '') listVersion = typeof metadata.resourceVersion === 'string' ? metadata.resourceVersion : '';
      next = typeof metadata.continue === 'string' ? metadata.continue : '';
    } while (next !== '');
    for (const [key, kept] of objects) {
      if (listed.has(key)) continue;
      objects.delete(key);
      handlers.vanished?.(kept, key);
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
      const view = options.view(object);
      if (view !== undefined) {
        const key = options.keyOf(view);
        if (type === 'DELETED') {
          objects.delete(key);
          handlers.deleted?.(view);
        } else {
          objects.set(key, options.keep(view));
          handlers.seen?.(view);
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
    const path = `${options.path}?watch=true${selector}&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(resourceVersion)}`;
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
      path,
      (chunk) => {
        // The API server answered 200: the watch is established.
        healthy = true;
        lines.push(chunk);
      },
      WATCH_SILENCE_MS + options.requestTimeoutMs,
    );
    if (stopped) return 'ended';
    if (ended) {
      if (ended.expired) return 'expired';
      throw new ApiFailure(`watch ${what}: ${ended.message}`, undefined);
    }
    if (answer.status === 410) return 'expired';
    if (answer.status !== 200) throw answerFailure(`watch ${what}`, answer);
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
        // Capped low: after an API server restart, the sooner the relist, the fewer changes go unseen
        // in between (see docs/report.md, "Exactly once").
        const delay = Math.min(baseDelay * 2 ** (failures - 1), MAX_RESTART_DELAY_MS);
        logger.warn({ error: (error as Error).message, retryInMs: delay }, `listing or watching ${what} failed; will retry`);
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
    get size() {
      return objects.size;
    },
    get(key) {
      return objects.get(key);
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
