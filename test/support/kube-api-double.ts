/**
 * An HTTPS stand-in for kube-apiserver covering exactly what drainguard calls: Secrets (get, create,
 * replace with resourceVersion preconditions) and MutatingWebhookConfigurations (get, JSON patch). It
 * answers with the real API's status codes and `Status` bodies, so drainguard is exercised through the
 * real @kubernetes/client-node, including its error mapping. Tests can inspect every request and hold
 * requests at a gate to force races deterministically.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { applyPatch, type Operation } from 'rfc6902';
import type { KubeConfig } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { loadKubernetesClient } from '../../src/certs/kube';
import { createCertificateAuthority, createServingCertificate } from '../../src/certs/pki';
import * as status from './kube/status';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; uid?: string; [key: string]: unknown };
  [key: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  contentType?: string;
  body?: unknown;
  status: number;
}

interface Gate {
  matches: (method: string, path: string) => boolean;
  waiting: (() => void)[];
  count: number;
}

const SECRETS = /^\/api\/v1\/namespaces\/([^/]+)\/secrets(?:\/([^/]+))?$/;
const WEBHOOKS = /^\/apis\/admissionregistration\.k8s\.io\/v1\/mutatingwebhookconfigurations\/([^/]+)$/;
const WEBHOOK_GROUP = 'admissionregistration.k8s.io';

export class KubeApiDouble {
  readonly requests: RecordedRequest[] = [];
  private readonly secrets = new Map<string, KubeObject>();
  private readonly webhookConfigurations = new Map<string, KubeObject>();
  private readonly gates: Gate[] = [];
  private readonly holds: { matches: Gate['matches']; arrive: () => void; released: Promise<void> }[] = [];
  private resourceVersion = 1000;
  private readonly token = randomUUID();
  private constructor(
    private readonly server: Server,
    readonly caCert: string,
  ) {}

  static async start(): Promise<KubeApiDouble> {
    const validity = { now: new Date(), validityDays: 1 };
    const ca = createCertificateAuthority('kube-api-double CA', validity);
    const serving = createServingCertificate(ca, ['127.0.0.1', 'localhost'], validity);
    const server = createServer({ cert: serving.cert, key: serving.key });
    const double = new KubeApiDouble(server, ca.cert);
    server.on('request', (req, res) => void double.handle(req, res));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return double;
  }

  get url(): string {
    return `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** A KubeConfig for the real client library: TLS verified against the double's CA, bearer token. */
  async kubeConfig(): Promise<KubeConfig> {
    const { KubeConfig } = await loadKubernetesClient();
    const config = new KubeConfig();
    config.loadFromString(this.kubeconfigYaml());
    return config;
  }

  /** The same, as a kubeconfig file's content (for `--kubeconfig` in a spawned process). */
  kubeconfigYaml(): string {
    return JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'double', cluster: { server: this.url, 'certificate-authority-data': Buffer.from(this.caCert).toString('base64') } }],
      users: [{ name: 'drainguard', user: { token: this.token } }],
      contexts: [{ name: 'double', context: { cluster: 'double', user: 'drainguard' } }],
      'current-context': 'double',
    });
  }

  async close(): Promise<void> {
    for (const gate of this.gates.splice(0)) gate.waiting.splice(0).forEach((release) => release());
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, 'close');
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

  putWebhookConfiguration(configuration: Omit<KubeObject, 'metadata'> & { metadata: { name: string; [key: string]: unknown } }): void {
    const stored = this.stamp({ apiVersion: `${WEBHOOK_GROUP}/v1`, kind: 'MutatingWebhookConfiguration', ...configuration });
    this.webhookConfigurations.set(configuration.metadata.name, stored);
  }

  /** A copy of the stored configuration, typed as the test needs to read it. */
  webhookConfiguration<T = KubeObject>(name: string): T {
    const stored = this.webhookConfigurations.get(name);
    if (!stored) throw new Error(`no MutatingWebhookConfiguration ${name}`);
    return structuredClone(stored) as unknown as T;
  }

  secret(namespace: string, name: string): KubeObject | undefined {
    return structuredClone(this.secrets.get(`${namespace}/${name}`));
  }

  /** Decoded `data` of a stored Secret. */
  secretData(namespace: string, name: string): Record<string, string> | undefined {
    const data = this.secrets.get(`${namespace}/${name}`)?.data as Record<string, string> | undefined;
    return data && Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
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
    const path = new URL(req.url ?? '/', 'https://double').pathname;
    await this.waitAtGate(method, path);
    const contentType = req.headers['content-type'];
    let body: unknown;
    const reply = (code: number, payload: unknown) => {
      this.requests.push({ method, path, ...(contentType ? { contentType } : {}), ...(body !== undefined ? { body } : {}), status: code });
      res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
    };
    if (req.headers.authorization !== `Bearer ${this.token}`) return reply(401, status.unauthorized());
    if (chunks.length > 0) {
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch (error) {
        return reply(400, status.badRequest(`invalid JSON: ${(error as Error).message}`));
      }
    }
    const secret = SECRETS.exec(path);
    if (secret) return this.handleSecret(method, secret[1]!, secret[2], body, reply);
    const webhook = WEBHOOKS.exec(path);
    if (webhook) return this.handleWebhookConfiguration(method, webhook[1]!, contentType, body, reply);
    return reply(404, status.notFound({ resource: 'unknown', name: path }));
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

  private handleSecret(
    method: string,
    namespace: string,
    name: string | undefined,
    body: unknown,
    reply: (code: number, payload: unknown) => void,
  ): void {
    if (method === 'POST' && name === undefined) {
      const object = body as KubeObject;
      const ref = { resource: 'secrets', name: object?.metadata?.name ?? '' };
      if (!ref.name) return reply(422, status.invalidPatch('metadata.name: Required value'));
      const key = `${namespace}/${ref.name}`;
      if (this.secrets.has(key)) return reply(409, status.alreadyExists(ref));
      const { resourceVersion: _ignored, ...metadata } = object.metadata;
      const created = this.stamp({ ...object, metadata: { ...metadata, name: ref.name, namespace } });
      this.secrets.set(key, created);
      return reply(201, created);
    }
    if (name === undefined) return reply(405, status.notAllowed(method));
    const ref = { resource: 'secrets', name };
    const key = `${namespace}/${name}`;
    const current = this.secrets.get(key);
    if (method === 'GET') return current ? reply(200, current) : reply(404, status.notFound(ref));
    if (method === 'PUT') {
      if (!current) return reply(404, status.notFound(ref));
      const object = body as KubeObject;
      const precondition = object?.metadata?.resourceVersion;
      // Like the real API: an update without resourceVersion is unconditional; a stale one conflicts.
      if (precondition !== undefined && precondition !== current.metadata.resourceVersion) return reply(409, status.conflict(ref));
      const replaced = this.stamp({
        ...object,
        metadata: { ...object.metadata, name, namespace, uid: current.metadata.uid, creationTimestamp: current.metadata.creationTimestamp },
      });
      this.secrets.set(key, replaced);
      return reply(200, replaced);
    }
    return reply(405, status.notAllowed(method));
  }

  private handleWebhookConfiguration(
    method: string,
    name: string,
    contentType: string | undefined,
    body: unknown,
    reply: (code: number, payload: unknown) => void,
  ): void {
    const ref = { resource: 'mutatingwebhookconfigurations', group: WEBHOOK_GROUP, name };
    const current = this.webhookConfigurations.get(name);
    if (!current) return reply(404, status.notFound(ref));
    if (method === 'GET') return reply(200, current);
    if (method !== 'PATCH') return reply(405, status.notAllowed(method));
    if (contentType !== 'application/json-patch+json') return reply(415, status.unsupportedMediaType(String(contentType)));
    if (!Array.isArray(body)) return reply(400, status.badRequest('a JSON patch must be an array of operations'));
    const patched = structuredClone(current);
    const failures = applyPatch(patched, body as Operation[]).filter((result) => result !== null);
    if (failures.length > 0) return reply(422, status.invalidPatch(`jsonpatch operation does not apply: ${failures[0]!.message}`));
    // As in the API server, a resourceVersion inside the patched object is an update precondition.
    if (patched.metadata.resourceVersion !== current.metadata.resourceVersion) return reply(409, status.conflict(ref));
    const stored = this.stamp(patched);
    this.webhookConfigurations.set(name, stored);
    return reply(200, stored);
  }
}
