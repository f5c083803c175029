/**
 * A small client of the real kube-apiserver for the test cluster's own parts (the kubelet stand-in,
 * the cluster's setup) and the tests' assertions: HTTPS with the kubeconfig's client certificate, JSON
 * in and out, and watches read as the API streams them (one JSON event per line). drainguard itself
 * talks to the API server through @kubernetes/client-node; this client exists so that what the tests
 * assert does not go through the code under test.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { parse } from 'yaml';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
    deletionGracePeriodSeconds?: number;
    ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[];
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

export interface KubeList<T = KubeObject> {
  metadata: { resourceVersion: string; continue?: string };
  items: T[];
}

export interface WatchEvent<T = KubeObject> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    what: string,
  ) {
    const message = (body as { message?: string } | null)?.message ?? JSON.stringify(body);
    super(`${what}: ${status} ${message}`);
  }
}

interface Credentials {
  server: string;
  ca: string;
  cert: string;
  key: string;
}

function readKubeconfig(path: string): Credentials {
  const config = parse(readFileSync(path, 'utf8')) as {
    'current-context': string;
    contexts: { name: string; context: { cluster: string; user: string } }[];
    clusters: { name: string; cluster: { server: string; 'certificate-authority-data': string } }[];
    users: { name: string; user: { 'client-certificate-data': string; 'client-key-data': string } }[];
  };
  const context = config.contexts.find((c) => c.name === config['current-context'])!.context;
  const cluster = config.clusters.find((c) => c.name === context.cluster)!.cluster;
  const user = config.users.find((u) => u.name === context.user)!.user;
  const decode = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');
  return { server: cluster.server, ca: decode(cluster['certificate-authority-data']), cert: decode(user['client-certificate-data']), key: decode(user['client-key-data']) };
}

export type PatchType = 'merge' | 'strategic' | 'json' | 'apply';
const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  json: 'application/json-patch+json',
  apply: 'application/apply-patch+yaml',
};

/** The path of a core (`v1`) or grouped (`apps/v1`) resource, namespaced when `namespace` is given. */
export function resourcePath(apiVersion: string, plural: string, namespace?: string, name?: string): string {
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return `${base}${namespace ? `/namespaces/${namespace}` : ''}/${plural}${name ? `/${name}` : ''}`;
}

/**
 * One HTTPS request with a JSON (or text) answer and its status; never throws for an HTTP status. TLS
 * from `agent`, or from `tls` for a one-off connection (etcd, a component not yet configured).
 */
export function requestJson(
  url: string,
  options: { method: string; body?: unknown; contentType?: string; agent?: Agent; tls?: { ca: string; cert: string; key: string }; timeoutMs?: number },
): Promise<{ status: number; body: unknown }> {
  const { method, body, agent, tls } = options;
  const timeoutMs = options.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const req = request(
      url,
      {
        method,
        ...(agent ? { agent } : tls),
        // Content-Length always: Node frames no body of a DELETE by itself, and an unframed body would be
        // read by the server as the next request on this keep-alive connection.
        headers: {
          accept: 'application/json',
          ...(payload !== undefined ? { 'content-type': options.contentType ?? 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // Not JSON (/readyz answers `ok`): kept as text.
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${url}: no answer in ${timeoutMs / 1000} s`)));
    req.on('error', reject);
    req.end(payload);
  });
}

export class KubeApi {
  private readonly credentials: Credentials;
  private readonly agent: Agent;

  constructor(readonly kubeconfigPath: string) {
    this.credentials = readKubeconfig(kubeconfigPath);
    const { ca, cert, key } = this.credentials;
    this.agent = new Agent({ ca, cert, key, keepAlive: true, maxSockets: 16 });
  }

  get server(): string {
    return this.credentials.server;
  }

  /** One request; the answer's JSON (or text), and its status. Never throws for an HTTP status. */
  raw(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<{ status: number; body: unknown }> {
    return requestJson(`${this.credentials.server}${path}`, { method, body, contentType, agent: this.agent });
  }

  private async expect<T>(method: string, path: string, body: unknown, ok: (status: number) => boolean, contentType?: string): Promise<T> {
    const answer = await this.raw(method, path, body, contentType);
    if (!ok(answer.status)) throw new ApiError(answer.status, answer.body, `${method} ${path}`);
    return answer.body as T;
  }

  get<T = KubeObject>(path: string): Promise<T> {
    return this.expect<T>('GET', path, undefined, (s) => s === 200);
  }

  /** The object, or undefined when the API says 404. */
  async find<T = KubeObject>(path: string): Promise<T | undefined> {
    const answer = await this.raw('GET', path);
    if (answer.status === 404) return undefined;
    if (answer.status !== 200) throw new ApiError(answer.status, answer.body, `GET ${path}`);
    return answer.body as T;
  }

  list<T = KubeObject>(path: string): Promise<KubeList<T>> {
    return this.get<KubeList<T>>(path);
  }

  create<T = KubeObject>(path: string, body: unknown): Promise<T> {
    return this.expect<T>('POST', path, body, (s) => s === 201 || s === 200);
  }

  put<T = KubeObject>(path: string, body: unknown): Promise<T> {
    return this.expect<T>('PUT', path, body, (s) => s === 200 || s === 201);
  }

  patch<T = KubeObject>(path: string, body: unknown, type: PatchType = 'merge'): Promise<T> {
    return this.expect<T>('PATCH', path, body, (s) => s === 200 || s === 201, PATCH_CONTENT_TYPES[type]);
  }

  /** Deletes; a 404 is not an error (already gone). */
  async delete(path: string, options?: { gracePeriodSeconds?: number; uid?: string; propagationPolicy?: string }): Promise<void> {
    const body = options
      ? {
          kind: 'DeleteOptions',
          apiVersion: 'v1',
          ...(options.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: options.gracePeriodSeconds } : {}),
          ...(options.uid ? { preconditions: { uid: options.uid } } : {}),
          ...(options.propagationPolicy ? { propagationPolicy: options.propagationPolicy } : {}),
        }
      : undefined;
    const answer = await this.raw('DELETE', path, body);
    if (answer.status !== 200 && answer.status !== 202 && answer.status !== 404) throw new ApiError(answer.status, answer.body, `DELETE ${path}`);
  }

  /**
   * Watches `path` (a list path, with its own query) from `resourceVersion`; calls `onEvent` for each
   * event in order. Resolves when the API server ends the watch (its timeout, or `signal`); rejects on a
   * connection error. The caller decides whether to watch again (from the last resourceVersion seen).
   */
  watch<T = KubeObject>(path: string, resourceVersion: string, onEvent: (event: WatchEvent<T>) => void, signal?: AbortSignal): Promise<void> {
    const separator = path.includes('?') ? '&' : '?';
    const url = `${this.credentials.server}${path}${separator}watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(resourceVersion)}`;
    return new Promise((resolve, reject) => {
      const req = request(url, { agent: this.agent, headers: { accept: 'application/json' }, signal }, (res) => {
        if (res.statusCode !== 200) {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => reject(new ApiError(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'), `WATCH ${path}`)));
          return;
        }
        let pending = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          pending += chunk;
          let newline: number;
          while ((newline = pending.indexOf('\n')) >= 0) {
            const line = pending.slice(0, newline);
            pending = pending.slice(newline + 1);
            if (line.trim()) onEvent(JSON.parse(line) as WatchEvent<T>);
          }
        });
        res.on('end', () => resolve());
        res.on('error', (error) => (signal?.aborted ? resolve() : reject(error)));
      });
      req.on('error', (error) => (signal?.aborted ? resolve() : reject(error)));
      req.end();
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
