/**
 * An HTTPS client shaped like kube-apiserver's webhook client: a small pool of keep-alive connections to
 * one server, verifying its certificate against a CA bundle and the Service name.
 */
import { Agent, request } from 'node:https';
import { performance } from 'node:perf_hooks';

export interface ClientTarget {
  port: number;
  ca: string;
  servername: string;
}

export interface SentRequest {
  method?: string;
  path: string;
  headers?: Record<string, string | number>;
  body?: string | Buffer;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** performance.now() when the whole response had arrived. */
  receivedAt: number;
}

export interface HttpsClient {
  send(req: SentRequest, timeoutMs?: number): Promise<Answer>;
  close(): void;
}

export function createHttpsClient(target: ClientTarget, connections: number): HttpsClient {
  const agent = new Agent({ keepAlive: true, maxSockets: connections, ca: target.ca, servername: target.servername });
  return {
    send: (req, timeoutMs = 10_000) =>
      new Promise<Answer>((resolve, reject) => {
        const outgoing = request(
          {
            host: '127.0.0.1',
            port: target.port,
            agent,
            method: req.method ?? 'POST',
            path: req.path,
            headers: req.body === undefined ? req.headers : { 'content-length': Buffer.byteLength(req.body), ...req.headers },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('error', reject);
            res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), receivedAt: performance.now() }));
          },
        );
        outgoing.setTimeout(timeoutMs, () => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)));
        outgoing.on('error', reject);
        outgoing.end(req.body);
      }),
    close: () => agent.destroy(),
  };
}
