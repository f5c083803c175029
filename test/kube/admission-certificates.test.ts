/**
 * `--tls-mode self` against the real kube-apiserver: drainguard's own CA, kept in one Secret, published
 * in its webhook configuration's caBundle, and rotated while the API server keeps calling the webhook.
 *
 * - The chart's release (two replicas of the real `drainguard serve`, certificates living 60 s and
 *   renewed 45 s ahead through tls.self.duration and tls.self.renewBefore): pods keep being admitted
 *   while the replicas renew their CA on their own (failurePolicy Ignore: none is admitted as sent),
 *   then while an operator deletes the Secret to force a new CA (failurePolicy Fail: none is refused).
 *   The API server verifies each replica with the published bundle for the Service's DNS name; which CA
 *   each replica serves is read from a TLS handshake with its pod.
 * - drainguard's certificate code in this process, through its Kubernetes client, against the real API server:
 *   two replicas starting at once end with one Secret and one CA (the API server lets one create
 *   through); concurrent renewals end with one new CA (it refuses the stale update); the old CA stays
 *   published until it expires; a configuration edited between drainguard's read and its patch is read
 *   again; only caBundle is ever patched. The requests are seen on their way out of the client
 *   (RecordingClient); what the server answers decides.
 * - `drainguard serve --tls-mode self --kubeconfig` as a process, reaching the API server with a
 *   kubeconfig file instead of its ServiceAccount.
 */
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { createInterface } from 'node:readline';
import pino from 'pino';
import { defaultConfig } from '../../src/config';
import { splitPemBundle } from '../../src/certs/inspect';
import { kubernetesCaBundlePublisher, kubernetesSecretStore, type SecretStore } from '../../src/certs/kube';
import { KubeApiClient, type KubeAnswer } from '../../src/kube-api/client';
import { kubeConfigFor } from '../../src/kube-api/load';
import { SECRET_KEYS, SelfManagedCertificates } from '../../src/certs/self-managed';
import { startWebhook, type RunningWebhook } from '../../src/server/start';
import { CLI_MAIN } from '../support/build';
import { NODE, REPO_ROOT } from '../support/repo';
import type { KubeObject } from '../support/cluster/api';
import { adminApi, clusterInfo, createNamespace, deleteNamespace, eventually, installDrainguard, uninstallDrainguard, uniqueSuffix, type DrainguardRelease } from '../support/cluster/lane';
import { httpsRequest } from '../integration/server/webhook-test-kit';
import { createPod, envoyPod, isRewritten, upgradeDrainguard, webhookPods } from './admission-kit';

const CONFIGURATIONS = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';
/** Bounds a rotation that never comes: some minutes of admissions one after another. */
const MAX_ADMISSIONS = 5000;
const DAY_MS = 24 * 60 * 60 * 1000;

const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;

interface SecretObject extends KubeObject {
  data: Record<string, string>;
}

function decoded(secret: SecretObject, key: string): string {
  return Buffer.from(secret.data[key] ?? '', 'base64').toString('utf8');
}

