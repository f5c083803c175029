/**
 * The installation checks: the webhook configuration exists and its caBundle can be trusted (and in
 * self mode is the CA drainguard keeps in its Secret), the Service has ready endpoints, the Deployment
 * has its replicas, and the webhook's own configuration (which decides what an Envoy pod is) can be
 * read. Besides the lines, it hands the pod and coverage checks what they need: the selectors, the
 * configuration and the version pods should carry.
 */
import { X509Certificate } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { ConfigError, defaultConfig, parseConfig, type Config } from '../config';
import { splitPemBundle } from '../certs/inspect';
import { SECRET_KEYS } from '../certs/kube';
import { describeFailure, type ClusterReader, type Read } from './cluster';
import type { InstallationNames } from './names';
import type { CheckResult } from './report';
import { describeSelector, type LabelSelector } from '../k8s/label-selector';

/**
 * A caBundle whose newest CA expires sooner than this fails. Self mode renews 30 days ahead of expiry,
 * so a bundle this close to its end means renewal is not happening.
 */
export const CA_BUNDLE_MIN_VALIDITY_DAYS = 30;
const DAY_MS = 24 * 60 * 60 * 1000;

/** The chart's opt-in label, used to judge namespaces when the webhook configuration cannot be read. */
export const CHART_DEFAULT_NAMESPACE_SELECTOR: LabelSelector = { matchLabels: { 'drainguard.io/inject': 'enabled' } };

/** The chart's `tls.mode`, as far as the cluster shows it. */
export type TlsMode = 'self' | 'certManager' | 'secret' | 'unknown';

export interface WebhookView {
  name: string;
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
}

export interface InstallationFacts {
  /** The webhooks of the configuration; undefined when it could not be read. */
  webhooks: WebhookView[] | undefined;
  /** The configuration `mutate` is given: the webhook's own, or the built-in defaults when unreadable. */
  config: Config;
  installedVersion: string;
  versionSource: 'deployment' | 'check';
  /** No installation check failed: pods created now would be rewritten. */
  healthy: boolean;
}

const INSTALLATION = 'installation' as const;
const pass = (id: CheckResult['id'], message: string): CheckResult => ({ category: INSTALLATION, id, verdict: 'pass', message });
const info = (id: CheckResult['id'], message: string): CheckResult => ({ category: INSTALLATION, id, verdict: 'info', message });
const fail = (id: CheckResult['id'], message: string, hint?: string): CheckResult => ({
  category: INSTALLATION,
  id,
  verdict: 'fail',
  message,
  ...(hint ? { hint } : {}),
});

export async function checkInstallation(
  reader: ClusterReader,
  names: InstallationNames,
  now: Date,
  checkVersion: string,
): Promise<{ checks: CheckResult[]; facts: InstallationFacts }> {
  const [webhookRead, deploymentRead, configMapRead] = await Promise.all([
    reader.webhookConfiguration(names.webhookConfiguration),
    reader.deployment(names.namespace, names.deployment),
    reader.configMap(names.namespace, names.configMap),
  ]);
  const configuration = webhookRead.ok ? webhookRead.value : undefined;
  const webhooks = configuration?.webhooks ?? [];
  const server = deploymentRead.ok ? serverFlags(deploymentRead.value) : undefined;
  const tlsMode = tlsModeOf(server, configuration);
  const deploymentLabel = `Deployment ${names.namespace}/${names.deployment}`;
  const restartHint = `kubectl -n ${names.namespace} rollout restart deployment/${names.deployment}`;

  const checks: CheckResult[] = [];
  if (!webhookRead.ok) {
    checks.push(
      fail(
        'webhook-configuration',
        describeFailure(webhookRead, `MutatingWebhookConfiguration ${names.webhookConfiguration}`),
        webhookRead.reason === 'not-found'
          ? `drainguard is not installed as release ${JSON.stringify(names.release)} in ${names.namespace}: install it, or pass --release/--drainguard-namespace (and --fullname if the release set fullnameOverride)`
          : undefined,
      ),
    );
  } else if (webhooks.length === 0) {
    checks.push(fail('webhook-configuration', `MutatingWebhookConfiguration ${names.webhookConfiguration} has no webhooks`, 'reinstall or upgrade the chart'));
  } else {
    checks.push(pass('webhook-configuration', `MutatingWebhookConfiguration ${names.webhookConfiguration} exists (${webhooks.map((w) => w.name).join(', ')})`));
    for (const webhook of webhooks) checks.push(info('webhook-policy', describePolicy(webhook)));
    for (const webhook of webhooks) checks.push(caBundleCheck(webhook, now, tlsMode, restartHint));
    checks.push(await secretCheck(reader, webhooks, server, tlsMode, names, configuration, restartHint));
  }

  checks.push(await endpointsCheck(reader, webhooks, names));
  checks.push(deploymentCheck(deploymentRead, deploymentLabel, names));
  const { check: configCheck, config } = configurationCheck(configMapRead, names);
  checks.push(configCheck);

  const labelledVersion = deploymentRead.ok ? deploymentRead.value.metadata?.labels?.['app.kubernetes.io/version'] : undefined;
  return {
    checks,
    facts: {
      webhooks: webhookRead.ok
        ? webhooks.map((webhook) => ({
            name: webhook.name,
            ...(webhook.namespaceSelector ? { namespaceSelector: webhook.namespaceSelector as LabelSelector } : {}),
            ...(webhook.objectSelector ? { objectSelector: webhook.objectSelector as LabelSelector } : {}),
          }))
        : undefined,
      config,
      installedVersion: labelledVersion ?? checkVersion,
      versionSource: labelledVersion ? 'deployment' : 'check',
      healthy: checks.every((check) => check.verdict !== 'fail'),
    },
  };
}

