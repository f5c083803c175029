/**
 * The only Kubernetes API calls the webhook makes (self mode): one Secret (read/create/replace with
 * optimistic concurrency) and the `caBundle` fields of one MutatingWebhookConfiguration. RBAC can
 * therefore be limited to those two objects by `resourceNames`. Over the lean client of src/kube-api
 * (credentials applied by client-node's KubeConfig), which a long-running server needs: the typed
 * client would cost the webhook about 55 MiB of memory for these four requests (src/kube-api/load.ts).
 */
import { segment, type KubeApiClient } from '../kube-api/client';
import { answerFailure, succeeded } from '../kube-api/failure';
import { kubeApiClientFor, type KubeConnectionOptions } from '../kube-api/load';

export type { KubeConnectionOptions } from '../kube-api/load';

/** Each request gives up after this long without an answer (the reconcile then retries). */
const REQUEST_TIMEOUT_MS = 10_000;

/**
 * The Secret's keys. `tls.crt`/`tls.key` make it a valid `kubernetes.io/tls` Secret. Here rather than
 * beside the certificates' making (./self-managed): `check` reads them too, and must not load node-forge.
 */
export const SECRET_KEYS = { cert: 'tls.crt', key: 'tls.key', ca: 'ca.crt', caKey: 'ca.key', bundle: 'ca-bundle.crt' } as const;

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

function encode(data: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
}

function decode(data: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

/** The client both of the below can share: one kubeconfig read, one pool of connections. */
export function certificateApiClient(options: KubeConnectionOptions): Promise<KubeApiClient> {
  return kubeApiClientFor(options, REQUEST_TIMEOUT_MS);
}

export async function kubernetesSecretStore(options: KubeConnectionOptions, target: { namespace: string; name: string }): Promise<SecretStore> {
  const client = await certificateApiClient(options);
  const { namespace, name } = target;
  const collection = `/api/v1/namespaces/${segment(namespace)}/secrets`;
  const path = `${collection}/${segment(name)}`;
  const body = (data: Record<string, string>, resourceVersion?: string) => ({
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
      const answer = await client.request('GET', path);
      if (answer.status === 404) return null;
      if (!succeeded(answer.status)) throw answerFailure(`get secret ${namespace}/${name}`, answer);
      const secret = JSON.parse(answer.text) as { metadata?: { resourceVersion?: string }; data?: Record<string, string> };
      return { resourceVersion: secret.metadata?.resourceVersion ?? '', data: decode(secret.data) };
    },
    async create(data) {
      const answer = await client.request('POST', collection, body(data));
      if (answer.status === 409) return 'conflict';
      if (!succeeded(answer.status)) throw answerFailure(`create secret ${namespace}/${name}`, answer);
      return 'created';
    },
    async replace(data, resourceVersion) {
      const answer = await client.request('PUT', path, body(data, resourceVersion));
      // 409: another replica wrote first; 404: it was deleted. Either way: re-read and decide again.
      if (answer.status === 409 || answer.status === 404) return 'conflict';
      if (!succeeded(answer.status)) throw answerFailure(`replace secret ${namespace}/${name}`, answer);
      return 'replaced';
    },
  };
}

const MAX_PATCH_ATTEMPTS = 5;

/**
 * Sets `clientConfig.caBundle` of every webhook in the named configuration, and nothing else. The JSON
 * Patch carries `test` operations on the resourceVersion and each webhook's name, so a concurrent edit
 * makes the API server reject it (409/422) instead of patching the wrong array element; then re-read.
 */
export async function kubernetesCaBundlePublisher(options: KubeConnectionOptions, webhookConfigurationName: string): Promise<CaBundlePublisher> {
  const client = await certificateApiClient(options);
  const name = webhookConfigurationName;
  const path = `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${segment(name)}`;
  return {
    async publish(bundlePem) {
      const caBundle = Buffer.from(bundlePem).toString('base64');
      for (let attempt = 1; ; attempt++) {
        const read = await client.request('GET', path);
        if (!succeeded(read.status)) throw answerFailure(`get mutatingwebhookconfiguration ${name}`, read);
        const current = JSON.parse(read.text) as { metadata?: { resourceVersion?: string }; webhooks?: { name: string; clientConfig?: { caBundle?: string } }[] };
        const webhooks = current.webhooks ?? [];
        const stale = webhooks.flatMap((webhook, index) => (webhook.clientConfig?.caBundle === caBundle ? [] : [index]));
        if (stale.length === 0) return 0;
        const patch = [
          { op: 'test', path: '/metadata/resourceVersion', value: current.metadata?.resourceVersion },
          ...stale.flatMap((index) => [
            { op: 'test', path: `/webhooks/${index}/name`, value: webhooks[index]!.name },
            { op: 'add', path: `/webhooks/${index}/clientConfig/caBundle`, value: caBundle },
          ]),
        ];
        const answer = await client.request('PATCH', path, patch, 'application/json-patch+json');
        if (succeeded(answer.status)) return stale.length;
        if ((answer.status === 409 || answer.status === 422) && attempt < MAX_PATCH_ATTEMPTS) continue;
        throw answerFailure(`patch mutatingwebhookconfiguration ${name}`, answer);
      }
    },
  };
}
