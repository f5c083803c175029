/**
 * Shared by the webhook's integration and e2e tests: fixture pods as AdmissionReviews, an HTTPS client
 * that verifies like kube-apiserver does (a CA bundle and the Service DNS name), temp directories.
 */
import { request, type Agent } from 'node:https';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import pino from 'pino';

import { REPO_ROOT } from '../../support/repo';

export { REPO_ROOT };
/** The envelope and fixture pods the benchmarks send too (test/support/generators/): one envelope, not two. */
export { admissionReview } from '../../support/generators/review';
export { fixturePods } from '../../support/generators/pods';

export const silentLogger = () => pino({ level: 'silent' });

export function temporaryDirectory(): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), 'drainguard-'));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
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
  /** Reuse this agent's keep-alive connection instead of a fresh one. */
  agent?: Agent;
}

/** One request on a fresh connection (unless `agent` is given), verifying the server's certificate when `ca` is given. */
export function httpsRequest(options: HttpsRequestOptions): Promise<HttpsResult> {
  return new Promise((resolveResult, reject) => {
    const body = options.body;
    const req = request(
      {
        host: options.host ?? '127.0.0.1',
        port: options.port,
        path: options.path ?? '/mutate',
        method: options.method ?? 'POST',
        agent: options.agent ?? false,
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
