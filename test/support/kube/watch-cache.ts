/**
 * The API double's watch support, following kube-apiserver's watch cache (k8s.io/apiserver
 * pkg/storage/cacher: cacher.go `Watch`, watch_cache_history.go `GetIntervalLocked`,
 * cache_watcher.go `convertToWatchEvent`, `nextBookmarkTime`) and its watch handler
 * (pkg/endpoints/handlers/watch.go):
 *
 * - Every write is kept in a bounded history of changes, each with the object before and after.
 * - A watch from resourceVersion R gets every change after R, then live changes. R older than the
 *   history holds is answered as the cacher answers it: status 200, one `ERROR` event carrying a
 *   410 `Expired` Status ("too old resource version: R (oldest)"), end of stream. After a relist
 *   (the API server's restart), the oldest R a watch may start from is the relist's resourceVersion,
 *   until changes fall out of the bounded history.
 * - Without R (or R = "0") the watch starts with an `ADDED` event per current object, then live.
 * - A label selector is applied to the object before and after each change: an object that starts
 *   matching arrives as `ADDED`, one that stops matching as `DELETED` (its previous content, with the
 *   change's resourceVersion).
 * - `allowWatchBookmarks`: `BOOKMARK` events carry only `metadata.resourceVersion`, sent when the test
 *   asks (the real cacher sends one about every minute) and right before the watch's deadline.
 * - `timeoutSeconds` ends the stream normally at the deadline, as the handler's timeout does.
 *
 * Streams are newline-delimited JSON `{"type": …, "object": …}` over a chunked 200 response.
 */
import type { ServerResponse } from 'node:http';
import { selects, type LabelSelector } from './selector';

export interface WatchedObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; labels?: unknown; [key: string]: unknown };
  [key: string]: unknown;
}

export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface Change {
  resourceVersion: number;
  /** Plural resource, e.g. `pods`. */
  resource: string;
  type: ChangeType;
  /** The object after the change (for DELETED: as it was deleted, with the deletion's resourceVersion). */
  object: WatchedObject;
  previous?: WatchedObject;
}

export interface WatchTarget {
  resource: string;
  kind: string;
  apiVersion: string;
  /** Only this namespace; absent: every namespace. */
  namespace?: string;
  selector: LabelSelector;
  /** `fieldSelector=metadata.name=NAME`: only that object (the one field selector the double implements). */
  name?: string;
  allowBookmarks: boolean;
  /** Seconds until the server ends the watch (`timeoutSeconds`); absent: never, unless the test ends it. */
  timeoutSeconds?: number;
}

interface ActiveWatch {
  target: WatchTarget;
  res: ServerResponse;
  timer?: NodeJS.Timeout;
}

/** The history kube-apiserver keeps by default is sized by time (75 s of changes); a count is enough here. */
export const DEFAULT_HISTORY_CAPACITY = 10_000;

export class WatchCache {
  private changes: Change[] = [];
  /** The resourceVersion of the cache's last (re)list: a watch may start there even with no change since. */
  private listResourceVersion: number;
  /** A change fell out of the bounded history since the last relist. */
  private removedSinceRelist = false;
  private readonly watches = new Set<ActiveWatch>();
  /** Called whenever a watch opens or closes. */
  onChange: () => void = () => {};

  /** `currentResourceVersion`: the store's resourceVersion now (what bookmarks carry). */
  constructor(
    private readonly currentResourceVersion: () => number,
    private readonly capacity: number = DEFAULT_HISTORY_CAPACITY,
  ) {
    this.listResourceVersion = currentResourceVersion();
  }

  /** Watches currently open, for tests that wait until a client is watching. */
  get openWatches(): number {
    return this.watches.size;
  }

  record(change: Change): void {
    this.changes.push(change);
    if (this.changes.length > this.capacity) {
      this.changes.shift();
      this.removedSinceRelist = true;
    }
    for (const watch of this.watches) this.deliver(watch, change);
  }

  /**
   * What the watch cache does when kube-apiserver starts: it lists the store at `resourceVersion` and
   * keeps no history before it, so watches from an older resourceVersion get 410.
   */
  relist(): void {
    this.changes = [];
    this.listResourceVersion = this.currentResourceVersion();
    this.removedSinceRelist = false;
  }

  /** Drops the history up to `resourceVersion` (as compaction or a busy cache would). */
  forgetUpTo(resourceVersion: number): void {
    const before = this.changes.length;
    this.changes = this.changes.filter((change) => change.resourceVersion > resourceVersion);
    if (this.changes.length < before || resourceVersion > this.listResourceVersion) this.removedSinceRelist = true;
    if (this.changes.length === 0) {
      this.listResourceVersion = Math.max(resourceVersion, this.listResourceVersion);
      this.removedSinceRelist = false;
    }
  }

