/**
 * A stand-in for kube-apiserver that answers what `drainguard serve --tls-mode self` asks, so the
 * benchmark measures the webhook as the chart runs it by default: the Secret that holds its CA and
 * serving certificate (read, created, replaced) and the MutatingWebhookConfiguration whose `caBundle` it
 * patches with a JSON Patch. HTTPS with the benchmark's CA, Bearer token. A stub rather than the real
 * API server: the benchmark measures the webhook's memory, which these four calls at start barely touch,
 * and runs without root or network namespaces; test/kube/admission-certificates.test.ts proves the
 * calls themselves against the real kube-apiserver.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { readBody, send, statusBody } from './kube-api-stub';
import type { BenchCertificates } from './tls';

export const SELF_MODE_NAMESPACE = 'drainguard-bench';
export const SELF_MODE_SECRET = 'drainguard-bench-tls';
export const SELF_MODE_WEBHOOK = 'drainguard-bench';

type Json = Record<string, unknown>;

export interface SelfModeStub {
  /** A kubeconfig file's content for this stub. */
  kubeconfig: string;
  /** The CA bundle the webhook published (PEM), once it has. */
  readonly caBundle: string | undefined;
  close(): Promise<void>;
}

export async function startSelfModeStub(certs: BenchCertificates): Promise<SelfModeStub> {
  const token = randomBytes(24).toString('hex');
  let resourceVersion = 1;
  let secret: Json | undefined;
  const webhook = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: SELF_MODE_WEBHOOK, resourceVersion: String(resourceVersion) },
    webhooks: [{ name: 'pods.drainguard.io', clientConfig: {} as { caBundle?: string } }],
  };
  const secretPath = `/api/v1/namespaces/${SELF_MODE_NAMESPACE}/secrets`;
  const webhookPath = `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${SELF_MODE_WEBHOOK}`;
  const server: Server = createServer({ cert: readFileSync(certs.certPath), key: readFileSync(certs.keyPath) }, (req, res) => {
    void readBody(req).then((body) => {
      if (req.headers.authorization !== `Bearer ${token}`) return send(res, 401, statusBody(401, 'Unauthorized', 'Unauthorized'));
      const path = (req.url ?? '').split('?')[0];
      if (path === secretPath && req.method === 'POST') {
        if (secret) return send(res, 409, statusBody(409, 'AlreadyExists', `secrets "${SELF_MODE_SECRET}" already exists`));
        secret = JSON.parse(body) as Json;
        (secret.metadata as Json).resourceVersion = String(++resourceVersion);
        return send(res, 201, secret);
      }
      if (path === `${secretPath}/${SELF_MODE_SECRET}`) {
        if (req.method === 'GET') return secret ? send(res, 200, secret) : send(res, 404, statusBody(404, 'NotFound', `secrets "${SELF_MODE_SECRET}" not found`));
        if (req.method === 'PUT') {
          secret = JSON.parse(body) as Json;
          (secret.metadata as Json).resourceVersion = String(++resourceVersion);
          return send(res, 200, secret);
        }
      }
      if (path === webhookPath) {
        if (req.method === 'GET') return send(res, 200, webhook);
        if (req.method === 'PATCH') {
          for (const operation of JSON.parse(body) as { op: string; path: string; value: string }[]) {
            if (operation.op === 'add' && operation.path === '/webhooks/0/clientConfig/caBundle') webhook.webhooks[0]!.clientConfig.caBundle = operation.value;
          }
          webhook.metadata.resourceVersion = String(++resourceVersion);
          return send(res, 200, webhook);
        }
      }
      send(res, 404, statusBody(404, 'NotFound', 'the server could not find the requested resource'));
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    kubeconfig: JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'stub', cluster: { server: `https://127.0.0.1:${port}`, 'certificate-authority-data': Buffer.from(certs.ca).toString('base64') } }],
      users: [{ name: 'webhook', user: { token } }],
      contexts: [{ name: 'stub', context: { cluster: 'stub', user: 'webhook' } }],
      'current-context': 'stub',
    }),
    get caBundle() {
      const bundle = webhook.webhooks[0]!.clientConfig.caBundle;
      return bundle === undefined ? undefined : Buffer.from(bundle, 'base64').toString('utf8');
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
