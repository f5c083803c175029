/**
 * An HTTPS stand-in for kube-apiserver covering what drainguard calls: reads (get, and list with label
 * selectors and `limit`/`continue` paging) of namespaces, pods, services, configmaps, secrets,
 * deployments, replicasets, daemonsets, endpointslices, events and MutatingWebhookConfigurations;
 * watches as the watch cache serves them (resourceVersion, bookmarks, 410 Expired, label selectors:
 * ./kube/watch-cache); creates (409 AlreadyExists; Events validated as the v1 API validates them) and
 * replaces with resourceVersion preconditions; JSON patches. It answers with the real API's status
 * codes, list shapes and `Status` bodies (403s worded as the authorizer words them), so drainguard is
 * exercised through the real @kubernetes/client-node, including its error mapping. Tests can inspect
 * every request, deny requests as RBAC would, hold requests at a gate to force races
 * deterministically, restart the API server, and drive pods through their life as the kubelet does
 * (./kube/kubelet).
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { applyPatch, type Operation } from 'rfc6902';
import type { KubeConfig } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { loadKubernetesClient } from '../../src/kube-api/load';
import { createCertificateAuthority, createServingCertificate } from '../../src/certs/pki';
import { parseLabelSelector, selects } from './kube/selector';
import * as status from './kube/status';
import { WatchCache, type ChangeType } from './kube/watch-cache';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; uid?: string; [key: string]: unknown };
  [key: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  /** The query string without `?`, when there is one (`limit=500&continue=…`). */
  query?: string;
  contentType?: string;
  body?: unknown;
  status: number;
  /** What RBAC would authorize: the verb and the group and plural resource, for requests to a served resource. */
  rbac?: { verb: Verb; group: string; resource: string; namespace?: string };
}

/** The RBAC verbs a request maps to. */
export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';

/** A request the double refuses with 403, as RBAC would when no rule allows it. */
export interface DenyRule {
  verb: Verb;
  /** Plural resource, e.g. `pods`, `endpointslices`. */
  resource: string;
  /** Only requests in this namespace; absent: everywhere, including cluster-scoped requests. */
  namespace?: string;
}

/** An RBAC PolicyRule, as a Role or ClusterRole holds it. */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

/** The rules of one Role (bound in `namespace`) or ClusterRole (no namespace: everywhere). */
export interface Grant {
  namespace?: string;
  rules: PolicyRule[];
}

interface Gate {
  matches: (method: string, path: string) => boolean;
  waiting: (() => void)[];
  count: number;
}

interface ResourceType {
  resource: string;
  group: string;
  version: string;
  kind: string;
  namespaced: boolean;
}

/** The resources the double serves; any other path is answered 404 like an unknown resource. */
const RESOURCE_TYPES: readonly ResourceType[] = [
  { resource: 'namespaces', group: '', version: 'v1', kind: 'Namespace', namespaced: false },
  { resource: 'nodes', group: '', version: 'v1', kind: 'Node', namespaced: false },
  { resource: 'pods', group: '', version: 'v1', kind: 'Pod', namespaced: true },
  { resource: 'services', group: '', version: 'v1', kind: 'Service', namespaced: true },
  { resource: 'configmaps', group: '', version: 'v1', kind: 'ConfigMap', namespaced: true },
  { resource: 'secrets', group: '', version: 'v1', kind: 'Secret', namespaced: true },
  { resource: 'deployments', group: 'apps', version: 'v1', kind: 'Deployment', namespaced: true },
  { resource: 'replicasets', group: 'apps', version: 'v1', kind: 'ReplicaSet', namespaced: true },
  { resource: 'daemonsets', group: 'apps', version: 'v1', kind: 'DaemonSet', namespaced: true },
  { resource: 'endpointslices', group: 'discovery.k8s.io', version: 'v1', kind: 'EndpointSlice', namespaced: true },
  { resource: 'events', group: '', version: 'v1', kind: 'Event', namespaced: true },
  {
    resource: 'mutatingwebhookconfigurations',
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind: 'MutatingWebhookConfiguration',
    namespaced: false,
  },
];

const apiVersionOf = (type: ResourceType) => (type.group ? `${type.group}/${type.version}` : type.version);

/** One parsed request path: `/api/v1/namespaces/ns/pods/name`, `/apis/apps/v1/deployments`, … */
interface Target {
  type: ResourceType;
  namespace?: string;
  name?: string;
}

