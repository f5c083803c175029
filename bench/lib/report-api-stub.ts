/**
 * A stand-in for kube-apiserver that answers what `drainguard report` asks, at benchmark scale: a paged
 * pod list (`limit`/`continue`, the label selector checked), one watch stream per watcher with newline-
 * delimited events, and Event creates (201, 409 for a name already created). It holds `podCount`
 * protected pods: Contour's Envoy pod rewritten by drainguard's own `mutate` (about the size of a real
 * one), spread over namespaces, owned by one DaemonSet per namespace, running.
 *
 * Watches from a resourceVersion get the events after it from a bounded history, then live ones.
 *
 * `drain()` replays what the kubelet writes for one pod's rollout: the deletion (deletionTimestamp),
 * Envoy's termination with a drain record in its message, the final DELETED, and the DaemonSet's new
 * pod, so the number of watched pods stays `podCount`. The stub records when it wrote each termination
 * and when the pod's Event arrived: the report latency. HTTPS with the benchmark's CA, Bearer token.
 * The reporter's scope is answered too: the MutatingWebhookConfiguration `STUB_WEBHOOK_CONFIGURATION`
 * (asked by name), whose namespaceSelector selects every namespace labelled `OPT_IN`, and the pods'
 * namespaces, all labelled so; their watches stay open and quiet.
 *
 * Why a stub stays beside the real API server (./report-real-cluster.ts, run by `npm run bench` too):
 * this one measures the reporter's own cost at a fixed 100 drains a second, which the real
 * kube-apiserver on a 2-core machine does not sustain (about 55 a second there, so its figures hold
 * kube-apiserver's queue as well), and it needs neither root nor network namespaces.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { applyPatch as applyJsonPatch, type Operation } from 'fast-json-patch';
import { defaultConfig } from '../../src/config';
import { encodeDrainRecord } from '../../src/drain-record';
import { mutate, type Pod } from '../../src/mutate';
import { contourPod } from '../../test/support/generators/pods';
import { readBody, send, statusBody } from './kube-api-stub';
import type { BenchCertificates } from './tls';

const SELECTOR = 'drainguard.io/protected=true';
/** The webhook configuration the reporter is started with (`--webhook-config-name`). */
export const STUB_WEBHOOK_CONFIGURATION = 'drainguard-bench';
const OPT_IN = { 'drainguard.io/inject': 'enabled' };
const NAMESPACES = 50;
/** Watch events kept for watches that resume (kube-apiserver keeps about 75 s of them). */
const HISTORY = 20_000;

type Json = Record<string, unknown>;

/** Contour's Envoy pod as drainguard rewrites it, with the protected label (also ./report-real-cluster.ts's pods). */
export function protectedTemplate(): Pod {
  const pod = contourPod();
  const result = mutate(pod, defaultConfig());
  if (result.status !== 'mutated') throw new Error(`mutate did not rewrite the Contour pod (${result.status})`);
  return applyPatch(pod, result.patch);
}

function applyPatch(pod: Pod, patch: readonly unknown[]): Pod {
  return applyJsonPatch(structuredClone(pod), patch as Operation[], false, false).newDocument;
}

/** The termination message of an Envoy that drained for `durationMs`: a finished drain record. */
export function benchDrainRecord(durationMs: number): string {
  return encodeDrainRecord({
    state: 'finished',
    version: '0.1.0',
    startedAt: new Date(Date.now() - durationMs).toISOString(),
    deadlineMs: 290_000,
    reason: 'drained',
    durationMs,
    connectionsAtStart: 120,
    connectionsAtEnd: 0,
    openListeners: [],
    openListenersOmitted: 0,
    healthcheckFailedAtMs: 2,
    envoyVersion: '1.31.2',
  });
}

export interface ReportApiStub {
  port: number;
  /** A kubeconfig file's content for this stub. */
  kubeconfig: string;
  webhookConfigName: string;
  /** Pod Events created so far. */
  readonly eventsCreated: number;
  /** Milliseconds from each termination written to its pod Event received, in order of arrival. */
  readonly reportLatenciesMs: number[];
  /** Watches open now. */
  readonly openWatches: number;
  /** Replays one pod's rollout (deleted, Envoy terminated with a record, gone, replaced). */
  drain(): void;
  close(): Promise<void>;
}

