/**
 * Every Kubernetes API call `drainguard check` and `drainguard version` make: gets and lists, through
 * @kubernetes/client-node, and for `check --pre` SelfSubjectAccessReviews, which ask the authorizer a
 * question and store nothing. Each read answers a `Read`: the object, or why it could not be read, with
 * the verb, resource, namespace and name that were asked for, so a check can say exactly what RBAC
 * denied. Only a cluster that cannot be reached at all (or that rejects the credentials) ends the run,
 * as a `ClusterAccessError`.
 */
import type * as k8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { loadKubernetesClient, requestTimeoutOptions } from '../kube-api/load';
import type { Pod } from '../mutate';
import type { NodeInfoView } from './image-volumes';
import { DRAIN_EVENT_LABEL, DRAIN_SUMMARY_ANNOTATION, readSummary, type DrainSummary } from '../report/drain-event';

/** What was asked of the API server, in RBAC's terms. */
export interface ReadRequest {
  verb: 'get' | 'list' | 'create';
  /** Plural resource: `pods`, `deployments`, … */
  resource: string;
  /** API group, `` for the core group. */
  group: string;
  /** Absent for cluster-scoped objects and lists across all namespaces. */
  namespace?: string;
  name?: string;
  /** For a request that is not about a resource (`/version`, discovery): the path, which is what RBAC names. */
  path?: string;
}

export type ReadFailure = {
  ok: false;
  /** `not-found`: 404; `forbidden`: 403; `failed`: any other answer. */
  reason: 'not-found' | 'forbidden' | 'failed';
  request: ReadRequest;
  /** The API server's own message (its `Status.message`). */
  message: string;
};

export type Read<T> = { ok: true; value: T } | ReadFailure;

/** The cluster cannot be reached, or it rejects who we are: nothing can be checked. */
export class ClusterAccessError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClusterAccessError';
  }
}

const CLUSTER_SCOPED = new Set(['namespaces', 'nodes', 'mutatingwebhookconfigurations']);

/** `list pods in namespace "x"`, `get deployments.apps "drainguard" in namespace "y"`, `list pods in all namespaces`. */
export function describeRequest(request: ReadRequest): string {
  if (request.path !== undefined) return `get ${request.path}`;
  const resource = request.group ? `${request.resource}.${request.group}` : request.resource;
  const name = request.name !== undefined ? ` ${JSON.stringify(request.name)}` : '';
  const clusterScoped = CLUSTER_SCOPED.has(request.resource);
  const where =
    request.namespace !== undefined ? ` in namespace ${JSON.stringify(request.namespace)}` : request.verb === 'list' && !clusterScoped ? ' in all namespaces' : '';
  return `${request.verb} ${resource}${name}${where}`;
}

/**
 * One line for a failed read of `label` (`Deployment ns/name`): "not found", or the verb, resource,
 * namespace and name that were refused, with the API server's own words.
 */
export function describeFailure(failure: ReadFailure, label: string): string {
  switch (failure.reason) {
    case 'not-found':
      return `${label} not found`;
    case 'forbidden':
      return `${label}: not allowed to ${describeRequest(failure.request)} (${failure.message})`;
    case 'failed':
      return `${label}: ${describeRequest(failure.request)} failed (${failure.message})`;
  }
}

/** The API server's `/version`: `gitVersion` (`v1.30.2-eks-1a2b3c`), `major`, `minor` (`30+` on some providers). */
export interface ServerVersion {
  gitVersion: string;
  major: string;
  minor: string;
  platform?: string;
}

/** A resource an API group version serves, from discovery (`GET /apis/GROUP/VERSION`). */
export interface ServedResource {
  name: string;
  kind: string;
  namespaced: boolean;
}

/** What `kubectl auth can-i` asks: may the current user do `verb` on `resource` (in `namespace`)? */
export interface AccessQuestion {
  verb: string;
  resource: string;
  group: string;
  namespace?: string;
  name?: string;
}

/** A drain as the reporter's pod Event holds it. */
export interface DrainEventView {
  namespace: string;
  summary: DrainSummary;
  /** The Event's lastTimestamp (when the container ended), for a summary without finishedAt. */
  at: string | undefined;
}

/** A pod page: the pods in the JSON shape the webhook receives, for `mutate`. */
export type PodPage = Pod[];

