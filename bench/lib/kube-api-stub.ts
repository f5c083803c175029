/**
 * A stand-in for kube-apiserver that answers exactly what a Pepr admission controller asks at start-up,
 * and nothing else. Pepr binds its /mutate endpoint only once its store is ready: for each of its two
 * PeprStore objects (`pepr-<uuid>-store` and `pepr-<uuid>-schedule` in namespace `pepr-system`) it
 *
 *   1. GETs the object (a 404 would make it create one with server-side apply instead),
 *   2. PATCHes it with a JSON patch that adds the label `pepr.dev-cacheID`,
 *   3. LISTs the collection with `fieldSelector=metadata.name=<name>` (the start of its watch), and
 *   4. opens a WATCH from the list's resourceVersion, which stays open for the whole run.
 *
 * That is 8 calls (Pepr 1.1.4, kubernetes-fluent-client 3.11.6: StoreController → migrateAndSetupWatch →
 * Watcher). Pepr's controller also relists every 10 minutes; a relist is the same LIST and is answered
 * the same way. Anything else is answered 404 with a Kubernetes Status and recorded as unexpected, so the
 * benchmark shows it instead of guessing an answer.
 *
 * The answers follow kube-apiserver's shapes: objects with uid and resourceVersion, a List with
 * metadata.resourceVersion, JSON patches applied with RFC 6902 semantics (fast-json-patch), a watch as a
 * chunked `application/json` stream of newline-separated events (none are sent: nothing changes), and
 * Bearer-token authentication (401 without the token). HTTPS with the benchmark's own CA.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { applyPatch, type Operation } from 'fast-json-patch';
import type { BenchCertificates } from './tls';

export type StubCallKind = 'get' | 'patch' | 'list' | 'watch' | 'unexpected' | 'unauthenticated';

export interface StubCall {
  kind: StubCallKind;
  method: string;
  /** Path and query as sent. */
  url: string;
  status: number;
}

export interface KubeApiStub {
  port: number;
  /** The Bearer token clients must send (goes into the kubeconfig). */
  token: string;
  calls: StubCall[];
  close(): Promise<void>;
}

const NAMESPACE = 'pepr-system';
const STORES = `/apis/pepr.dev/v1/namespaces/${NAMESPACE}/peprstores`;

interface PeprStore {
  apiVersion: 'pepr.dev/v1';
  kind: 'PeprStore';
  metadata: { name: string; namespace: string; uid: string; resourceVersion: string; creationTimestamp: string; labels: Record<string, string> };
  data: Record<string, string>;
}

/** A JSON answer with its length (shared by the benchmarks' API stubs). */
export function send(res: ServerResponse, status: number, body: unknown): number {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
  return status;
}

/** A `metav1.Status` failure body. */
export function statusBody(code: number, reason: string, message: string) {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** `storeNames`: the PeprStore objects that exist (Pepr's store and schedule store of the module). */
export async function startKubeApiStub(certs: BenchCertificates, storeNames: readonly string[]): Promise<KubeApiStub> {
  const token = randomBytes(24).toString('hex');
  const calls: StubCall[] = [];
  const watches = new Set<ServerResponse>();
  let resourceVersion = 100;
  const stores = new Map<string, PeprStore>(
    storeNames.map((name) => [
      name,
      {
        apiVersion: 'pepr.dev/v1',
        kind: 'PeprStore',
        metadata: { name, namespace: NAMESPACE, uid: randomUUID(), resourceVersion: String(++resourceVersion), creationTimestamp: new Date().toISOString(), labels: {} },
        // What Pepr writes into a store it creates: JSON patches cannot add to an empty map's parent otherwise.
        data: { __pepr_do_not_delete__: 'k-thx-bye' },
      },
    ]),
  );

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<{ kind: StubCallKind; status: number }> => {
    if (req.headers.authorization !== `Bearer ${token}`) {
      return { kind: 'unauthenticated', status: send(res, 401, statusBody(401, 'Unauthorized', 'Unauthorized')) };
    }
    const url = new URL(req.url ?? '/', 'https://stub.invalid');
    const named = url.pathname.startsWith(`${STORES}/`) ? url.pathname.slice(STORES.length + 1) : undefined;
    if (named !== undefined && !named.includes('/')) {
      const store = stores.get(named);
      if (!store) return { kind: 'unexpected', status: send(res, 404, statusBody(404, 'NotFound', `peprstores.pepr.dev "${named}" not found`)) };
      if (req.method === 'GET') return { kind: 'get', status: send(res, 200, store) };
      if (req.method === 'PATCH' && req.headers['content-type'] === 'application/json-patch+json') {
        const patched = applyPatch(structuredClone(store), JSON.parse(await readBody(req)) as Operation[], true, false).newDocument;
        patched.metadata.resourceVersion = String(++resourceVersion);
        stores.set(named, patched);
        return { kind: 'patch', status: send(res, 200, patched) };
      }
    }
    if (url.pathname === STORES && req.method === 'GET') {
      const selector = /^metadata\.name=(.+)$/.exec(url.searchParams.get('fieldSelector') ?? '')?.[1];
      const items = [...stores.values()].filter((store) => selector === undefined || store.metadata.name === selector);
      if (url.searchParams.get('watch') === 'true') {
        // Nothing changes during a benchmark: the watch stays open and silent until the stub closes.
        res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
        res.flushHeaders();
        watches.add(res);
        res.on('close', () => watches.delete(res));
        return { kind: 'watch', status: 200 };
      }
      const list = { apiVersion: 'pepr.dev/v1', kind: 'PeprStoreList', metadata: { resourceVersion: String(resourceVersion) }, items };
      return { kind: 'list', status: send(res, 200, list) };
    }
    return { kind: 'unexpected', status: send(res, 404, statusBody(404, 'NotFound', 'the stub API answers only the PeprStore calls of Pepr\'s start-up')) };
  };

  const server: Server = createServer({ cert: readFileSync(certs.certPath), key: readFileSync(certs.keyPath) }, (req, res) => {
    handle(req, res).then(
      ({ kind, status }) => calls.push({ kind, method: req.method ?? '', url: req.url ?? '', status }),
      (error: unknown) => {
        calls.push({ kind: 'unexpected', method: req.method ?? '', url: req.url ?? '', status: 500 });
        if (!res.headersSent) send(res, 500, statusBody(500, 'InternalError', String(error)));
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    token,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        for (const watch of watches) watch.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