function parseTarget(path: string): Target | undefined {
  const segments = path.split('/').filter(Boolean).map(decodeURIComponent);
  let group: string;
  let version: string;
  let rest: string[];
  if (segments[0] === 'api') [group, version, rest] = ['', segments[1] ?? '', segments.slice(2)];
  else if (segments[0] === 'apis') [group, version, rest] = [segments[1] ?? '', segments[2] ?? '', segments.slice(3)];
  else return undefined;
  let namespace: string | undefined;
  // `/api/v1/namespaces/NAME` is a Namespace; `/api/v1/namespaces/NS/RESOURCE[/NAME]` is inside one.
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  if (rest.length < 1 || rest.length > 2) return undefined;
  const type = RESOURCE_TYPES.find((t) => t.group === group && t.version === version && t.resource === rest[0]);
  if (!type || (namespace !== undefined && !type.namespaced)) return undefined;
  return { type, ...(namespace !== undefined ? { namespace } : {}), ...(rest[1] !== undefined ? { name: rest[1] } : {}) };
}

function verbOf(method: string, target: Target, params: URLSearchParams): Verb | undefined {
  // apiserver's RequestInfoFactory: a collection GET with watch=true (or 1) is the `watch` verb.
  const watch = params.get('watch');
  if (method === 'GET' && target.name === undefined && (watch === 'true' || watch === '1')) return 'watch';
  if (method === 'GET') return target.name === undefined ? 'list' : 'get';
  if (method === 'POST' && target.name === undefined) return 'create';
  if (target.name === undefined) return undefined;
  return ({ PUT: 'update', PATCH: 'patch', DELETE: 'delete' } as const)[method as 'PUT' | 'PATCH' | 'DELETE'];
}

/** kube-apiserver's continue token: URL-safe base64 of `{"v":"meta.k8s.io/v1","rv":N,"start":KEY}`. */
function encodeContinue(resourceVersion: number, startKey: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: resourceVersion, start: startKey })).toString('base64url');
}

function decodeContinue(token: string): { start: string } | string {
  try {
    const decoded = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { v?: unknown; start?: unknown };
    if (decoded.v !== 'meta.k8s.io/v1' || typeof decoded.start !== 'string') return 'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)';
    return { start: decoded.start };
  } catch (error) {
    return `continue key is not valid: ${(error as Error).message}`;
  }
}

/**
 * What kube-apiserver refuses in a core/v1 Event it is asked to create (pkg/apis/core/validation/events.go,
 * `legacyValidateEvent`: the v1 API skips the stricter events.k8s.io checks).
 */
function eventProblems(event: KubeObject, namespace: string | undefined): string[] {
  const problems: string[] = [];
  const involved = (event.involvedObject ?? {}) as { namespace?: unknown };
  const involvedNamespace = typeof involved.namespace === 'string' ? involved.namespace : '';
  const eventTime = event.eventTime;
  if (eventTime === undefined || eventTime === null) {
    if (involvedNamespace === '' ? namespace !== undefined && namespace !== 'default' : namespace !== involvedNamespace) {
      problems.push(`involvedObject.namespace: Invalid value: ${JSON.stringify(involvedNamespace)}: does not match event.namespace`);
    }
  } else {
    const text = (key: string) => (typeof event[key] === 'string' ? (event[key] as string) : '');
    if (involvedNamespace === '' && namespace !== 'default' && namespace !== 'kube-system') {
      problems.push(`involvedObject.namespace: Invalid value: "": does not match event.namespace`);
    }
    if (text('reportingController') === '') problems.push('reportingController: Required value');
    if (text('reportingInstance') === '') problems.push('reportingInstance: Required value');
    if (text('reportingInstance').length > 128) problems.push('reportingInstance: Invalid value: "": can have at most 128 characters');
    if (text('action') === '') problems.push('action: Required value');
    if (text('reason') === '') problems.push('reason: Required value');
    if (text('reason').length > 128) problems.push('reason: Invalid value: "": can have at most 128 characters');
    if (text('message').length > 1024) problems.push('message: Invalid value: "": can have at most 1024 characters');
  }
  return problems;
}