export interface ClusterReader {
  readonly server: string;
  webhookConfiguration(name: string): Promise<Read<k8s.V1MutatingWebhookConfiguration>>;
  deployment(namespace: string, name: string): Promise<Read<k8s.V1Deployment>>;
  replicaSet(namespace: string, name: string): Promise<Read<k8s.V1ReplicaSet>>;
  service(namespace: string, name: string): Promise<Read<k8s.V1Service>>;
  /** The EndpointSlices of one Service (label `kubernetes.io/service-name`). */
  endpointSlices(namespace: string, serviceName: string): Promise<Read<k8s.V1EndpointSlice[]>>;
  secret(namespace: string, name: string): Promise<Read<k8s.V1Secret>>;
  configMap(namespace: string, name: string): Promise<Read<k8s.V1ConfigMap>>;
  namespace(name: string): Promise<Read<k8s.V1Namespace>>;
  /**
   * Every pod of one namespace, or of all (`undefined`), handed over a page at a time so that memory
   * stays bounded by the page size on large clusters. Answers how many pods there were.
   */
  eachPodPage(namespace: string | undefined, visit: (pods: PodPage) => void): Promise<Read<number>>;
  /** Every node's name and the versions its `status.nodeInfo` reports (a page at a time, kept small). */
  nodes(): Promise<Read<NodeInfoView[]>>;
  /** `GET /version`, which every client may read. */
  serverVersion(): Promise<Read<ServerVersion>>;
  /** Discovery of one group version (readable by every authenticated user); not-found when it is not served. */
  servedResources(group: string, version: string): Promise<Read<ServedResource[]>>;
  /** A SelfSubjectAccessReview: `allowed` as the authorizer answers, nothing stored. */
  mayI(question: AccessQuestion): Promise<Read<{ allowed: boolean; reason?: string }>>;
  /** The reporter's pod Events (label drainguard.io/drain-event=pod) of one namespace or all, with a readable summary. */
  drainEvents(namespace: string | undefined): Promise<Read<DrainEventView[]>>;
}

/** kubectl's page size for lists. */
const POD_PAGE_SIZE = 500;

export async function kubernetesClusterReader(kubeConfig: k8s.KubeConfig, requestTimeoutMs: number): Promise<ClusterReader> {
  const client = await loadKubernetesClient();
  const core = kubeConfig.makeApiClient(client.CoreV1Api);
  const apps = kubeConfig.makeApiClient(client.AppsV1Api);
  const discovery = kubeConfig.makeApiClient(client.DiscoveryV1Api);
  const admission = kubeConfig.makeApiClient(client.AdmissionregistrationV1Api);
  const versionApi = kubeConfig.makeApiClient(client.VersionApi);
  const customObjects = kubeConfig.makeApiClient(client.CustomObjectsApi);
  const authorization = kubeConfig.makeApiClient(client.AuthorizationV1Api);
  const server = kubeConfig.getCurrentCluster()?.server ?? 'the API server';

  // Each request is aborted after the timeout: the run ends with a message instead of a hang.
  const options = await requestTimeoutOptions(requestTimeoutMs);

  async function read<T>(request: ReadRequest, call: () => Promise<T>): Promise<Read<T>> {
    try {
      return { ok: true, value: await call() };
    } catch (error) {
      return classify(error, error instanceof client.ApiException, request, server, requestTimeoutMs);
    }
  }

  return {
    server,
    webhookConfiguration: (name) =>
      read({ verb: 'get', resource: 'mutatingwebhookconfigurations', group: 'admissionregistration.k8s.io', name }, () =>
        admission.readMutatingWebhookConfiguration({ name }, options),
      ),
    deployment: (namespace, name) =>
      read({ verb: 'get', resource: 'deployments', group: 'apps', namespace, name }, () => apps.readNamespacedDeployment({ namespace, name }, options)),
    replicaSet: (namespace, name) =>
      read({ verb: 'get', resource: 'replicasets', group: 'apps', namespace, name }, () => apps.readNamespacedReplicaSet({ namespace, name }, options)),
    service: (namespace, name) =>
      read({ verb: 'get', resource: 'services', group: '', namespace, name }, () => core.readNamespacedService({ namespace, name }, options)),
    endpointSlices: (namespace, serviceName) =>
      read({ verb: 'list', resource: 'endpointslices', group: 'discovery.k8s.io', namespace }, async () => {
        const list = await discovery.listNamespacedEndpointSlice({ namespace, labelSelector: `kubernetes.io/service-name=${serviceName}` }, options);
        return list.items;
      }),
    secret: (namespace, name) => read({ verb: 'get', resource: 'secrets', group: '', namespace, name }, () => core.readNamespacedSecret({ namespace, name }, options)),
    configMap: (namespace, name) =>
      read({ verb: 'get', resource: 'configmaps', group: '', namespace, name }, () => core.readNamespacedConfigMap({ namespace, name }, options)),
    namespace: (name) => read({ verb: 'get', resource: 'namespaces', group: '', name }, () => core.readNamespace({ name }, options)),
    eachPodPage: (namespace, visit) =>
      read({ verb: 'list', resource: 'pods', group: '', ...(namespace !== undefined ? { namespace } : {}) }, async () => {
        let total = 0;
        let next: string | undefined;
        do {
          const page = { limit: POD_PAGE_SIZE, ...(next ? { _continue: next } : {}) };
          const list =
            namespace === undefined
              ? await core.listPodForAllNamespaces(page, options)
              : await core.listNamespacedPod({ namespace, ...page }, options);
          total += list.items.length;
          // The client's typed objects carry Dates and class instances; the webhook sees plain JSON.
          visit(list.items.map((pod) => JSON.parse(JSON.stringify(pod)) as Pod));
          next = list.metadata?._continue || undefined;
        } while (next);
        return total;
      }),
    nodes: () =>
      read({ verb: 'list', resource: 'nodes', group: '' }, async () => {
        const nodes: NodeInfoView[] = [];
        let next: string | undefined;
        do {
          const list = await core.listNode({ limit: POD_PAGE_SIZE, ...(next ? { _continue: next } : {}) }, options);
          for (const node of list.items) {
            const info = node.status?.nodeInfo;
            nodes.push({ name: node.metadata?.name ?? '', kubeletVersion: info?.kubeletVersion ?? '', containerRuntimeVersion: info?.containerRuntimeVersion ?? '' });
          }
          next = list.metadata?._continue || undefined;
        } while (next);
        return nodes;
      }),
    serverVersion: () =>
      read({ verb: 'get', resource: '', group: '', path: '/version' }, async () => {
        const info = await versionApi.getCode(options);
        return { gitVersion: info.gitVersion, major: info.major, minor: info.minor, ...(info.platform ? { platform: info.platform } : {}) };
      }),
    servedResources: (group, version) =>
      read({ verb: 'get', resource: '', group, path: `/apis/${group}/${version}` }, async () => {
        const list = await customObjects.getAPIResources({ group, version }, options);
        // Subresources (`certificates/status`) are not resources of their own.
        return list.resources.filter((resource) => !resource.name.includes('/')).map(({ name, kind, namespaced }) => ({ name, kind, namespaced }));
      }),
    mayI: (question) =>
      read({ verb: 'create', resource: 'selfsubjectaccessreviews', group: 'authorization.k8s.io' }, async () => {
        const { verb, resource, group, namespace, name } = question;
        const review = await authorization.createSelfSubjectAccessReview(
          {
            body: {
              apiVersion: 'authorization.k8s.io/v1',
              kind: 'SelfSubjectAccessReview',
              spec: { resourceAttributes: { verb, resource, group, ...(namespace !== undefined ? { namespace } : {}), ...(name !== undefined ? { name } : {}) } },
            },
          },
          options,
        );
        return { allowed: review.status?.allowed === true, ...(review.status?.reason ? { reason: review.status.reason } : {}) };
      }),
    drainEvents: (namespace) =>
      read({ verb: 'list', resource: 'events', group: '', ...(namespace !== undefined ? { namespace } : {}) }, async () => {
        const views: DrainEventView[] = [];
        let next: string | undefined;
        do {
          const page = { labelSelector: `${DRAIN_EVENT_LABEL}=pod`, limit: POD_PAGE_SIZE, ...(next ? { _continue: next } : {}) };
          const list =
            namespace === undefined ? await core.listEventForAllNamespaces(page, options) : await core.listNamespacedEvent({ namespace, ...page }, options);
          for (const event of list.items) {
            // Anything else carrying the label (another writer's Event) has no summary this reads.
            const summary = readSummary(event.metadata?.annotations?.[DRAIN_SUMMARY_ANNOTATION]);
            const at = event.lastTimestamp instanceof Date ? event.lastTimestamp.toISOString() : undefined;
            if (summary && event.metadata?.namespace) views.push({ namespace: event.metadata.namespace, summary, at });
          }
          next = list.metadata?._continue || undefined;
        } while (next);
        return views;
      }),
  };
}

