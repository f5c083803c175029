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
import type { Logger } from 'pino';
import { segment, type KubeApiClient } from '../kube-api/client';
import { ApiFailure, answerFailure } from '../kube-api/failure';
import { listWatch } from '../kube-api/list-watch';
import { describeSelector, selects, type LabelSelector, type Labels } from '../k8s/label-selector';
import type { NamespaceScope, ScopeVerdict } from './reporter';

/** The namespaceSelector of each webhook of a MutatingWebhookConfiguration (absent: `{}`, which selects every namespace). */
export function webhookNamespaceSelectors(configuration: unknown): LabelSelector[] {
  const webhooks = (configuration as { webhooks?: unknown } | null)?.webhooks;
  if (!Array.isArray(webhooks)) return [];
  return webhooks.map((webhook) => ((webhook as { namespaceSelector?: LabelSelector } | null)?.namespaceSelector ?? {}) as LabelSelector);
}

/**
 * The verdict for a namespace's labels: admitted when the namespaceSelector of any webhook of the
 * configuration selects them (the API server calls each webhook whose selectors match). `selectors`
 * undefined: the configuration does not exist; `labels` undefined: the namespace does not.
 */
export function judgeNamespace(configurationName: string, selectors: readonly LabelSelector[] | undefined, namespace: string, labels: Labels | undefined): ScopeVerdict {
  if (selectors === undefined) return { admitted: false, why: `the MutatingWebhookConfiguration ${configurationName} does not exist, so drainguard admits no pod` };
  if (labels === undefined) return { admitted: false, why: `namespace ${namespace} does not exist` };
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

/** What the watches keep: the configuration's selectors, a namespace's labels. */
interface KeptSelectors {
  resourceVersion: string;
  selectors: LabelSelector[];
}
interface KeptLabels {
  resourceVersion: string;
  labels: Labels;
}

type Loose = { metadata?: { name?: unknown; resourceVersion?: unknown; labels?: unknown } } | null | undefined;
const nameOf = (object: unknown) => (object as Loose)?.metadata?.name;
const versionOf = (object: unknown) => String((object as Loose)?.metadata?.resourceVersion ?? '');

/**
 * Watches the named MutatingWebhookConfiguration and every namespace's labels (../kube-api/list-watch.ts),
 * keeping of them only the selectors and the labels.
 */
export function watchAdmissionScope(client: KubeApiClient, options: AdmissionScopeOptions): AdmissionScopeWatch {
  const { webhookConfigName, logger, requestTimeoutMs } = options;
  const common = { logger, requestTimeoutMs, ...(options.restartDelayMs !== undefined ? { restartDelayMs: options.restartDelayMs } : {}) };
  const configurations = listWatch<unknown, KeptSelectors>(client, {
    ...common,
    what: `MutatingWebhookConfiguration ${webhookConfigName}`,
    path: '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
    selector: `fieldSelector=${encodeURIComponent(`metadata.name=${webhookConfigName}`)}`,
    view: (object) => (nameOf(object) === webhookConfigName ? object : undefined),
    keyOf: () => webhookConfigName,
    keep: (object) => ({ resourceVersion: versionOf(object), selectors: webhookNamespaceSelectors(object) }),
  });
  const namespaces = listWatch<unknown, KeptLabels>(client, {
    ...common,
    what: 'namespaces',
    path: '/api/v1/namespaces',
    view: (object) => (typeof nameOf(object) === 'string' ? object : undefined),
    keyOf: (object) => nameOf(object) as string,
    keep: (object) => ({ resourceVersion: versionOf(object), labels: labelsOf(object) }),
  });

  /** A namespace the watch has not delivered yet (created a moment ago): read once. */
  const readNamespace = async (name: string): Promise<Labels | undefined> => {
    const what = `get namespace ${name}`;
    const answer = await client.request('GET', `/api/v1/namespaces/${segment(name)}`);
    if (answer.status === 404) return undefined;
    if (answer.status !== 200) throw answerFailure(what, answer);
    return labelsOf(JSON.parse(answer.text));
  };

  return {
    get synced() {
      return configurations.synced && namespaces.synced;
    },
    get healthy() {
      return configurations.healthy && namespaces.healthy;
    },
    async admits(namespace) {
      if (!configurations.synced || !namespaces.synced) {
        throw new ApiFailure(`the MutatingWebhookConfiguration ${webhookConfigName} and the namespaces are not listed yet`, undefined);
      }
      const configuration = configurations.get(webhookConfigName);
      const labels = namespaces.get(namespace)?.labels ?? (await readNamespace(namespace));
      return judgeNamespace(webhookConfigName, configuration?.selectors, namespace, labels);
    },
    async stop() {
      await Promise.all([configurations.stop(), namespaces.stop()]);
    },
  };
}

/** A namespace's labels, only the string values (a label value is always one). */
function labelsOf(object: unknown): Labels {
  const labels = (object as Loose)?.metadata?.labels;
  if (typeof labels !== 'object' || labels === null) return {};
  return Object.fromEntries(Object.entries(labels).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}