export async function startReportApiStub(certs: BenchCertificates, podCount: number): Promise<ReportApiStub> {
  const token = randomBytes(24).toString('hex');
  const template = protectedTemplate();
  let resourceVersion = 1000;
  const pods = new Map<string, Json>();
  const order: string[] = [];
  const watches = new Set<ServerResponse>();
  /** The scope's watches (webhook configuration, namespaces): open, never written to. */
  const quietWatches = new Set<ServerResponse>();
  const eventNames = new Set<string>();
  const terminatedAt = new Map<string, number>();
  const latencies: number[] = [];
  let eventsCreated = 0;
  let generation = 0;
  let next = 0;
  const daemonSetUid = Array.from({ length: NAMESPACES }, () => randomUUID());

  const newPod = (index: number): Json => {
    const namespace = `ns-${index % NAMESPACES}`;
    const name = `envoy-${index}-${(generation++).toString(36)}`;
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const containers = (template.spec.containers ?? []).map((container) => ({
      name: container.name,
      state: { running: { startedAt: now } },
      lastState: {},
      ready: true,
      restartCount: 0,
      image: container.image,
      imageID: `docker.io/envoyproxy/envoy@sha256:${'0'.repeat(64)}`,
      containerID: `containerd://${randomBytes(32).toString('hex')}`,
      started: true,
    }));
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      ...structuredClone(template),
      metadata: {
        ...structuredClone(template.metadata ?? {}),
        name,
        namespace,
        uid: randomUUID(),
        resourceVersion: String(++resourceVersion),
        creationTimestamp: now,
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'envoy', uid: daemonSetUid[index % NAMESPACES], controller: true, blockOwnerDeletion: true }],
      },
      status: { phase: 'Running', hostIP: '10.0.0.1', podIP: '10.1.0.1', startTime: now, containerStatuses: containers },
    };
  };
  const key = (pod: Json) => `${(pod.metadata as Json).namespace}/${(pod.metadata as Json).name}`;
  for (let i = 0; i < podCount; i++) {
    const pod = newPod(i);
    pods.set(key(pod), pod);
    order.push(key(pod));
  }

  // The events since the start, for watches that resume from a resourceVersion (the list's).
  const history: { resourceVersion: number; line: string }[] = [];
  const broadcast = (type: string, object: Json) => {
    const line = `${JSON.stringify({ type, object })}\n`;
    history.push({ resourceVersion, line });
    if (history.length > HISTORY) history.shift();
    for (const res of watches) res.write(line);
  };
  const write = (pod: Json, type: 'MODIFIED' | 'DELETED' | 'ADDED') => {
    (pod.metadata as Json).resourceVersion = String(++resourceVersion);
    broadcast(type, pod);
  };

  const list = (url: URL, res: ServerResponse) => {
    if (url.searchParams.get('labelSelector') !== SELECTOR) return send(res, 400, statusBody(400, 'BadRequest', 'unexpected label selector'));
    const limit = Number(url.searchParams.get('limit') ?? '0') || order.length;
    const token = url.searchParams.get('continue');
    const start = token ? Number(Buffer.from(token, 'base64url').toString('utf8')) : 0;
    const keys = order.slice(start, start + limit);
    const metadata: Json = { resourceVersion: String(resourceVersion) };
    if (start + limit < order.length) {
      metadata.continue = Buffer.from(String(start + limit)).toString('base64url');
      metadata.remainingItemCount = order.length - start - limit;
    }
    const items = keys.map((k) => {
      const { apiVersion: _a, kind: _k, ...item } = pods.get(k)!;
      return item;
    });
    send(res, 200, { kind: 'PodList', apiVersion: 'v1', metadata, items });
  };

  /** The webhook configuration (by name) and the namespaces, as lists; undefined for any other path. */
  const scopeList = (url: URL): Json | undefined => {
    const metadata = { resourceVersion: String(resourceVersion) };
    if (url.pathname === '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations') {
      const named = url.searchParams.get('fieldSelector') === `metadata.name=${STUB_WEBHOOK_CONFIGURATION}`;
      const configuration = { metadata: { name: STUB_WEBHOOK_CONFIGURATION, uid: 'webhook-uid', resourceVersion: '1' }, webhooks: [{ name: 'pods.drainguard.io', namespaceSelector: { matchLabels: OPT_IN } }] };
      return { kind: 'MutatingWebhookConfigurationList', apiVersion: 'admissionregistration.k8s.io/v1', metadata, items: named ? [configuration] : [] };
    }
    if (url.pathname === '/api/v1/namespaces') {
      const items = Array.from({ length: NAMESPACES }, (_, index) => ({
        metadata: { name: `ns-${index}`, uid: `ns-uid-${index}`, resourceVersion: '1', labels: { 'kubernetes.io/metadata.name': `ns-${index}`, ...OPT_IN } },
      }));
      return { kind: 'NamespaceList', apiVersion: 'v1', metadata, items };
    }
    return undefined;
  };

  const server: Server = createServer({ cert: readFileSync(certs.certPath), key: readFileSync(certs.keyPath) }, (req, res) => void handle(req, res));
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'https://stub');
    const body = await readBody(req);
    if (req.headers.authorization !== `Bearer ${token}`) return send(res, 401, statusBody(401, 'Unauthorized', 'Unauthorized'));
    if (req.method === 'GET' && url.pathname === '/api/v1/pods') {
      if (url.searchParams.get('watch') !== 'true') return list(url, res);
      res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      res.flushHeaders();
      const from = Number(url.searchParams.get('resourceVersion') ?? '0');
      if (history.length > 0 && from < history[0]!.resourceVersion - 1) {
        res.end(`${JSON.stringify({ type: 'ERROR', object: statusBody(410, 'Expired', `too old resource version: ${from}`) })}\n`);
        return;
      }
      for (const entry of history) if (entry.resourceVersion > from) res.write(entry.line);
      watches.add(res);
      res.once('close', () => watches.delete(res));
      return;
    }
    const scope = scopeList(url);
    if (req.method === 'GET' && scope) {
      if (url.searchParams.get('watch') !== 'true') return send(res, 200, scope);
      // Nothing in the reporter's scope changes during a benchmark: the watch stays open and quiet.
      res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      res.flushHeaders();
      quietWatches.add(res);
      res.once('close', () => quietWatches.delete(res));
      return;
    }
    const event = /^\/api\/v1\/namespaces\/([^/]+)\/events$/.exec(url.pathname);
    if (req.method === 'POST' && event) {
      const object = JSON.parse(body) as { metadata: { name: string }; involvedObject: { kind: string; name: string; namespace: string } };
      if (eventNames.has(`${event[1]}/${object.metadata.name}`)) return send(res, 409, statusBody(409, 'AlreadyExists', `events "${object.metadata.name}" already exists`));
      eventNames.add(`${event[1]}/${object.metadata.name}`);
      if (object.involvedObject.kind === 'Pod') {
        eventsCreated++;
        const pod = `${object.involvedObject.namespace}/${object.involvedObject.name}`;
        const written = terminatedAt.get(pod);
        if (written !== undefined) latencies.push(performance.now() - written);
        terminatedAt.delete(pod);
      }
      return send(res, 201, { ...object, metadata: { ...object.metadata, uid: randomUUID(), resourceVersion: String(++resourceVersion) } });
    }
    send(res, 404, statusBody(404, 'NotFound', 'the server could not find the requested resource'));
  };
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    port,
    webhookConfigName: STUB_WEBHOOK_CONFIGURATION,
    kubeconfig: JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'stub', cluster: { server: `https://127.0.0.1:${port}`, 'certificate-authority-data': Buffer.from(certs.ca).toString('base64') } }],
      users: [{ name: 'reporter', user: { token } }],
      contexts: [{ name: 'stub', context: { cluster: 'stub', user: 'reporter' } }],
      'current-context': 'stub',
    }),
    get eventsCreated() {
      return eventsCreated;
    },
    get reportLatenciesMs() {
      return latencies;
    },
    get openWatches() {
      return watches.size;
    },
    drain() {
      const slot = next++ % order.length;
      const old = pods.get(order[slot]!)!;
      const metadata = old.metadata as Json;
      const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
      metadata.deletionTimestamp = now;
      metadata.deletionGracePeriodSeconds = 300;
      write(old, 'MODIFIED');
      const statuses = (old.status as { containerStatuses: Json[] }).containerStatuses;
      for (const status of statuses) {
        const state = status.state as { running?: { startedAt: string } };
        status.state = {
          terminated: {
            exitCode: 0,
            reason: 'Completed',
            ...(status.name === 'envoy' ? { message: benchDrainRecord(12_000 + (slot % 5000)) } : {}),
            startedAt: state.running?.startedAt,
            finishedAt: now,
            containerID: status.containerID,
          },
        };
        status.ready = false;
      }
      (old.status as Json).phase = 'Succeeded';
      write(old, 'MODIFIED');
      terminatedAt.set(order[slot]!, performance.now());
      write(old, 'DELETED');
      pods.delete(order[slot]!);
      const replacement = newPod(slot);
      pods.set(key(replacement), replacement);
      order[slot] = key(replacement);
      write(replacement, 'ADDED');
    },
    async close() {
      for (const res of [...watches, ...quietWatches]) res.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