function describePolicy(webhook: k8s.V1MutatingWebhook): string {
  const policy = webhook.failurePolicy ?? 'Fail';
  const consequence =
    policy === 'Ignore' ? 'a pod created while drainguard is unreachable is admitted unchanged' : 'pods are rejected while drainguard is unreachable';
  return (
    `webhook ${webhook.name}: failurePolicy ${policy} (${consequence}), timeoutSeconds ${webhook.timeoutSeconds ?? 10}, ` +
    `namespaceSelector ${describeSelector(webhook.namespaceSelector as LabelSelector | undefined)}`
  );
}

/** The flags `drainguard serve` runs with, from the Deployment's container arguments. */
interface ServerFlags {
  tlsMode?: string;
  secretName?: string;
  namespace: string;
}

function serverFlags(deployment: k8s.V1Deployment): ServerFlags | undefined {
  const container = deployment.spec?.template?.spec?.containers?.find((c) => (c.args ?? c.command ?? []).includes('serve'));
  if (!container) return undefined;
  const args = [...(container.command ?? []), ...(container.args ?? [])];
  const flag = (name: string): string | undefined => {
    for (let i = 0; i < args.length; i++) {
      if (args[i] === name) return args[i + 1];
      if (args[i]?.startsWith(`${name}=`)) return args[i]!.slice(name.length + 1);
    }
    return undefined;
  };
  const namespace = flag('--namespace') ?? deployment.metadata?.namespace ?? '';
  const tlsMode = flag('--tls-mode');
  const secretName = flag('--secret-name');
  return { namespace, ...(tlsMode ? { tlsMode } : {}), ...(secretName ? { secretName } : {}) };
}

function tlsModeOf(server: ServerFlags | undefined, configuration: k8s.V1MutatingWebhookConfiguration | undefined): TlsMode {
  if (!server) return 'unknown';
  if (server.tlsMode === 'self') return 'self';
  return configuration?.metadata?.annotations?.['cert-manager.io/inject-ca-from'] ? 'certManager' : 'secret';
}

const CA_BUNDLE_HINTS: Record<TlsMode, (restart: string) => string> = {
  self: (restart) => `drainguard renews its CA and rewrites caBundle when it starts: ${restart}`,
  certManager: () => "cert-manager's CA injector writes caBundle: check the serving Certificate and cert-manager's logs",
  secret: () => 'set tls.secret.caBundle to the CA that signed your Secret and upgrade the release',
  unknown: () => 'the TLS mode is unknown because the Deployment could not be read (see its line)',
};

