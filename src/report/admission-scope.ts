/**
 * Only what drainguard protected is reported. The protected label, the preStop hook and the
 * termination message are all written by whoever creates the pod, so they prove nothing: a pod in a
 * namespace drainguard's webhook never sees can carry all three. What the pod's creator cannot forge is
 * its namespace, and the webhook only ever admits pods of namespaces its MutatingWebhookConfiguration's
 * `namespaceSelector` selects. So a termination is reported only when its pod's namespace is selected
 * by that selector now, as the cluster says: the configuration (by the name the chart passes,
 * `--webhook-config-name`) and the namespaces' labels are watched, so a namespace opted in or out later,
 * or a selector changed by `helm upgrade`, counts from then on. The rest is counted as ignored.
 *
 *   list, watch mutatingwebhookconfigurations   the one named, by fieldSelector metadata.name
 *   list, watch namespaces                      their labels (the selector's input)
 *   get namespaces                              one the watch has not delivered yet (a new namespace)
 */
import type * as k8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import type { Logger } from 'pino';
import { loadKubernetesClient, requestTimeoutOptions } from '../certs/kube';
import { describeSelector, selects, type LabelSelector, type Labels } from '../k8s/label-selector';
import { ApiFailure, type NamespaceScope, type ScopeVerdict } from './reporter';

/** The namespaceSelector of each webhook of a MutatingWebhookConfiguration (absent: `{}`, which selects every namespace). */
export function webhookNamespaceSelectors(configuration: unknown): LabelSelector[] {
  const webhooks = (configuration as { webhooks?: unknown } | null)?.webhooks;
  if (!Array.isArray(webhooks)) return [];
  return webhooks.map((webhook) => ((webhook as { namespaceSelector?: LabelSelector } | null)?.namespaceSelector ?? {}) as LabelSelector);
}

/**
 * The verdict for a namespace's labels: admitted when any webhook of the configuration selects them
 * (the API server calls each webhook whose selectors match). `configuration` undefined: it does not exist.
 */
export function judgeNamespace(configurationName: string, configuration: unknown, namespace: string, labels: Labels | undefined): ScopeVerdict {
  if (configuration === undefined) return { admitted: false, why: `the MutatingWebhookConfiguration ${configurationName} does not exist, so drainguard admits no pod` };
  if (labels === undefined) return { admitted: false, why: `namespace ${namespace} does not exist` };
  const selectors = webhookNamespaceSelectors(configuration);
  if (selectors.some((selector) => selects(selector, labels))) return { admitted: true };
  const described = selectors.length > 0 ? selectors.map(describeSelector).join(' or ') : 'no webhook';
  return { admitted: false, why: `namespace ${namespace} is not selected by the namespaceSelector of MutatingWebhookConfiguration ${configurationName} (${described}), so drainguard's webhook never saw its pods` };
}

export interface AdmissionScopeWatch extends NamespaceScope {
  /** Both the configuration and the namespaces have been listed once. */
  readonly synced: boolean;
  /** Listing and watching both work now. */
  readonly healthy: boolean;
  stop(): Promise<void>;
}

export interface AdmissionScopeOptions {
  webhookConfigName: string;
  logger: Logger;
  requestTimeoutMs: number;
  /** First delay before restarting a failed list or watch; doubled per failure up to 5 s. */
  restartDelayMs?: number;
}

const MAX_RESTART_DELAY_MS = 5000;

/** Watches the named MutatingWebhookConfiguration and every namespace's labels with client-node's ListWatch. */
export async function watchAdmissionScope(kubeConfig: k8s.KubeConfig, options: AdmissionScopeOptions): Promise<AdmissionScopeWatch> {
  const client = await loadKubernetesClient();
  const core = kubeConfig.makeApiClient(client.CoreV1Api);
  const admission = kubeConfig.makeApiClient(client.AdmissionregistrationV1Api);
  const requestOptions = await requestTimeoutOptions(options.requestTimeoutMs, kubeConfig);
  const { webhookConfigName, logger } = options;
  const byName = `metadata.name=${webhookConfigName}`;
  let stopped = false;

  /** A ListWatch restarted with backoff after any error but 410 (which client-node answers with a relist itself). */
  const informer = <T extends k8s.KubernetesObject>(what: string, path: string, list: () => Promise<k8s.KubernetesListObject<T>>, fieldSelector?: string) => {
    const state = { synced: false, healthy: false, failures: 0, timer: undefined as NodeJS.Timeout | undefined };
    const listed = async () => {
      const answer = await list();
      state.synced = true;
      state.healthy = true;
      state.failures = 0;
      return answer;
    };
    const watch = new client.ListWatch<T>(path, new client.Watch(kubeConfig), listed, false, undefined, fieldSelector);
    watch.on('error', (error: unknown) => {
      state.healthy = false;
      if (stopped) return;
      state.failures++;
      const delay = Math.min((options.restartDelayMs ?? 1000) * 2 ** (state.failures - 1), MAX_RESTART_DELAY_MS);
      logger.warn({ error: String((error as { message?: unknown } | null)?.message ?? error), retryInMs: delay }, `listing or watching ${what} failed; will retry`);
      clearTimeout(state.timer);
      state.timer = setTimeout(() => {
        if (!stopped) void watch.start();
      }, delay);
    });
    void watch.start();
    return { watch, state };
  };

  const configurations = informer<k8s.V1MutatingWebhookConfiguration>(
    `MutatingWebhookConfiguration ${webhookConfigName}`,
    '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
    () => admission.listMutatingWebhookConfiguration({ fieldSelector: byName }, requestOptions),
    byName,
  );
  const namespaces = informer<k8s.V1Namespace>('namespaces', '/api/v1/namespaces', () => core.listNamespace({}, requestOptions));

  /** A namespace the watch has not delivered yet (created a moment ago): read once. */
  const readNamespace = async (name: string): Promise<Labels | undefined> => {
    try {
      return (await core.readNamespace({ name }, requestOptions)).metadata?.labels ?? {};
    } catch (error) {
      const status = (error as { code?: unknown } | null)?.code;
      if (status === 404) return undefined;
      throw new ApiFailure(`get namespace ${name}: ${String((error as { message?: unknown } | null)?.message ?? error)}`, typeof status === 'number' ? status : undefined);
    }
  };

  return {
    get synced() {
      return configurations.state.synced && namespaces.state.synced;
    },
    get healthy() {
      return configurations.state.healthy && namespaces.state.healthy;
    },
    async admits(namespace) {
      if (!configurations.state.synced || !namespaces.state.synced) {
        throw new ApiFailure(`the MutatingWebhookConfiguration ${webhookConfigName} and the namespaces are not listed yet`, undefined);
      }
      const configuration = configurations.watch.get(webhookConfigName);
      const known = namespaces.watch.get(namespace);
      const labels = known ? (known.metadata?.labels ?? {}) : await readNamespace(namespace);
      return judgeNamespace(webhookConfigName, configuration, namespace, labels);
    },
    async stop() {
      stopped = true;
      for (const { watch, state } of [configurations, namespaces]) {
        clearTimeout(state.timer);
        await watch.stop();
      }
    },
  };
}