/** A read that failed: an answer from the API server becomes a `ReadFailure`; anything else ends the run. */
function classify(error: unknown, isApiAnswer: boolean, request: ReadRequest, server: string, timeoutMs: number): ReadFailure {
  // The abort signal's DOMException also carries a numeric `code`, so the timeout is recognised first.
  const name = (error as { name?: unknown } | null)?.name;
  if (name === 'TimeoutError') {
    throw new ClusterAccessError(`the API server at ${server} did not answer ${describeRequest(request)} within ${timeoutMs / 1000}s (--request-timeout)`);
  }
  if (isApiAnswer) {
    const code = (error as { code: number }).code;
    const given = statusMessage((error as { body?: unknown }).body);
    if (code === 401) {
      // client-node drops the body of a 401; there is nothing more to say than the status.
      throw new ClusterAccessError(`the API server at ${server} rejected the credentials (401 Unauthorized) on ${describeRequest(request)}${given ? `: ${given}` : ''}`);
    }
    const message = given ?? `HTTP ${code}`;
    const reason = code === 403 ? 'forbidden' : code === 404 ? 'not-found' : 'failed';
    return { ok: false, reason, request, message: reason === 'failed' ? `HTTP ${code}: ${message}` : message };
  }
  // fetch reports network and TLS failures as "fetch failed" with the reason in `cause`.
  const cause = (error as { cause?: { message?: unknown; code?: unknown } } | null)?.cause;
  const message = typeof cause?.message === 'string' && cause.message !== '' ? cause.message : String((error as { message?: unknown } | null)?.message ?? error);
  const detail = typeof cause?.code === 'string' && !message.includes(cause.code) ? `${message} (${cause.code})` : message;
  throw new ClusterAccessError(`cannot reach the API server at ${server}: ${detail}`);
}

/** `Status.message` of an error body (client-node hands it over as the response text). */
function statusMessage(body: unknown): string | undefined {
  let parsed: unknown = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      return body.trim() || undefined;
    }
  }
  const message = (parsed as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message !== '' ? message : undefined;
}
