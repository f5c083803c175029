/**
 * The only Kubernetes API calls drainguard makes, through @kubernetes/client-node: one Secret
 * (read/create/replace with optimistic concurrency) and the `caBundle` fields of one
 * MutatingWebhookConfiguration. RBAC can therefore be limited to those two objects by `resourceNames`.
 *
 * @kubernetes/client-node is ESM-only and this package is CommonJS, so it is loaded with `import()`.
 */
import type * as k8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };

export interface KubeConnectionOptions {
  /** A kubeconfig file; in-cluster service-account configuration when absent. */
  kubeconfigPath?: string;
  /** A ready KubeConfig (tests build one that records or holds back requests). Wins over `kubeconfigPath`. */
  kubeConfig?: k8s.KubeConfig;
}

export interface StoredSecret {
  resourceVersion: string;
  /** Decoded `data` (UTF-8 PEM text). */
  data: Record<string, string>;
}

/** A Secret the replicas agree on: every write is conditional, a lost race reports `conflict`. */
export interface SecretStore {
  read(): Promise<StoredSecret | null>;
  create(data: Record<string, string>): Promise<'created' | 'conflict'>;
  replace(data: Record<string, string>, resourceVersion: string): Promise<'replaced' | 'conflict'>;
}

/** Publishes the CA bundle kube-apiserver uses to verify the webhook. */
export interface CaBundlePublisher {
  /** Returns how many webhooks were changed (0 when already current). */
  publish(bundlePem: string): Promise<number>;
}

type ClientModule = typeof import('@kubernetes/client-node', { with: { 'resolution-mode': 'import' } });

let clientModule: Promise<ClientModule> | undefined;
export function loadKubernetesClient(): Promise<ClientModule> {
  clientModule ??= import('@kubernetes/client-node');
  return clientModule;
}

/**
 * Request options for client-node's object API that abort each call after `timeoutMs`, so an API
 * server that accepts connections but never answers ends a call with a TimeoutError instead of a hang.
 *
 * With `reuseConnectionsOf`, every call also goes through one connection pool made from that
 * KubeConfig: client-node builds a new undici Agent for each request (KubeConfig.createDispatcher), so
 * each call would otherwise open, and leave behind, its own TLS connection. The credentials are still
 * applied to each request as client-node applies them (a rotated token is read again); only the pool
 * of connections, with its TLS settings, is shared.
 */
export async function requestTimeoutOptions(timeoutMs: number, reuseConnectionsOf?: k8s.KubeConfig) {
  const client = await loadKubernetesClient();
  let dispatcher: unknown;
  if (reuseConnectionsOf) {
    const probe = new client.RequestContext(reuseConnectionsOf.getCurrentCluster()?.server ?? 'https://kubernetes.default.svc', client.HttpMethod.GET);
    await reuseConnectionsOf.applySecurityAuthentication(probe);
    dispatcher = probe.getDispatcher();
  }
  return {
    middleware: [
      {
        pre: (context: k8s.RequestContext) => {
          context.setSignal(AbortSignal.timeout(timeoutMs));
          if (dispatcher !== undefined) context.setDispatcher(dispatcher as Parameters<k8s.RequestContext['setDispatcher']>[0]);
          return new client.Observable(Promise.resolve(context));
        },
        post: (context: k8s.ResponseContext) => new client.Observable(Promise.resolve(context)),
      },
    ],
    middlewareMergeStrategy: 'append' as const,
  };
}

export async function kubeConfigFor(options: KubeConnectionOptions): Promise<k8s.KubeConfig> {
  if (options.kubeConfig) return options.kubeConfig;
  const { KubeConfig } = await loadKubernetesClient();
  const config = new KubeConfig();
  if (options.kubeconfigPath) config.loadFromFile(options.kubeconfigPath);
  else config.loadFromCluster();
  return config;
}

function statusCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

function encode(data: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
}

function decode(data: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

export async function kubernetesSecretStore(
  options: KubeConnectionOptions,
  target: { namespace: string; name: string },
): Promise<SecretStore> {
  const { CoreV1Api } = await loadKubernetesClient();
  const api = (await kubeConfigFor(options)).makeApiClient(CoreV1Api);
  const { namespace, name } = target;
  const body = (data: Record<string, string>, resourceVersion?: string): k8s.V1Secret => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace,
      labels: { 'app.kubernetes.io/managed-by': 'drainguard' },
      ...(resourceVersion ? { resourceVersion } : {}),
    },
    type: 'kubernetes.io/tls',
    data: encode(data),
  });
  return {
    async read() {
      try {
        const secret = await api.readNamespacedSecret({ name, namespace });
        return { resourceVersion: secret.metadata?.resourceVersion ?? '', data: decode(secret.data) };
      } catch (error) {
        if (statusCode(error) === 404) return null;
        throw error;
      }
    },
    async create(data) {
      try {
        await api.createNamespacedSecret({ namespace, body: body(data) });
        return 'created';
      } catch (error) {
        if (statusCode(error) === 409) return 'conflict';
        throw error;
      }
    },
    async replace(data, resourceVersion) {
      try {
        await api.replaceNamespacedSecret({ name, namespace, body: body(data, resourceVersion) });
        return 'replaced';
      } catch (error) {
        // 409: another replica wrote first; 404: it was deleted. Either way: re-read and decide again.
        if (statusCode(error) === 409 || statusCode(error) === 404) return 'conflict';
        throw error;
      }
    },
  };
}

const MAX_PATCH_ATTEMPTS = 5;

/**
 * Sets `clientConfig.caBundle` of every webhook in the named configuration, and nothing else. The JSON
 * Patch carries `test` operations on the resourceVersion and each webhook's name, so a concurrent edit
 * makes the API server reject it (409/422) instead of patching the wrong array element; then re-read.
 */
export async function kubernetesCaBundlePublisher(
  options: KubeConnectionOptions,
  webhookConfigurationName: string,
): Promise<CaBundlePublisher> {
  const { AdmissionregistrationV1Api, PatchStrategy, setHeaderOptions } = await loadKubernetesClient();
  const api = (await kubeConfigFor(options)).makeApiClient(AdmissionregistrationV1Api);
  const name = webhookConfigurationName;
  return {
    async publish(bundlePem) {
      const caBundle = Buffer.from(bundlePem).toString('base64');
      for (let attempt = 1; ; attempt++) {
        const current = await api.readMutatingWebhookConfiguration({ name });
        const webhooks = current.webhooks ?? [];
        const stale = webhooks.flatMap((webhook, index) => (webhook.clientConfig.caBundle === caBundle ? [] : [index]));
        if (stale.length === 0) return 0;
        const body = [
          { op: 'test', path: '/metadata/resourceVersion', value: current.metadata?.resourceVersion },
          ...stale.flatMap((index) => [
            { op: 'test', path: `/webhooks/${index}/name`, value: webhooks[index]!.name },
            { op: 'add', path: `/webhooks/${index}/clientConfig/caBundle`, value: caBundle },
          ]),
        ];
        try {
          await api.patchMutatingWebhookConfiguration(
            { name, body },
            setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
          );
          return stale.length;
        } catch (error) {
          const code = statusCode(error);
          if ((code === 409 || code === 422) && attempt < MAX_PATCH_ATTEMPTS) continue;
          throw error;
        }
      }
    },
  };
}
