/**
 * `--tls-mode self` against the Kubernetes API double, through the real client library.
 * Two replicas starting at once end with one Secret and one CA, and the webhook's caBundle verifies both;
 * renewal adds a new CA while keeping the old one in the bundle until it expires.
 */
import { X509Certificate } from 'node:crypto';
import { defaultConfig } from '../../../src/config';
import { SelfManagedCertificates, SECRET_KEYS } from '../../../src/certs/self-managed';
import { splitPemBundle } from '../../../src/certs/inspect';
import { kubernetesCaBundlePublisher, kubernetesSecretStore } from '../../../src/certs/kube';
import { startWebhook, type RunningWebhook } from '../../../src/server/start';
import { KubeApiDouble } from '../../support/kube-api-double';
import { httpsRequest, silentLogger } from '../server/webhook-test-kit';

const NAMESPACE = 'drainguard-system';
const SERVICE = 'drainguard';
const SECRET = 'drainguard-tls';
const WEBHOOK_CONFIG = 'drainguard';
const SERVICE_DNS = `${SERVICE}.${NAMESPACE}.svc`;
const SECRETS_PATH = /\/namespaces\/drainguard-system\/secrets/;
const WEBHOOK_PATH = /mutatingwebhookconfigurations\/drainguard$/;
const DAY_MS = 24 * 60 * 60 * 1000;

function webhookConfiguration() {
  const webhook = (name: string) => ({
    name,
    admissionReviewVersions: ['v1'],
    sideEffects: 'None',
    clientConfig: { service: { name: SERVICE, namespace: NAMESPACE, path: '/mutate', port: 443 } },
    rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
    namespaceSelector: { matchLabels: { 'drainguard.io/inject': 'enabled' } },
    failurePolicy: 'Ignore',
    timeoutSeconds: 5,
    reinvocationPolicy: 'IfNeeded',
  });
  return { metadata: { name: WEBHOOK_CONFIG, labels: { app: 'drainguard' } }, webhooks: [webhook('pods.drainguard.io'), webhook('pods-dry.drainguard.io')] };
}

/** What kube-apiserver trusts: the decoded caBundle of each webhook. */
function caBundles(double: KubeApiDouble): string[] {
  const stored = double.webhookConfiguration<{ webhooks: { clientConfig: { caBundle?: string } }[] }>(WEBHOOK_CONFIG);
  return stored.webhooks.map((w) => Buffer.from(w.clientConfig.caBundle ?? '', 'base64').toString('utf8'));
}

/** The configuration with the fields drainguard may change blanked out: must equal the original. */
function withoutCaBundles(double: KubeApiDouble) {
  const stored = double.webhookConfiguration<any>(WEBHOOK_CONFIG);
  for (const webhook of stored.webhooks) delete webhook.clientConfig.caBundle;
  const { resourceVersion: _rv, uid: _uid, creationTimestamp: _ct, ...metadata } = stored.metadata;
  return { ...stored, metadata };
}

const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;

let double: KubeApiDouble;
beforeEach(async () => {
  double = await KubeApiDouble.start();
  double.putWebhookConfiguration(webhookConfiguration());
});
afterEach(async () => {
  await double.close();
});

describe('two replicas starting at once', () => {
  const running: RunningWebhook[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.close()));
  });

  it('converge on one Secret and one CA, and the caBundle verifies both for the Service name', async () => {
    const original = withoutCaBundles(double);
    // Both creates reach the API at the same time: exactly one can win.
    double.gate('POST', SECRETS_PATH, 2);
    const kubeConfig = await double.kubeConfig();
    const start = () =>
      startWebhook({
        host: '127.0.0.1',
        port: 0,
        config: defaultConfig(),
        logger: silentLogger(),
        shutdownDelayMs: 0,
        tls: { mode: 'self', namespace: NAMESPACE, secretName: SECRET, webhookConfigName: WEBHOOK_CONFIG, serviceName: SERVICE, kube: { kubeConfig } },
      });
    running.push(...(await Promise.all([start(), start()])));
    await Promise.all(running.map((r) => r.certificateLoaded));

    const creates = double.requests.filter((r) => r.method === 'POST').map((r) => r.status);
    expect(creates.sort()).toEqual([201, 409]);
    const data = double.secretData(NAMESPACE, SECRET)!;
    expect(splitPemBundle(data[SECRET_KEYS.bundle]!)).toHaveLength(1);

    const bundles = caBundles(double);
    expect(new Set(bundles).size).toBe(1);
    expect(splitPemBundle(bundles[0]!).map(fingerprint)).toEqual([fingerprint(data[SECRET_KEYS.ca]!)]);
    for (const replica of running) {
      const result = await httpsRequest({ port: replica.server.address().port, method: 'GET', path: '/readyz', ca: bundles[0]!, servername: SERVICE_DNS });
      expect(result.status).toBe(200);
      expect(fingerprint(result.peerCertificate)).toBe(fingerprint(data[SECRET_KEYS.cert]!));
    }
    // Only caBundle was touched, by JSON patches guarded with test operations.
    expect(withoutCaBundles(double)).toEqual(original);
    const patches = double.requests.filter((r) => r.method === 'PATCH');
    expect(patches.length).toBeGreaterThanOrEqual(1);
    for (const patch of patches) {
      expect(patch.contentType).toBe('application/json-patch+json');
      for (const op of patch.body as { op: string; path: string }[]) {
        expect(op.op === 'test' || /^\/webhooks\/\d+\/clientConfig\/caBundle$/.test(op.path)).toBe(true);
      }
    }
  });
});

