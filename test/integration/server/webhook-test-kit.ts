/**
 * Shared by the webhook's integration and e2e tests: fixture pods as AdmissionReviews, an HTTPS client
 * that verifies like kube-apiserver does (a CA bundle and the Service DNS name), temp directories.
 */
import { request } from 'node:https';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { parseAllDocuments } from 'yaml';
import pino from 'pino';
import type { Pod } from '../../../src/mutate/k8s';

import { CONTOUR_FIXTURES_DIR, REPO_ROOT } from '../../support/build';

export { REPO_ROOT };
const POD_FIXTURES = join(REPO_ROOT, 'test/fixtures/pods');

export const silentLogger = () => pino({ level: 'silent' });

export function temporaryDirectory(): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), 'drainguard-'));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** Every fixture pod: test/fixtures/pods/*.yaml plus the pod templates of Contour's DaemonSets. */
export function fixturePods(): { name: string; pod: Pod }[] {
  const pods: { name: string; pod: Pod }[] = [];
  for (const file of readdirSync(POD_FIXTURES).filter((f) => f.endsWith('.yaml')).sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(POD_FIXTURES, file), 'utf8'))) {
      const pod = doc.toJS() as Pod | null;
      if (pod?.kind === 'Pod') pods.push({ name: file, pod });
    }
  }
  for (const file of readdirSync(CONTOUR_FIXTURES_DIR).filter((f) => f.endsWith('.yaml')).sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(CONTOUR_FIXTURES_DIR, file), 'utf8'))) {
      const object = doc.toJS() as { kind?: string; metadata?: { name?: string; namespace?: string }; spec?: { template?: Pod } } | null;
      const template = object?.kind === 'DaemonSet' ? object.spec?.template : undefined;
      if (!template) continue;
      pods.push({
        name: `contour/${file}`,
        pod: {
          apiVersion: 'v1',
          kind: 'Pod',
          ...template,
          metadata: { ...template.metadata, generateName: `${object?.metadata?.name}-`, namespace: object?.metadata?.namespace ?? 'default' },
        },
      });
    }
  }
  return pods;
}

export function admissionReview(
  pod: unknown,
  options: { uid?: string; dryRun?: boolean; apiVersion?: string; operation?: string } = {},
) {
  const metadata = (pod as Pod).metadata ?? {};
  return {
    apiVersion: options.apiVersion ?? 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: options.uid ?? '705ab4f5-6393-11e8-b7cc-42010a800002',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      requestKind: { group: '', version: 'v1', kind: 'Pod' },
      requestResource: { group: '', version: 'v1', resource: 'pods' },
      namespace: metadata.namespace ?? 'default',
      operation: options.operation ?? 'CREATE',
      userInfo: { username: 'system:serviceaccount:kube-system:daemon-set-controller', groups: ['system:serviceaccounts'] },
      object: pod,
      oldObject: null,
      dryRun: options.dryRun ?? false,
      options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' },
    },
  };
}

export interface HttpsResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** Parsed JSON body, or undefined when the body is not JSON. */
  json: unknown;
  /** PEM of the certificate the server presented. */
  peerCertificate: string;
}

export interface HttpsRequestOptions {
  port: number;
  host?: string;
  path?: string;
  method?: string;
  headers?: Record<string, string | number>;
  body?: string | Buffer;
  /** Trust exactly this CA bundle (as kube-apiserver does with caBundle). */
  ca?: string;
  /** The name to verify the certificate for (the Service DNS name). */
  servername?: string;
  /** Send only the headers and these bytes, then end the request (truncated/lying bodies). */
  rawBody?: Buffer;
}

/** One request on a fresh connection (no agent), verifying the server's certificate when `ca` is given. */
export function httpsRequest(options: HttpsRequestOptions): Promise<HttpsResult> {
  return new Promise((resolveResult, reject) => {
    const body = options.body;
    const req = request(
      {
        host: options.host ?? '127.0.0.1',
        port: options.port,
        path: options.path ?? '/mutate',
        method: options.method ?? 'POST',
        agent: false,
        ...(options.ca ? { ca: options.ca, rejectUnauthorized: true } : { rejectUnauthorized: false }),
        ...(options.servername ? { servername: options.servername } : {}),
        headers: {
          ...(body !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}),
          ...options.headers,
        },
      },
      (res) => {
        const peer = (res.socket as TLSSocket).getPeerX509Certificate?.()?.toString() ?? '';
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolveResult({ status: res.statusCode ?? 0, headers: res.headers, text, json, peerCertificate: peer });
        });
      },
    );
    req.on('error', reject);
    if (options.rawBody) req.end(options.rawBody);
    else req.end(body);
  });
}

/** Polls `condition` until it holds; fails with `description` after `attempts` (no fixed sleeps as sync). */
export async function eventually<T>(
  description: string,
  probe: () => Promise<T | undefined>,
  { attempts = 200, intervalMs = 25 } = {},
): Promise<T> {
  let lastError: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out waiting for ${description}${lastError ? `: ${String(lastError)}` : ''}`);
}