/** The subject of the CA that signed the certificate a webhook pod serves, from a TLS handshake. */
function servedIssuer(podIP: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: podIP, port: 8443, rejectUnauthorized: false }, () => {
      const issuer = socket.getPeerX509Certificate()?.issuer ?? '';
      socket.destroy();
      resolve(issuer);
    });
    socket.once('error', reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no TLS handshake with ${podIP}:8443 in 10 s`)));
  });
}

/** The subjects of the CAs of a PEM bundle. */
function subjects(bundle: string): string[] {
  return splitPemBundle(bundle).map((pem) => new X509Certificate(pem).subject);
}

describe('the chart: certificates renewed while pods keep coming', () => {
  let release: DrainguardRelease;
  let namespace: string;

  beforeAll(async () => {
    // Renewed 15 s after issue, checked every 11.25 s: the replicas move to a new CA about every 25 s.
    release = await installDrainguard('adm-rotate', { replicaCount: '2', 'tls.self.duration': '60s', 'tls.self.renewBefore': '45s' });
    namespace = await createNamespace('adm-rotate', release.optIn);
  }, 300_000);
  afterAll(async () => {
    if (namespace) await deleteNamespace(namespace);
    if (release) await uninstallDrainguard(release);
  }, 300_000);

  async function secret(): Promise<SecretObject | undefined> {
    const list = await adminApi().list<SecretObject>(`/api/v1/namespaces/${release.namespace}/secrets?labelSelector=app.kubernetes.io%2Fmanaged-by%3Ddrainguard`);
    return list.items[0];
  }

  /** The CA each ready replica serves. */
  async function served(): Promise<string[]> {
    const pods = await webhookPods(release);
    return Promise.all(pods.map((pod) => servedIssuer(pod.status.podIP!)));
  }

  /**
   * Envoy pods admitted one after another (dry runs, and every tenth stored) until `done` holds (asked
   * after every tenth), then `after` more. Each one's outcome, in order.
   */
  async function admitUntil(phase: string, done: () => Promise<boolean>, after: number): Promise<string[]> {
    const outcomes: string[] = [];
    let remaining: number | undefined;
    for (let index = 0; remaining === undefined || remaining > 0; index++) {
      if (index === MAX_ADMISSIONS) throw new Error(`${phase}: no rotation after ${MAX_ADMISSIONS} admissions`);
      const name = `${phase}-${index}`;
      const stored = index % 10 === 0;
      const { stored: pod, refused } = await createPod(namespace, envoyPod(name), stored ? '' : '?dryRun=All');
      outcomes.push(pod ? (isRewritten(pod) ? 'rewritten' : `admitted as sent: ${name}`) : `refused: ${refused!.message}`);
      if (remaining !== undefined) remaining--;
      else if (index % 10 === 9 && (await done())) remaining = after;
    }
    return outcomes;
  }

  test('renewal: the replicas move to a new CA on their own, and no pod is admitted without drainguard meanwhile (failurePolicy Ignore)', async () => {
    const first = await eventually('both replicas serving the same CA', async () => {
      const issuers = await served();
      return issuers.length === 2 && issuers[0] === issuers[1] ? issuers[0] : undefined;
    });
    const outcomes = await admitUntil('renewal', async () => {
      const issuers = await served();
      return issuers.length === 2 && issuers.every((issuer) => issuer !== first);
    }, 20);
    expect(outcomes.filter((outcome) => outcome !== 'rewritten')).toEqual([]);
    expect(outcomes.length).toBeGreaterThan(20);
  }, 300_000);

  test('the Secret deleted: a new CA, the old one still trusted until the replicas move, and no pod refused meanwhile (failurePolicy Fail)', async () => {
    upgradeDrainguard(release, { 'webhook.failurePolicy': 'Fail' });
    const before = (await secret())!;
    const servedBefore = await served();
    await adminApi().delete(`/api/v1/namespaces/${release.namespace}/secrets/${before.metadata.name}`);
    let recreated: SecretObject | undefined;
    const outcomes = await admitUntil('deleted', async () => {
      const now = await secret();
      if (now && now.metadata.uid !== before.metadata.uid) recreated ??= now;
      if (!recreated) return false;
      const issuers = await served();
      return issuers.length === 2 && issuers.every((issuer) => !subjects(decoded(before, SECRET_KEYS.bundle)).includes(issuer));
    }, 20);
    expect(outcomes.filter((outcome) => outcome !== 'rewritten')).toEqual([]);
    // The bundle issued afresh (the new CA first) keeps the CAs the replicas were serving when the Secret went.
    const bundle = subjects(decoded(recreated!, SECRET_KEYS.bundle));
    expect(bundle[0]).toBe(new X509Certificate(decoded(recreated!, SECRET_KEYS.ca)).subject);
    for (const issuer of servedBefore) expect(bundle).toContain(issuer);
  }, 300_000);
});

// ---- drainguard's certificate code against the real API server ----------------------------------

interface RecordedRequest {
  method: string;
  url: string;
  contentType: string | undefined;
  body: unknown;
}

/**
 * A client as the cluster's admin that records every request drainguard's certificate code sends
 * through it, and can hold back requests matching `hold` until released, with the real server answering.
 */
async function recordingClient(): Promise<{ client: KubeApiClient; requests: RecordedRequest[]; hold(method: string, path: RegExp): { arrived: Promise<void>; release(): void } }> {
  const requests: RecordedRequest[] = [];
  const holds: { method: string; path: RegExp; arrive: () => void; released: Promise<void> }[] = [];
  class RecordingClient extends KubeApiClient {
    override async request(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<KubeAnswer> {
      requests.push({ method, url: path, contentType: body === undefined ? undefined : contentType, body: typeof body === 'string' ? JSON.parse(body) : body });
      const held = holds.find((h) => h.method === method && h.path.test(path.split('?')[0]!));
      if (held) {
        holds.splice(holds.indexOf(held), 1);
        held.arrive();
        await held.released;
      }
      return super.request(method, path, body, contentType);
    }
  }
  const client = new RecordingClient(await kubeConfigFor({ kubeconfigPath: clusterInfo().adminKubeconfig }), 10_000);
  return {
    client,
    requests,
    hold(method, path) {
      let arrive!: () => void;
      let release!: () => void;
      const arrived = new Promise<void>((resolve) => (arrive = resolve));
      const released = new Promise<void>((resolve) => (release = resolve));
      holds.push({ method, path, arrive, released });
      return { arrived, release };
    },
  };
}

/**
 * A SecretStore whose first `count` calls of `operation` wait for one another, so that they reach the
 * API server together; later calls go straight through. `outcomes` records what the gated calls got.
 */
function together(store: SecretStore, operation: 'create' | 'replace', count: number): { store: SecretStore; outcomes: string[] } {
  let waiting: (() => void)[] = [];
  let gated = 0;
  const outcomes: string[] = [];
  const through = async <T extends string>(call: () => Promise<T>): Promise<T> => {
    if (gated >= count) return call();
    gated++;
    await new Promise<void>((resolve) => {
      waiting.push(resolve);
      if (waiting.length === count) {
        for (const go of waiting) go();
        waiting = [];
      }
    });
    const outcome = await call();
    outcomes.push(outcome);
    return outcome;
  };
  return {
    store: {
      read: () => store.read(),
      create: (data) => (operation === 'create' ? through(() => store.create(data)) : store.create(data)),
      replace: (data, resourceVersion) => (operation === 'replace' ? through(() => store.replace(data, resourceVersion)) : store.replace(data, resourceVersion)),
    },
    outcomes,
  };
}

describe("drainguard's certificate code in this process, against the real API server", () => {
  const SERVICE = 'drainguard';
  let namespace: string;
  let configName: string;
  let secretName: string;
  let serviceDns: string;

  /** A webhook configuration of two webhooks that select no namespace (no pod ever reaches them). */
  function configuration() {
    const webhook = (name: string) => ({
      name,
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      clientConfig: { service: { name: SERVICE, namespace, path: '/mutate', port: 443 } },
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
      namespaceSelector: { matchLabels: { [`test.drainguard.io/nothing-${configName}`]: 'never' } },
      failurePolicy: 'Ignore',
      timeoutSeconds: 5,
      reinvocationPolicy: 'IfNeeded',
    });
    return { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', metadata: { name: configName, labels: { app: 'drainguard' } }, webhooks: [webhook('pods.drainguard.io'), webhook('pods-dry.drainguard.io')] };
  }

  async function caBundles(): Promise<string[]> {
    const stored = await adminApi().get<{ webhooks: { clientConfig: { caBundle?: string } }[] }>(`${CONFIGURATIONS}/${configName}`);
    return stored.webhooks.map((w) => Buffer.from(w.clientConfig.caBundle ?? '', 'base64').toString('utf8'));
  }

  async function secretData(): Promise<Record<string, string>> {
    const secret = await adminApi().get<SecretObject>(`/api/v1/namespaces/${namespace}/secrets/${secretName}`);
    return Object.fromEntries(Object.keys(secret.data).map((key) => [key, decoded(secret, key)]));
  }

  beforeEach(async () => {
    namespace = await createNamespace('adm-self');
    configName = `adm-self-${uniqueSuffix()}`;
    secretName = `drainguard-tls-${uniqueSuffix()}`;
    serviceDns = `${SERVICE}.${namespace}.svc`;
    await adminApi().create(CONFIGURATIONS, configuration());
  });
  afterEach(async () => {
    await adminApi().delete(`${CONFIGURATIONS}/${configName}`);
    await deleteNamespace(namespace);
  });

  test('two replicas starting at once converge on one Secret and one CA, both serve it for the Service\'s name, and only caBundle is patched, under test operations', async () => {
    const original = await adminApi().get<KubeObject & { webhooks: { clientConfig: Record<string, unknown> }[] }>(`${CONFIGURATIONS}/${configName}`);
    const { client, requests } = await recordingClient();
    const start = () =>
      startWebhook({
        host: '127.0.0.1',
        port: 0,
        config: defaultConfig(),
        logger: pino({ level: 'silent' }),
        shutdownDelayMs: 0,
        tls: { mode: 'self', namespace, secretName, webhookConfigName: configName, serviceName: SERVICE, kube: { client } },
      });
    const replicas = await Promise.all([start(), start()]);
    try {
      await Promise.all(replicas.map((replica) => replica.certificateLoaded));
      const data = await secretData();
      expect(splitPemBundle(data[SECRET_KEYS.bundle]!)).toHaveLength(1);
      const bundles = await caBundles();
      expect(new Set(bundles).size).toBe(1);
      expect(splitPemBundle(bundles[0]!).map(fingerprint)).toEqual([fingerprint(data[SECRET_KEYS.ca]!)]);
      for (const replica of replicas) {
        const result = await httpsRequest({ port: replica.server.address().port, method: 'GET', path: '/readyz', ca: bundles[0]!, servername: serviceDns });
        expect(result.status).toBe(200);
        expect(fingerprint(result.peerCertificate)).toBe(fingerprint(data[SECRET_KEYS.cert]!));
      }
    } finally {
      await Promise.all(replicas.map((replica) => replica.close()));
    }
    const now = await adminApi().get<KubeObject & { webhooks: { clientConfig: Record<string, unknown> }[] }>(`${CONFIGURATIONS}/${configName}`);
    expect(now.webhooks.map(({ clientConfig: { caBundle: _ca, ...rest }, ...webhook }) => ({ ...webhook, clientConfig: rest }))).toEqual(original.webhooks);
    expect(now.metadata.labels).toEqual(original.metadata.labels);
    const patches = requests.filter((r) => r.method === 'PATCH');
    expect(patches.length).toBeGreaterThanOrEqual(1);
    for (const patch of patches) {
      expect(patch.contentType).toBe('application/json-patch+json');
      for (const op of patch.body as { op: string; path: string }[]) expect(op.op === 'test' || /^\/webhooks\/\d+\/clientConfig\/caBundle$/.test(op.path)).toBe(true);
    }
  });

  test('two creates at the same moment: the API server lets exactly one through, and both replicas end on its CA', async () => {
    const { client } = await recordingClient();
    const publisher = await kubernetesCaBundlePublisher({ client }, configName);
    const gated = together(await kubernetesSecretStore({ client }, { namespace, name: secretName }), 'create', 2);
    const replica = () => new SelfManagedCertificates({ namespace, serviceName: SERVICE, store: gated.store, publisher });
    const [a, b] = await Promise.all([replica().reconcile(), replica().reconcile()]);
    expect(gated.outcomes.sort()).toEqual(['conflict', 'created']);
    expect([a.action, b.action].sort()).toEqual(['adopted', 'created']);
    expect(a.serving.cert).toBe(b.serving.cert);
    const bundle = (await caBundles())[0]!;
    expect(splitPemBundle(bundle).map(fingerprint)).toEqual([fingerprint(a.ca)]);
    expect(await serveWith(a.serving, bundle)).toBe(200);
  });

  test('renewal: concurrent renewals end with one new CA (the API server refuses the stale update); the old CA stays published until it expires', async () => {
    const { client } = await recordingClient();
    let now = new Date();
    const publisher = await kubernetesCaBundlePublisher({ client }, configName);
    const plain = await kubernetesSecretStore({ client }, { namespace, name: secretName });
    const gated = together(plain, 'replace', 2);
    const replica = (store: SecretStore) => new SelfManagedCertificates({ namespace, serviceName: SERVICE, store, publisher, validityMs: 365 * DAY_MS, renewBeforeMs: 30 * DAY_MS, now: () => now });
    const [a, b] = [replica(gated.store), replica(gated.store)];
    expect((await a.reconcile()).action).toBe('created');
    const oldCa = (await secretData())[SECRET_KEYS.ca]!;
    now = new Date(now.getTime() + 200 * DAY_MS);
    expect((await b.reconcile()).action).toBe('adopted');

    now = new Date(now.getTime() + 140 * DAY_MS);
    const [first, second] = await Promise.all([a.reconcile(), b.reconcile()]);
    expect(gated.outcomes.sort()).toEqual(['conflict', 'replaced']);
    expect([first.action, second.action].sort()).toEqual(['adopted', 'renewed']);
    expect(first.serving.cert).toBe(second.serving.cert);
    const data = await secretData();
    const newCa = data[SECRET_KEYS.ca]!;
    expect(fingerprint(newCa)).not.toBe(fingerprint(oldCa));
    expect(new X509Certificate(data[SECRET_KEYS.cert]!).checkIssued(new X509Certificate(newCa))).toBe(true);
    const bundles = await caBundles();
    expect(splitPemBundle(bundles[0]!).map(fingerprint)).toEqual([fingerprint(newCa), fingerprint(oldCa)]);
    expect(bundles[1]).toBe(bundles[0]);

    now = new Date(new Date(new X509Certificate(oldCa).validTo).getTime() + DAY_MS);
    expect((await a.reconcile()).action).toBe('pruned');
    expect(splitPemBundle((await caBundles())[0]!).map(fingerprint)).toEqual([fingerprint(newCa)]);
    expect((await b.reconcile()).action).toBe('adopted');
  });

  test('a renewed certificate is served from the check after the one that published its CA; one no longer valid is replaced at once', async () => {
    const { client } = await recordingClient();
    let now = new Date();
    const running = await startWebhook({
      host: '127.0.0.1',
      port: 0,
      config: defaultConfig(),
      logger: pino({ level: 'silent' }),
      shutdownDelayMs: 0,
      // Checks only when the test asks (checkCertificates), on the test's clock.
      tls: { mode: 'self', namespace, secretName, webhookConfigName: configName, serviceName: SERVICE, kube: { client }, checkIntervalMs: 3_600_000, now: () => now },
    });
    const served = async () => fingerprint((await httpsRequest({ port: running.server.address().port, method: 'GET', path: '/healthz' })).peerCertificate);
    try {
      await running.certificateLoaded;
      const first = await served();
      expect(first).toBe(fingerprint((await secretData())[SECRET_KEYS.cert]!));

      now = new Date(now.getTime() + 340 * DAY_MS);
      await running.checkCertificates!();
      const renewed = await secretData();
      expect(fingerprint(renewed[SECRET_KEYS.cert]!)).not.toBe(first);
      expect(splitPemBundle((await caBundles())[0]!)).toHaveLength(2);
      // Published, not served yet: the API server may still hold the bundle without the new CA.
      expect(await served()).toBe(first);
      await running.checkCertificates!();
      expect(await served()).toBe(fingerprint(renewed[SECRET_KEYS.cert]!));

      // Past the end of what it serves, a replica switches in the same check.
      now = new Date(new Date(new X509Certificate(renewed[SECRET_KEYS.cert]!).validTo).getTime() + DAY_MS);
      await running.checkCertificates!();
      const replaced = await secretData();
      expect(fingerprint(replaced[SECRET_KEYS.cert]!)).not.toBe(fingerprint(renewed[SECRET_KEYS.cert]!));
      expect(await served()).toBe(fingerprint(replaced[SECRET_KEYS.cert]!));
    } finally {
      await running.close();
    }
  });

  test('the Secret deleted: the CA issued anew is published beside the one the replica served', async () => {
    const { client } = await recordingClient();
    const certificates = new SelfManagedCertificates({
      namespace,
      serviceName: SERVICE,
      store: await kubernetesSecretStore({ client }, { namespace, name: secretName }),
      publisher: await kubernetesCaBundlePublisher({ client }, configName),
    });
    const first = await certificates.reconcile();
    await adminApi().delete(`/api/v1/namespaces/${namespace}/secrets/${secretName}`);
    const second = await certificates.reconcile();
    expect(second.action).toBe('created');
    expect(fingerprint(second.ca)).not.toBe(fingerprint(first.ca));
    expect(splitPemBundle((await caBundles())[0]!).map(fingerprint)).toEqual([fingerprint(second.ca), fingerprint(first.ca)]);
    expect(splitPemBundle((await secretData())[SECRET_KEYS.bundle]!).map(fingerprint)).toEqual([fingerprint(second.ca), fingerprint(first.ca)]);
  });

  test('a configuration edited between the read and the patch (helm upgrade meanwhile): the API server refuses the patch, drainguard reads again', async () => {
    const recording = await recordingClient();
    const certificates = new SelfManagedCertificates({
      namespace,
      serviceName: SERVICE,
      store: await kubernetesSecretStore({ client: recording.client }, { namespace, name: secretName }),
      publisher: await kubernetesCaBundlePublisher({ client: recording.client }, configName),
    });
    const held = recording.hold('PATCH', new RegExp(`/mutatingwebhookconfigurations/${configName}$`));
    const reconciled = certificates.reconcile();
    await held.arrived;
    const current = await adminApi().get<KubeObject>(`${CONFIGURATIONS}/${configName}`);
    await adminApi().put(`${CONFIGURATIONS}/${configName}`, { ...configuration(), metadata: { ...current.metadata, labels: { app: 'drainguard', upgraded: 'yes' } } });
    held.release();
    await reconciled;
    const patches = recording.requests.filter((r) => r.method === 'PATCH');
    expect(patches).toHaveLength(2);
    const stored = await adminApi().get<KubeObject>(`${CONFIGURATIONS}/${configName}`);
    expect(stored.metadata.labels).toEqual({ app: 'drainguard', upgraded: 'yes' });
    expect((await caBundles()).every((bundle) => splitPemBundle(bundle).length === 1)).toBe(true);
  });

  test('a Secret that names another Service is issued anew', async () => {
    const { client } = await recordingClient();
    const make = async (serviceName: string) =>
      new SelfManagedCertificates({
        namespace,
        serviceName,
        store: await kubernetesSecretStore({ client }, { namespace, name: secretName }),
        publisher: await kubernetesCaBundlePublisher({ client }, configName),
      });
    await (await make(SERVICE)).reconcile();
    expect((await (await make('drainguard-renamed')).reconcile()).action).toBe('renewed');
    expect(new X509Certificate((await secretData())[SECRET_KEYS.cert]!).checkHost(`drainguard-renamed.${namespace}.svc`)).toBeDefined();
  });

  test('drainguard serve --tls-mode self --kubeconfig: the built CLI, a process of its own, gets its certificate through the API server', async () => {
    const child = spawn(NODE, [CLI_MAIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--shutdown-delay', '0s', '--tls-mode', 'self', '--kubeconfig', clusterInfo().adminKubeconfig, '--namespace', namespace, '--secret-name', secretName, '--webhook-config-name', configName, '--service-name', SERVICE], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const logs: Record<string, unknown>[] = [];
      const lines = createInterface({ input: child.stdout! });
      const logged = (message: string) =>
        new Promise<Record<string, unknown>>((resolve, reject) => {
          lines.on('line', (line) => {
            const entry = JSON.parse(line) as Record<string, unknown>;
            logs.push(entry);
            if (entry.msg === message || entry.msg === 'self-managed certificate reconcile failed; will retry') resolve(entry);
          });
          void exited.then((code) => reject(new Error(`serve exited with ${code} before logging '${message}'`)));
        });
      const reconciled = await logged('self-managed certificate updated');
      expect(reconciled).toMatchObject({ msg: 'self-managed certificate updated', action: 'created' });
      const port = logs.find((entry) => entry.msg === 'listening')!.port as number;
      const bundle = (await caBundles())[0]!;
      expect(bundle).toContain('-----BEGIN CERTIFICATE-----');
      const ready = await httpsRequest({ port, method: 'GET', path: '/readyz', ca: bundle, servername: serviceDns });
      expect(ready.status).toBe(200);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  });

  /** A server with `serving`, asked for /readyz as the API server would ask: trusting `bundle`, for the Service's name. */
  async function serveWith(serving: { cert: string; key: string }, bundle: string): Promise<number> {
    const dir = mkdtempSync(join(tmpdir(), 'drainguard-serving-'));
    writeFileSync(join(dir, 'tls.crt'), serving.cert);
    writeFileSync(join(dir, 'tls.key'), serving.key);
    const server = await startWebhook({ host: '127.0.0.1', port: 0, config: defaultConfig(), logger: pino({ level: 'silent' }), shutdownDelayMs: 0, tls: { mode: 'files', certPath: join(dir, 'tls.crt'), keyPath: join(dir, 'tls.key') } });
    try {
      const result = await httpsRequest({ port: server.server.address().port, method: 'GET', path: '/readyz', ca: bundle, servername: serviceDns });
      return result.status;
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