describe('renewal', () => {
  let now = new Date('2026-01-01T00:00:00Z');
  const replica = async () =>
    new SelfManagedCertificates({
      namespace: NAMESPACE,
      serviceName: SERVICE,
      store: await kubernetesSecretStore({ kubeConfig: await double.kubeConfig() }, { namespace: NAMESPACE, name: SECRET }),
      publisher: await kubernetesCaBundlePublisher({ kubeConfig: await double.kubeConfig() }, WEBHOOK_CONFIG),
      validityDays: 365,
      renewBeforeDays: 30,
      now: () => now,
    });

  it('renews ahead of expiry with one new CA, keeps the old CA until it expires, then drops it', async () => {
    const [a, b] = [await replica(), await replica()];
    const created = await a.reconcile();
    expect(created.action).toBe('created');
    const oldCa = double.secretData(NAMESPACE, SECRET)![SECRET_KEYS.ca]!;

    now = new Date(now.getTime() + 200 * DAY_MS);
    expect((await b.reconcile()).action).toBe('adopted');

    // Inside the renewal window, both replicas renew at once: one write wins, the other adopts it.
    now = new Date(now.getTime() + 140 * DAY_MS);
    double.gate('PUT', SECRETS_PATH, 2);
    const [first, second] = await Promise.all([a.reconcile(), b.reconcile()]);
    expect([first.action, second.action].sort()).toEqual(['adopted', 'renewed']);
    expect(first.serving.cert).toBe(second.serving.cert);
    expect(double.requests.filter((r) => r.method === 'PUT').map((r) => r.status).sort()).toEqual([200, 409]);

    const data = double.secretData(NAMESPACE, SECRET)!;
    const newCa = data[SECRET_KEYS.ca]!;
    expect(fingerprint(newCa)).not.toBe(fingerprint(oldCa));
    expect(new X509Certificate(data[SECRET_KEYS.cert]!).checkIssued(new X509Certificate(newCa))).toBe(true);
    const bundle = splitPemBundle(caBundles(double)[0]!).map(fingerprint);
    expect(bundle).toEqual([fingerprint(newCa), fingerprint(oldCa)]);
    expect(caBundles(double)[1]).toBe(caBundles(double)[0]);

    // Once the old CA has expired it leaves the Secret and the webhook configuration.
    now = new Date(new Date(new X509Certificate(oldCa).validTo).getTime() + DAY_MS);
    expect((await a.reconcile()).action).toBe('pruned');
    expect(splitPemBundle(caBundles(double)[0]!).map(fingerprint)).toEqual([fingerprint(newCa)]);
    expect((await b.reconcile()).action).toBe('adopted');
  });

  it('retries the caBundle patch when the configuration changes between read and write', async () => {
    const certificates = await replica();
    const held = double.hold('PATCH', WEBHOOK_PATH);
    const reconciled = certificates.reconcile();
    await held.arrived;
    // Someone else (helm upgrade) edits the configuration meanwhile: resourceVersion moves on.
    double.putWebhookConfiguration({ ...webhookConfiguration(), metadata: { name: WEBHOOK_CONFIG, labels: { app: 'drainguard', upgraded: 'yes' } } });
    held.release();
    await reconciled;
    const statuses = double.requests.filter((r) => r.method === 'PATCH').map((r) => r.status);
    expect(statuses).toEqual([422, 200]);
    expect((double.webhookConfiguration<any>(WEBHOOK_CONFIG)).metadata.labels.upgraded).toBe('yes');
    expect(caBundles(double).every((bundle) => splitPemBundle(bundle).length === 1)).toBe(true);
  });

  it('replaces a Secret that names another Service', async () => {
    const certificates = await replica();
    await certificates.reconcile();
    const renamed = new SelfManagedCertificates({
      namespace: NAMESPACE,
      serviceName: 'drainguard-renamed',
      store: await kubernetesSecretStore({ kubeConfig: await double.kubeConfig() }, { namespace: NAMESPACE, name: SECRET }),
      publisher: await kubernetesCaBundlePublisher({ kubeConfig: await double.kubeConfig() }, WEBHOOK_CONFIG),
      now: () => now,
    });
    expect((await renamed.reconcile()).action).toBe('renewed');
    expect(new X509Certificate(double.secretData(NAMESPACE, SECRET)![SECRET_KEYS.cert]!).checkHost('drainguard-renamed.drainguard-system.svc')).toBeDefined();
  });
});