function caBundleCheck(webhook: k8s.V1MutatingWebhook, now: Date, tlsMode: TlsMode, restartHint: string): CheckResult {
  const subject = `caBundle of webhook ${webhook.name}`;
  const hint = CA_BUNDLE_HINTS[tlsMode](restartHint);
  const encoded = webhook.clientConfig?.caBundle;
  if (!encoded) return fail('ca-bundle', `${subject} is empty: the API server cannot verify drainguard's certificate`, hint);
  const parsed = parseBundle(encoded);
  if (typeof parsed === 'string') return fail('ca-bundle', `${subject} does not parse: ${parsed}`, hint);
  const newest = parsed.reduce((a, b) => (new Date(a.validTo) >= new Date(b.validTo) ? a : b));
  const expiry = new Date(newest.validTo);
  const daysLeft = Math.floor((expiry.getTime() - now.getTime()) / DAY_MS);
  const count = `${parsed.length} CA certificate${parsed.length === 1 ? '' : 's'}`;
  if (expiry <= now) return fail('ca-bundle', `${subject} has expired: ${count}, the newest expired at ${expiry.toISOString()}`, hint);
  if (daysLeft < CA_BUNDLE_MIN_VALIDITY_DAYS) {
    return fail('ca-bundle', `${subject} expires soon: ${count}, the newest expires at ${expiry.toISOString()} (${daysLeft} days left, fewer than ${CA_BUNDLE_MIN_VALIDITY_DAYS})`, hint);
  }
  return pass('ca-bundle', `${subject}: ${count}, the newest valid until ${expiry.toISOString()} (${daysLeft} days)`);
}

/** Every certificate of a base64 PEM bundle, or what is wrong with it. */
function parseBundle(encoded: string): X509Certificate[] | string {
  const pems = splitPemBundle(Buffer.from(encoded, 'base64').toString('utf8'));
  if (pems.length === 0) return 'no PEM certificate in it';
  const certificates: X509Certificate[] = [];
  for (const [index, pem] of pems.entries()) {
    try {
      certificates.push(new X509Certificate(pem));
    } catch (error) {
      return `certificate ${index + 1} of ${pems.length}: ${(error as Error).message}`;
    }
  }
  return certificates;
}

async function secretCheck(
  reader: ClusterReader,
  webhooks: readonly k8s.V1MutatingWebhook[],
  server: ServerFlags | undefined,
  tlsMode: TlsMode,
  names: InstallationNames,
  configuration: k8s.V1MutatingWebhookConfiguration | undefined,
  restartHint: string,
): Promise<CheckResult> {
  const id = 'ca-bundle-secret';
  if (tlsMode === 'unknown' || !server) return info(id, "TLS mode unknown (the Deployment could not be read): caBundle not compared with drainguard's Secret");
  if (tlsMode === 'certManager') {
    const source = configuration?.metadata?.annotations?.['cert-manager.io/inject-ca-from'];
    return info(id, `TLS mode certManager: cert-manager's CA injector keeps caBundle equal to the CA of ${source}`);
  }
  if (tlsMode === 'secret') return info(id, 'TLS mode secret: caBundle is the chart value tls.secret.caBundle, not compared with a Secret');

  const secretName = server.secretName ?? names.tlsSecret;
  const label = `Secret ${server.namespace}/${secretName}`;
  const read = await reader.secret(server.namespace, secretName);
  if (!read.ok) {
    return fail(id, `self mode: ${describeFailure(read, label)}`, read.reason === 'not-found' ? `drainguard creates it when it starts: ${restartHint}` : undefined);
  }
  const caPem = Buffer.from(read.value.data?.[SECRET_KEYS.ca] ?? '', 'base64').toString('utf8');
  let fingerprint: string;
  try {
    fingerprint = new X509Certificate(caPem).fingerprint256;
  } catch (error) {
    return fail(id, `self mode: ${label} has no readable ${SECRET_KEYS.ca}: ${(error as Error).message}`, `drainguard replaces an unusable Secret when it starts: ${restartHint}`);
  }
  const untrusting = webhooks.filter((webhook) => {
    const parsed = parseBundle(webhook.clientConfig?.caBundle ?? '');
    return typeof parsed === 'string' || !parsed.some((certificate) => certificate.fingerprint256 === fingerprint);
  });
  if (untrusting.length > 0) {
    return fail(
      id,
      `self mode: caBundle of webhook ${untrusting.map((w) => w.name).join(', ')} does not contain the CA in ${label}: the API server rejects drainguard's certificate`,
      `drainguard writes its CA into caBundle when it starts (it needs get/patch on the webhook configuration): ${restartHint}`,
    );
  }
  return pass(id, `self mode: caBundle contains the CA in ${label}`);
}