  /** The oldest resourceVersion a watch can be served from (GetIntervalLocked's `oldest - 1`). */
  private oldestServable(): number {
    if (!this.removedSinceRelist || this.changes.length === 0) return this.listResourceVersion;
    return this.changes[0]!.resourceVersion - 1;
  }

  /**
   * Serves one watch request. `from` is the request's resourceVersion (undefined for none or "0");
   * `current` lists the stored objects of the resource for a watch without one.
   */
  open(target: WatchTarget, from: number | undefined, current: () => WatchedObject[], res: ServerResponse): void {
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked', 'cache-control': 'no-cache, private' });
    res.flushHeaders();
    if (from !== undefined && from < this.oldestServable()) {
      // cacher.Watch: "once we have passed authn/authz/admission … other errors must fail with a
      // watch event of type ERROR, rather than a directly returned error".
      writeEvent(res, 'ERROR', {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `too old resource version: ${from} (${this.oldestServable()})`,
        reason: 'Expired',
        code: 410,
      });
      res.end();
      return;
    }
    const watch: ActiveWatch = { target, res };
    if (from === undefined) {
      for (const object of current()) if (this.wants(target, object)) writeEvent(res, 'ADDED', withKind(object, target));
    } else {
      for (const change of this.changes) if (change.resourceVersion > from) this.deliver(watch, change);
    }
    this.watches.add(watch);
    res.once('close', () => this.forget(watch));
    this.onChange();
    if (target.timeoutSeconds !== undefined && target.timeoutSeconds > 0) {
      watch.timer = setTimeout(() => this.end(watch), target.timeoutSeconds * 1000);
      watch.timer.unref();
    }
  }

  /** A BOOKMARK at the current resourceVersion to every watch that allowed them. */
  bookmark(): void {
    for (const watch of this.watches) if (watch.target.allowBookmarks) writeBookmark(watch, this.currentResourceVersion());
  }

  /** Forgets every open watch at once: their connections are being cut (the API server goes away). */
  dropAll(): void {
    for (const watch of [...this.watches]) this.forget(watch);
  }

  /** Ends every open watch as its deadline would (a bookmark first where allowed, then end of stream). */
  endAll(): void {
    for (const watch of [...this.watches]) this.end(watch);
  }

  private end(watch: ActiveWatch): void {
    // nextBookmarkTime: "right before the watcher timeout", so the client resumes from as close to now as possible.
    if (watch.target.allowBookmarks) writeBookmark(watch, this.currentResourceVersion());
    this.forget(watch);
    watch.res.end();
  }

  private forget(watch: ActiveWatch): void {
    clearTimeout(watch.timer);
    if (this.watches.delete(watch)) this.onChange();
  }

  private wants(target: WatchTarget, object: WatchedObject): boolean {
    return (
      (target.namespace === undefined || object.metadata.namespace === target.namespace) &&
      (target.name === undefined || object.metadata.name === target.name) &&
      selects(target.selector, object)
    );
  }

  /** convertToWatchEvent: the selector decides on the object before and after the change. */
  private deliver(watch: ActiveWatch, change: Change): void {
    const { target, res } = watch;
    if (change.resource !== target.resource) return;
    const now = change.type !== 'DELETED' && this.wants(target, change.object);
    const before = change.type === 'DELETED' ? this.wants(target, change.object) : change.previous !== undefined && this.wants(target, change.previous);
    if (change.type === 'DELETED') {
      if (before) writeEvent(res, 'DELETED', withKind(change.object, target));
      return;
    }
    if (now && !before) writeEvent(res, 'ADDED', withKind(change.object, target));
    else if (now && before) writeEvent(res, 'MODIFIED', withKind(change.object, target));
    else if (!now && before) {
      const previous = change.previous!;
      writeEvent(res, 'DELETED', withKind({ ...previous, metadata: { ...previous.metadata, resourceVersion: String(change.resourceVersion) } }, target));
    }
  }
}

function withKind(object: WatchedObject, target: WatchTarget): WatchedObject {
  // Watch events carry kind and apiVersion on every object (list items do not).
  return { apiVersion: target.apiVersion, kind: target.kind, ...object };
}

function writeEvent(res: ServerResponse, type: ChangeType | 'ERROR' | 'BOOKMARK', object: unknown): void {
  if (!res.writableEnded && !res.destroyed) res.write(`${JSON.stringify({ type, object })}\n`);
}

function writeBookmark(watch: ActiveWatch, resourceVersion: number): void {
  // An empty object of the kind with only its resourceVersion set (the cacher's `newFunc()` + UpdateObject).
  writeEvent(watch.res, 'BOOKMARK', {
    kind: watch.target.kind,
    apiVersion: watch.target.apiVersion,
    metadata: { resourceVersion: String(resourceVersion), creationTimestamp: null },
  });
}
