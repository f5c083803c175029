import { request } from 'node:http';
import type { AdminAddress } from '../drain-contract';

export interface AdminResponse {
  status: number;
  body: string;
}

/**
 * Why a call got no HTTP answer. The distinction drives the drain: `unreachable` (nothing listens:
 * refused, socket file gone, connection reset) means Envoy is gone and the hook must return at once;
 * `timeout` means something accepted the connection but did not answer in time — Envoy may just be
 * slow (CPU throttling), so the drain carries on, bounded by its deadline.
 */
export type AdminFailureKind = 'unreachable' | 'timeout';

export class AdminCallError extends Error {
  constructor(
    readonly kind: AdminFailureKind,
    message: string,
  ) {
    super(message);
  }
}

export interface AdminClient {
  call(method: 'GET' | 'POST', path: string, timeoutMs: number): Promise<AdminResponse>;
}

/** Largest body read from the admin API; a stats answer for our filter is a few KiB. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

/**
 * One fresh connection per call (`agent: false`, `Connection: close`): nothing is left open between
 * polls, and an admin server that dies mid-drain is noticed on the next call instead of hiding
 * behind a pooled socket.
 */
export function createAdminClient(address: AdminAddress): AdminClient {
  const target = address.kind === 'unix' ? { socketPath: address.path } : { host: address.host, port: address.port };
  return {
    call(method, path, timeoutMs) {
      return new Promise<AdminResponse>((resolve, reject) => {
        let settled = false;
        const finish = (outcome: () => void) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          outcome();
        };
        const req = request({
          ...target,
          method,
          path,
          agent: false,
          headers: { Connection: 'close', Host: 'localhost' },
        });
        const timer = setTimeout(() => {
          finish(() => reject(new AdminCallError('timeout', `${method} ${path}: no answer within ${timeoutMs}ms`)));
          req.destroy();
        }, Math.max(1, timeoutMs));
        req.on('error', (error: NodeJS.ErrnoException) => {
          finish(() => reject(new AdminCallError('unreachable', `${method} ${path}: ${error.code ?? error.message}`)));
        });
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_BODY_BYTES) {
              req.destroy(new Error('admin response too large'));
              return;
            }
            chunks.push(chunk);
          });
          res.on('end', () =>
            finish(() => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') })),
          );
          res.on('error', (error) => finish(() => reject(new AdminCallError('unreachable', `${method} ${path}: ${error.message}`))));
        });
        req.end();
      });
    },
  };
}