interface ServiceRef {
  namespace: string;
  name: string;
}

async function endpointsCheck(reader: ClusterReader, webhooks: readonly k8s.V1MutatingWebhook[], names: InstallationNames): Promise<CheckResult> {
  const id = 'service-endpoints';
  // The Service the API server actually calls; the chart's name when the configuration is unreadable.
  const configured = webhooks.find((webhook) => webhook.clientConfig?.service)?.clientConfig.service;
  const ref: ServiceRef = configured ? { namespace: configured.namespace, name: configured.name } : { namespace: names.namespace, name: names.service };
  if (webhooks.length > 0 && !configured) {
    return info(id, `the webhooks call a URL (${webhooks[0]?.clientConfig?.url ?? 'none'}), not a Service: endpoints not checked`);
  }
  const label = `Service ${ref.namespace}/${ref.name}`;
  const [service, slices] = await Promise.all([reader.service(ref.namespace, ref.name), reader.endpointSlices(ref.namespace, ref.name)]);
  if (!service.ok) return fail(id, describeFailure(service, label), service.reason === 'not-found' ? 'reinstall or upgrade the chart' : undefined);
  if (!slices.ok) return fail(id, describeFailure(slices, `EndpointSlices of ${label}`));
  // One endpoint per pod; a pod may appear in more than one slice (one per address family).
  const all = new Map<string, boolean>();
  for (const slice of slices.value) {
    for (const endpoint of slice.endpoints ?? []) {
      const key = endpoint.targetRef?.uid ?? endpoint.addresses.join(',');
      // `ready` unset means unknown, which consumers treat as ready.
      const ready = endpoint.conditions?.ready !== false;
      all.set(key, (all.get(key) ?? false) || ready);
    }
  }
  const ready = [...all.values()].filter(Boolean).length;
  if (ready === 0) {
    return fail(
      id,
      `${label} has no ready endpoints (EndpointSlices: ${all.size} endpoint${all.size === 1 ? '' : 's'}, none ready): the API server cannot reach the webhook`,
      `kubectl -n ${names.namespace} get pods -l app.kubernetes.io/instance=${names.release}; a replica is ready only once it has its certificate`,
    );
  }
  return pass(id, `${label} has ${ready} ready endpoint${ready === 1 ? '' : 's'} (EndpointSlices)`);
}

function deploymentCheck(read: Read<k8s.V1Deployment>, label: string, names: InstallationNames): CheckResult {
  const id = 'deployment';
  if (!read.ok) return fail(id, describeFailure(read, label), read.reason === 'not-found' ? 'reinstall or upgrade the chart' : undefined);
  const desired = read.value.spec?.replicas ?? 1;
  const available = read.value.status?.availableReplicas ?? 0;
  const version = read.value.metadata?.labels?.['app.kubernetes.io/version'];
  const summary = `${label}: ${available} of ${desired} replicas available${version ? ` (drainguard ${version})` : ''}`;
  const hint = `kubectl -n ${names.namespace} describe deployment ${names.deployment}; kubectl -n ${names.namespace} logs deployment/${names.deployment}`;
  if (desired === 0) return fail(id, `${summary}: scaled to zero, nothing answers the webhook`, `set replicaCount (2 by default) and upgrade the release`);
  return available >= desired ? pass(id, summary) : fail(id, summary, hint);
}

function configurationCheck(read: Read<k8s.V1ConfigMap>, names: InstallationNames): { check: CheckResult; config: Config } {
  const id = 'configuration';
  const label = `ConfigMap ${names.namespace}/${names.configMap}`;
  const fallback = "Envoy pods are recognised with drainguard's built-in defaults instead";
  if (!read.ok) return { check: fail(id, `${describeFailure(read, label)}; ${fallback}`), config: defaultConfig() };
  const text = read.value.data?.['config.yaml'];
  if (text === undefined) return { check: fail(id, `${label} has no config.yaml; ${fallback}`, 'reinstall or upgrade the chart'), config: defaultConfig() };
  try {
    const config = parseConfig(text, label);
    return { check: pass(id, `Envoy pods are recognised with the webhook's own configuration (${label})`), config };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return { check: fail(id, `${error.message.replaceAll('\n', '; ')}; ${fallback}`, 'the webhook cannot start with it either: fix the config: values and upgrade'), config: defaultConfig() };
  }
}