export class KubeApiDouble {
  readonly requests: RecordedRequest[] = [];
  /** The user the bearer token authenticates as; 403 messages name it. */
  readonly user = 'test-operator';
  /** Objects by resource, then by `namespace/name` (`/name` when cluster-scoped). */
  private readonly store = new Map<string, Map<string, KubeObject>>();
  private readonly denied: DenyRule[] = [];
  /** When set, only what these grants allow is allowed, as RBAC evaluates rules (see `allowOnly`). */
  private grants: Grant[] | undefined;
  private readonly gates: Gate[] = [];
  private readonly holds: { matches: Gate['matches']; arrive: () => void; released: Promise<void> }[] = [];
  private readonly cuts: { matches: Gate['matches']; done: () => void }[] = [];
  private resourceVersion = 1000;
  /** What `GET /version` answers (apimachinery's version.Info); tests set it to play another release. */
  serverVersion: { major: string; minor: string; gitVersion: string; [field: string]: string } = {
    major: '1',
    minor: '32',
    gitVersion: 'v1.32.0',
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2024-12-11T00:00:00Z',
    goVersion: 'go1.23.3',
    compiler: 'gc',
    platform: 'linux/amd64',
  };
  /** API groups served besides the built-in ones (as a CRD's group would be), for discovery. */
  private readonly servedGroups = new Map<string, { name: string; kind: string; namespaced: boolean }[]>();
  private readonly watchCache = new WatchCache(() => this.resourceVersion);
  /** Conditions tests wait for, checked after every request, write and watch change. */
  private readonly waiters = new Set<{ test: () => boolean; resolve: () => void }>();
  private readonly token = randomUUID();
  private readonly sockets = new Set<Socket>();
  private port = 0;
  private constructor(
    private readonly server: Server,
    readonly caCert: string,
  ) {
    this.watchCache.onChange = () => this.notify();
  }

  static async start(): Promise<KubeApiDouble> {
    const validity = { now: new Date(), validityDays: 1 };
    const ca = createCertificateAuthority('kube-api-double CA', validity);
    const serving = createServingCertificate(ca, ['127.0.0.1', 'localhost'], validity);
    const server = createServer({ cert: serving.cert, key: serving.key });
    const double = new KubeApiDouble(server, ca.cert);
    server.on('request', (req, res) => void double.handle(req, res));
    // Every socket, including ones still in their TLS handshake, which closeAllConnections() does not see.
    server.on('connection', (socket: Socket) => {
      // As Go's net package does for kube-apiserver: no Nagle delay on small answers.
      socket.setNoDelay(true);
      double.sockets.add(socket);
      socket.once('close', () => double.sockets.delete(socket));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    double.port = (server.address() as AddressInfo).port;
    return double;
  }

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  /** A KubeConfig for the real client library: TLS verified against the double's CA, bearer token. */
  async kubeConfig(): Promise<KubeConfig> {
    const { KubeConfig } = await loadKubernetesClient();
    const config = new KubeConfig();
    config.loadFromString(this.kubeconfigYaml());
    return config;
  }

  /** The same, as a kubeconfig file's content (for `--kubeconfig` in a spawned process). */
  kubeconfigYaml(options: { namespace?: string } = {}): string {
    return JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'double', cluster: { server: this.url, 'certificate-authority-data': Buffer.from(this.caCert).toString('base64') } }],
      users: [{ name: 'drainguard', user: { token: this.token } }],
      contexts: [{ name: 'double', context: { cluster: 'double', user: 'drainguard', ...(options.namespace ? { namespace: options.namespace } : {}) } }],
      'current-context': 'double',
    });
  }

  async close(): Promise<void> {
    for (const gate of this.gates.splice(0)) gate.waiting.splice(0).forEach((release) => release());
    if (!this.server.listening) return;
    await this.stopListening();
  }

  private async stopListening(): Promise<void> {
    this.watchCache.dropAll();
    const closed = once(this.server, 'close');
    this.server.close();
    this.server.closeAllConnections();
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  /**
   * kube-apiserver restarting: every connection (open watches included) is cut, connections are refused
   * until it is back on the same address, and its watch cache starts again from a fresh list, so a
   * client resuming a watch from an older resourceVersion gets 410 Expired. The store (etcd) keeps
   * everything. `whileDown` runs while nothing is listening.
   */
  async restart(whileDown?: () => void | Promise<void>): Promise<void> {
    await this.stopListening();
    await whileDown?.();
    this.watchCache.relist();
    this.server.listen(this.port, '127.0.0.1');
    await once(this.server, 'listening');
  }

  /** Forgets the watch history so far (a compaction): watches resuming from before now get 410 Expired. */
  forgetWatchHistory(): void {
    this.watchCache.forgetUpTo(this.resourceVersion);
  }

  /** A BOOKMARK at the current resourceVersion to every open watch that allowed bookmarks. */
  bookmark(): void {
    this.watchCache.bookmark();
  }

  /** Ends every open watch as its timeout would: a bookmark where allowed, then the end of the stream. */
  endWatches(): void {
    this.watchCache.endAll();
  }

  /** Watches open now. */
  get openWatches(): number {
    return this.watchCache.openWatches;
  }

  /**
   * Resolves once `test` holds. It is checked now and after every request answered, every write and
   * every watch opened or closed: tests wait for what they need, never for a time.
   */
  until(test: () => boolean): Promise<void> {
    if (test()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.add({ test, resolve }));
  }

  private notify(): void {
    for (const waiter of [...this.waiters]) {
      if (waiter.test()) {
        this.waiters.delete(waiter);
        waiter.resolve();
      }
    }
  }

  /** Holds matching requests until `count` of them have arrived, then lets them all through at once. */
  gate(method: string, pathPattern: RegExp, count: number): void {
    this.gates.push({ matches: (m, p) => m === method && pathPattern.test(p), waiting: [], count });
  }

  /**
   * Holds the next matching request: `arrived` resolves when it is held, `release()` lets it proceed.
   * Lets a test change the world between a client's read and its write.
   */
  hold(method: string, pathPattern: RegExp): { arrived: Promise<void>; release: () => void } {
    let signalArrived!: () => void;
    const arrived = new Promise<void>((resolve) => (signalArrived = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    this.holds.push({ matches: (m, p) => m === method && pathPattern.test(p), arrive: signalArrived, released });
    return { arrived, release };
  }

  /**
   * Serves discovery for a group version, as the API server does once a CRD of that group is
   * established: `GET /apis/GROUP/VERSION` answers an APIResourceList (with each resource's `/status`
   * subresource, as CRDs with a status subresource have). Objects of it are not stored.
   */
  serveGroupVersion(groupVersion: string, resources: { name: string; kind: string; namespaced: boolean }[]): void {
    this.servedGroups.set(groupVersion, resources);
  }

  /**
   * From now on the user may do only what `grants` allow, as the RBAC authorizer decides it: a rule
   * matches when its apiGroups, resources and verbs hold the request's (or `*`) and, when it names
   * resourceNames, the request names one of them (a list or a create names none); a Role's rules hold
   * only in its namespace. Everything else is 403, worded as RBAC words it.
   */
  allowOnly(grants: Grant[]): void {
    this.grants = grants;
  }

  private allowedByGrants(verb: Verb, type: ResourceType, namespace: string | undefined, name: string | undefined): boolean {
    if (this.grants === undefined) return true;
    const has = (list: readonly string[], value: string) => list.includes('*') || list.includes(value);
    return this.grants.some(
      (grant) =>
        (grant.namespace === undefined || grant.namespace === namespace) &&
        grant.rules.some(
          (rule) =>
            has(rule.apiGroups, type.group) &&
            has(rule.resources, type.resource) &&
            has(rule.verbs, verb) &&
            (rule.resourceNames === undefined || rule.resourceNames.length === 0 || (name !== undefined && rule.resourceNames.includes(name))),
        ),
    );
  }

  /**
   * The next matching request is carried out, then its connection is cut before the answer: what a
   * client sees when the API server (or the network) fails after a write was applied. Resolves when
   * it has happened.
   */
  cutAfterApplying(method: string, pathPattern: RegExp): Promise<void> {
    return new Promise((done) => this.cuts.push({ matches: (m, p) => m === method && pathPattern.test(p), done }));
  }

  /** From now on, answer matching requests 403 Forbidden (checked before existence, as RBAC is). */
  deny(rule: DenyRule): void {
    this.denied.push(rule);
  }

  /** Every request that was not a read: a read-only client must leave this empty. */
  writes(): RecordedRequest[] {
    return this.requests.filter((request) => request.method !== 'GET');
  }

  /**
   * Stores an object as if it had been created: `apiVersion` and `kind` pick the resource; uid,
   * creationTimestamp and resourceVersion are set, and a Namespace gets the immutable
   * `kubernetes.io/metadata.name` label the API server adds.
   */
  put(object: KubeObject): KubeObject {
    const type = RESOURCE_TYPES.find((t) => apiVersionOf(t) === object.apiVersion && t.kind === object.kind);
    if (!type) throw new Error(`the API double does not serve ${object.apiVersion} ${object.kind}`);
    if (type.namespaced !== (object.metadata.namespace !== undefined)) {
      throw new Error(`${object.kind} ${object.metadata.name}: metadata.namespace must be ${type.namespaced ? 'set' : 'absent'}`);
    }
    let metadata = object.metadata;
    if (type.kind === 'Namespace') {
      const labels = (metadata.labels ?? {}) as Record<string, string>;
      metadata = { ...metadata, labels: { ...labels, 'kubernetes.io/metadata.name': metadata.name } };
    }
    const previous = this.bucket(type).get(this.key(metadata.namespace, metadata.name));
    // Putting an object again is an update of it: it keeps its uid, as a controller's update would.
    const identity = previous ? { uid: previous.metadata.uid, creationTimestamp: previous.metadata.creationTimestamp } : {};
    const stored = this.save(type, this.stamp({ ...object, metadata: { ...identity, ...metadata } }));
    return structuredClone(stored);
  }

  /**
   * Changes a stored object as a controller or the kubelet would (an update: MODIFIED to watchers);
   * uid, name, namespace and creationTimestamp stay. Returns the stored copy.
   */
  update(resource: string, namespace: string | undefined, name: string, change: (object: KubeObject) => KubeObject): KubeObject {
    const type = this.typeOf(resource);
    const current = this.bucket(type).get(this.key(namespace, name));
    if (!current) throw new Error(`no ${resource} ${namespace ?? ''}/${name} to update`);
    const changed = change(structuredClone(current));
    const { uid, creationTimestamp } = current.metadata;
    const stored = this.save(type, this.stamp({ ...changed, metadata: { ...changed.metadata, name, ...(namespace !== undefined ? { namespace } : {}), uid, creationTimestamp } }));
    return structuredClone(stored);
  }

  /** Removes a stored object (DELETED to watchers, with the deletion's resourceVersion); returns it. */
  remove(resource: string, namespace: string | undefined, name: string): KubeObject {
    const type = this.typeOf(resource);
    const key = this.key(namespace, name);
    const current = this.bucket(type).get(key);
    if (!current) throw new Error(`no ${resource} ${namespace ?? ''}/${name} to remove`);
    this.bucket(type).delete(key);
    this.resourceVersion += 1;
    const deleted = { ...current, metadata: { ...current.metadata, resourceVersion: String(this.resourceVersion) } };
    this.watchCache.record({ resourceVersion: this.resourceVersion, resource: type.resource, type: 'DELETED', object: deleted });
    this.notify();
    return structuredClone(deleted);
  }

  /** Copies of the stored objects of a resource (in one namespace, or all), in key order. */
  list<T = KubeObject>(resource: string, namespace?: string): T[] {
    return [...this.bucket(this.typeOf(resource)).entries()]
      .filter(([, object]) => namespace === undefined || object.metadata.namespace === namespace)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, object]) => structuredClone(object) as unknown as T);
  }

  /**
   * Events reaching the API server's --event-ttl: removed from the store as their etcd lease expires
   * (all of them, or those `expired` picks). Returns how many went.
   */
  expireEvents(expired: (event: KubeObject) => boolean = () => true): number {
    const bucket = this.bucket(this.typeOf('events'));
    const gone = [...bucket.values()].filter(expired);
    for (const event of gone) this.remove('events', event.metadata.namespace, event.metadata.name);
    return gone.length;
  }

  private typeOf(resource: string): ResourceType {
    const type = RESOURCE_TYPES.find((t) => t.resource === resource);
    if (!type) throw new Error(`the API double does not serve ${resource}`);
    return type;
  }

  /** Stores a stamped object and tells watchers (ADDED or MODIFIED, with the object before). */
  private save(type: ResourceType, object: KubeObject): KubeObject {
    const bucket = this.bucket(type);
    const key = this.key(object.metadata.namespace, object.metadata.name);
    const previous = bucket.get(key);
    bucket.set(key, object);
    const change: ChangeType = previous ? 'MODIFIED' : 'ADDED';
    this.watchCache.record({ resourceVersion: Number(object.metadata.resourceVersion), resource: type.resource, type: change, object, ...(previous ? { previous } : {}) });
    this.notify();
    return object;
  }

  /** A copy of a stored object, or undefined. */
  get<T = KubeObject>(resource: string, namespace: string | undefined, name: string): T | undefined {
    const type = this.typeOf(resource);
    const stored = this.bucket(type).get(this.key(namespace, name));
    return stored && (structuredClone(stored) as unknown as T);
  }

  putWebhookConfiguration(configuration: Omit<KubeObject, 'metadata'> & { metadata: { name: string; [key: string]: unknown } }): void {
    this.put({ ...configuration, apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration' });
  }

  /** A copy of the stored configuration, typed as the test needs to read it. */
  webhookConfiguration<T = KubeObject>(name: string): T {
    const stored = this.get<T>('mutatingwebhookconfigurations', undefined, name);
    if (!stored) throw new Error(`no MutatingWebhookConfiguration ${name}`);
    return stored;
  }

  secret(namespace: string, name: string): KubeObject | undefined {
    return this.get('secrets', namespace, name);
  }

  /** Decoded `data` of a stored Secret. */
  secretData(namespace: string, name: string): Record<string, string> | undefined {
    const data = this.secret(namespace, name)?.data as Record<string, string> | undefined;
    return data && Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
  }

  private bucket(type: ResourceType): Map<string, KubeObject> {
    let bucket = this.store.get(type.resource);
    if (!bucket) this.store.set(type.resource, (bucket = new Map()));
    return bucket;
  }

  /** etcd's key order: namespace, then name. */
  private key(namespace: string | undefined, name: string): string {
    return `${namespace ?? ''}/${name}`;
  }

  private stamp(object: KubeObject): KubeObject {
    this.resourceVersion += 1;
    return {
      ...object,
      metadata: {
        uid: randomUUID(),
        creationTimestamp: new Date().toISOString(),
        ...object.metadata,
        resourceVersion: String(this.resourceVersion),
      },
    };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'https://double');
    const path = url.pathname;
    const query = url.search.slice(1);
    await this.waitAtGate(method, path);
    const contentType = req.headers['content-type'];
    let body: unknown;
    let rbac: RecordedRequest['rbac'];
    const cut = this.cuts.findIndex((c) => c.matches(method, path));
    const reply = (code: number, payload: unknown) => {
      if (cut >= 0) {
        // Done, but the answer is lost: the connection drops before a byte of it is sent.
        this.cuts.splice(cut, 1)[0]!.done();
        this.requests.push({ method, path, ...(query ? { query } : {}), status: 0, ...(rbac ? { rbac } : {}) });
        res.socket?.destroy();
        this.notify();
        return;
      }
      this.requests.push({
        method,
        path,
        ...(query ? { query } : {}),
        ...(contentType ? { contentType } : {}),
        ...(body !== undefined ? { body } : {}),
        status: code,
        ...(rbac ? { rbac } : {}),
      });
      res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
      this.notify();
    };
    // `system:public-info-viewer` lets anyone read /version, authenticated or not.
    if (method === 'GET' && path === '/version') return reply(200, this.serverVersion);
    if (req.headers.authorization !== `Bearer ${this.token}`) return reply(401, status.unauthorized());
    if (chunks.length > 0) {
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch (error) {
        return reply(400, status.badRequest(`invalid JSON: ${(error as Error).message}`));
      }
    }
    const discovery = /^\/apis\/([^/]+\/[^/]+)$/.exec(path);
    const served = discovery && this.servedGroups.get(discovery[1]!);
    if (method === 'GET' && served) {
      const resources = served.flatMap((resource) => [
        { name: resource.name, singularName: resource.kind.toLowerCase(), namespaced: resource.namespaced, kind: resource.kind, verbs: ['delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch'] },
        { name: `${resource.name}/status`, singularName: '', namespaced: resource.namespaced, kind: resource.kind, verbs: ['get', 'patch', 'update'] },
      ]);
      return reply(200, { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: discovery![1], resources });
    }
    if (method === 'POST' && path === '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews') return reply(201, this.accessReview(body));
    const target = parseTarget(path);
    const verb = target && verbOf(method, target, url.searchParams);
    if (!target) return reply(404, status.pathNotFound());
    if (!verb) return reply(405, status.notAllowed(method));
    const { type, namespace, name } = target;
    rbac = { verb, group: type.group, resource: type.resource, ...(namespace !== undefined ? { namespace } : {}) };
    const deniedByRule = this.denied.some((rule) => rule.verb === verb && rule.resource === type.resource && (rule.namespace === undefined || rule.namespace === namespace));
    if (deniedByRule || !this.allowedByGrants(verb, type, namespace, verb === 'create' ? undefined : name)) {
      return reply(
        403,
        status.forbidden({
          user: this.user,
          verb,
          resource: type.resource,
          group: type.group,
          ...(namespace !== undefined ? { namespace } : {}),
          ...(name !== undefined ? { name } : {}),
        }),
      );
    }
    const ref = { resource: type.resource, name: name ?? '', ...(type.group ? { group: type.group } : {}) };
    const bucket = this.bucket(type);
    switch (verb) {
      case 'list':
        return this.answerList(type, namespace, url.searchParams, reply);
      case 'watch':
        return this.watch(type, namespace, url.searchParams, res, (code) =>
          this.requests.push({ method, path, ...(query ? { query } : {}), status: code, ...(rbac ? { rbac } : {}) }),
        );
      case 'get': {
        const current = bucket.get(this.key(namespace, name!));
        return current ? reply(200, current) : reply(404, status.notFound(ref));
      }
      case 'create': {
        const object = body as KubeObject;
        const objectName = object?.metadata?.name ?? '';
        if (!objectName) return reply(422, status.invalidPatch('metadata.name: Required value'));
        const created = { ...ref, name: objectName };
        const key = this.key(namespace, objectName);
        if (bucket.has(key)) return reply(409, status.alreadyExists(created));
        if (type.resource === 'events') {
          const problems = eventProblems(object, namespace);
          if (problems.length > 0) return reply(422, status.invalid('Event', objectName, problems));
        }
        const { resourceVersion: _ignored, ...metadata } = object.metadata;
        const stored = this.save(type, this.stamp({ ...object, metadata: { ...metadata, name: objectName, ...(namespace !== undefined ? { namespace } : {}) } }));
        return reply(201, stored);
      }
      case 'update': {
        const key = this.key(namespace, name!);
        const current = bucket.get(key);
        if (!current) return reply(404, status.notFound(ref));
        const object = body as KubeObject;
        const precondition = object?.metadata?.resourceVersion;
        // Like the real API: an update without resourceVersion is unconditional; a stale one conflicts.
        if (precondition !== undefined && precondition !== current.metadata.resourceVersion) return reply(409, status.conflict(ref));
        const replaced = this.stamp({
          ...object,
          metadata: {
            ...object.metadata,
            name: name!,
            ...(namespace !== undefined ? { namespace } : {}),
            uid: current.metadata.uid,
            creationTimestamp: current.metadata.creationTimestamp,
          },
        });
        this.save(type, replaced);
        return reply(200, replaced);
      }
      case 'patch': {
        const key = this.key(namespace, name!);
        const current = bucket.get(key);
        if (!current) return reply(404, status.notFound(ref));
        if (contentType !== 'application/json-patch+json') return reply(415, status.unsupportedMediaType(String(contentType)));
        if (!Array.isArray(body)) return reply(400, status.badRequest('a JSON patch must be an array of operations'));
        const patched = structuredClone(current);
        const failures = applyPatch(patched, body as Operation[]).filter((result) => result !== null);
        if (failures.length > 0) return reply(422, status.invalidPatch(`jsonpatch operation does not apply: ${failures[0]!.message}`));
        // As in the API server, a resourceVersion inside the patched object is an update precondition.
        if (patched.metadata.resourceVersion !== current.metadata.resourceVersion) return reply(409, status.conflict(ref));
        const stored = this.save(type, this.stamp(patched));
        return reply(200, stored);
      }
      default:
        return reply(405, status.notAllowed(method));
    }
  }

  /**
   * A list as kube-apiserver returns it: `<Kind>List` with `metadata.resourceVersion`, items in key
   * order without their own kind/apiVersion, filtered by `labelSelector`, paged by `limit`/`continue`
   * (with `metadata.continue` and `remainingItemCount` while more remain).
   */
  private answerList(type: ResourceType, namespace: string | undefined, params: URLSearchParams, reply: (code: number, payload: unknown) => void): void {
    const selector = parseLabelSelector(params.get('labelSelector') ?? '');
    if (typeof selector === 'string') return reply(400, status.badRequest(selector));
    const name = nameSelected(params);
    if (name === null) return reply(400, status.badRequest('the API double implements only the field selector metadata.name=NAME'));
    const limitText = params.get('limit');
    const limit = limitText === null ? 0 : Number(limitText);
    if (!Number.isInteger(limit) || limit < 0) return reply(400, status.badRequest(`invalid limit: ${limitText}`));
    let start = '';
    const token = params.get('continue');
    if (token) {
      const decoded = decodeContinue(token);
      if (typeof decoded === 'string') return reply(400, status.badRequest(`invalid continue token: ${decoded}`));
      start = decoded.start;
    }
    const matching = [...this.bucket(type).entries()]
      .filter(([key, object]) => {
        if (namespace !== undefined && object.metadata.namespace !== namespace) return false;
        if (start && key < start) return false;
        if (name !== undefined && object.metadata.name !== name) return false;
        return selects(selector, object);
      })
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const page = limit > 0 ? matching.slice(0, limit) : matching;
    const remaining = matching.length - page.length;
    const metadata: Record<string, unknown> = { resourceVersion: String(this.resourceVersion) };
    if (remaining > 0) {
      // The next page starts just after the last key returned (etcd's `key + "\x00"`).
      metadata.continue = encodeContinue(this.resourceVersion, `${page[page.length - 1]![0]}\u0000`);
      metadata.remainingItemCount = remaining;
    }
    const items = page.map(([, object]) => {
      const { apiVersion: _apiVersion, kind: _kind, ...item } = object;
      return item;
    });
    return reply(200, { kind: `${type.kind}List`, apiVersion: apiVersionOf(type), metadata, items });
  }

  /**
   * A SelfSubjectAccessReview answered from the deny rules, as the authorizer would answer it for a
   * user allowed everything else: the request's spec back with `status.allowed` (and `denied`, as RBAC
   * sets neither reason nor denied on a plain "no rule allows it"). Nothing is stored.
   */
  private accessReview(body: unknown): unknown {
    const review = (body ?? {}) as { spec?: { resourceAttributes?: { verb?: string; resource?: string; namespace?: string } } };
    const attributes = review.spec?.resourceAttributes ?? {};
    const refused = this.denied.some(
      (rule) => rule.verb === attributes.verb && rule.resource === attributes.resource && (rule.namespace === undefined || rule.namespace === attributes.namespace),
    );
    return { kind: 'SelfSubjectAccessReview', apiVersion: 'authorization.k8s.io/v1', metadata: { creationTimestamp: null }, spec: review.spec ?? {}, status: { allowed: !refused } };
  }

  /** A watch request (see ./kube/watch-cache): its own parameters checked as list's are. */
  private watch(type: ResourceType, namespace: string | undefined, params: URLSearchParams, res: ServerResponse, record: (code: number) => void): void {
    const fail = (code: number, body: unknown) => {
      record(code);
      res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      this.notify();
    };
    const selector = parseLabelSelector(params.get('labelSelector') ?? '');
    if (typeof selector === 'string') return fail(400, status.badRequest(selector));
    const name = nameSelected(params);
    if (name === null) return fail(400, status.badRequest('the API double implements only the field selector metadata.name=NAME'));
    const rv = params.get('resourceVersion') ?? '';
    if (rv !== '' && !/^(0|[1-9][0-9]*)$/.test(rv)) return fail(400, status.badRequest(`invalid resource version: ${JSON.stringify(rv)}`));
    const timeoutText = params.get('timeoutSeconds');
    if (timeoutText !== null && !/^[0-9]+$/.test(timeoutText)) return fail(400, status.badRequest(`invalid timeoutSeconds: ${timeoutText}`));
    const allow = params.get('allowWatchBookmarks');
    record(200);
    this.watchCache.open(
      {
        resource: type.resource,
        kind: type.kind,
        apiVersion: apiVersionOf(type),
        ...(namespace !== undefined ? { namespace } : {}),
        selector,
        ...(name !== undefined ? { name } : {}),
        allowBookmarks: allow === 'true' || allow === '1',
        ...(timeoutText !== null ? { timeoutSeconds: Number(timeoutText) } : {}),
      },
      rv === '' || rv === '0' ? undefined : Number(rv),
      () => [...this.bucket(type).values()],
      res,
    );
  }

  private async waitAtGate(method: string, path: string): Promise<void> {
    const held = this.holds.findIndex((h) => h.matches(method, path));
    if (held >= 0) {
      const [hold] = this.holds.splice(held, 1);
      hold!.arrive();
      await hold!.released;
    }
    const gate = this.gates.find((g) => g.matches(method, path));
    if (!gate) return;
    await new Promise<void>((release) => {
      gate.waiting.push(release);
      if (gate.waiting.length >= gate.count) {
        this.gates.splice(this.gates.indexOf(gate), 1);
        gate.waiting.splice(0).forEach((waiter) => waiter());
      }
    });
  }
}

/** The name `fieldSelector=metadata.name=NAME` selects; undefined without a field selector, null for any other. */
function nameSelected(params: URLSearchParams): string | undefined | null {
  const field = params.get('fieldSelector');
  if (!field) return undefined;
  const match = /^metadata\.name==?([^,=]+)$/.exec(field);
  return match ? match[1]! : null;
}
