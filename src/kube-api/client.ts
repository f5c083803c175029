/**
 * The Kubernetes API over Node's own http/https, authenticated as client-node authenticates: the
 * calls of the long-running processes (the reporter's list, watch and Events, the webhook's Secret
 * and caBundle in self mode). Each has a handful of kinds of request, read as JSON, and needs none of
 * what the typed client adds per call: its object serializer turns every answer into class instances
 * (timestamps into Dates) and back, and every request goes through fetch's web streams. Here a
 * request costs a JSON.stringify and a write; an answer is text, or a stream of chunks read as they
 * arrive (./json-stream.ts), so a list of 500 pods is never held whole.
 *
 * Credentials are applied per request by client-node (`KubeConfig.applyToHTTPSOptions`: tokens read
 * again as they rotate, exec plugins, OIDC, client certificates, proxies). Connections are kept alive
 * in an agent of this client's own, built from the TLS settings that call returns, and built anew when
 * those change (a rotated CA or client certificate); client-node's own agent for a direct connection
 * would open a new TLS connection for every request. Through a proxy, client-node's proxy agent is used.
 */
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest, type RequestOptions } from 'node:https';
import type * as k8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { ApiFailure } from './failure';

/** An answer with its status, whatever the status. */
export interface KubeAnswer {
  status: number;
  text: string;
}

/** A path segment (a name or namespace) as it goes into a URL. */
export const segment = (value: string) => encodeURIComponent(value);

export interface StreamOptions {
  /** Ends the request (the stream resolves as if the server had ended it). */
  signal?: AbortSignal;
  /** Fails the request when nothing arrives for this long (ms); the client's `timeoutMs` otherwise. */
  idleTimeoutMs?: number;
}

/** TLS settings of a connection; a change of any of them needs a new agent. */
const TLS_FIELDS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

type TlsSettings = Partial<Pick<RequestOptions, (typeof TLS_FIELDS)[number]>>;

function sameTls(a: TlsSettings, b: TlsSettings): boolean {
  return TLS_FIELDS.every((field) => {
    const x = a[field] as unknown;
    const y = b[field] as unknown;
    return Buffer.isBuffer(x) && Buffer.isBuffer(y) ? x.equals(y) : x === y;
  });
}

/**
 * An https agent whose pool is keyed by host and port alone. Node's key also holds the CA, the client
 * certificate and the key, turned into text for every request and hashed for each of the pool's
 * lookups (a few KiB each time: a tenth of a request's CPU). This agent serves one server with one
 * set of TLS settings (a change of them makes a new agent), so host and port tell its connections apart.
 */
class SingleTlsAgent extends HttpsAgent {
  override getName(options?: Parameters<HttpAgent['getName']>[0]): string {
    return HttpAgent.prototype.getName.call(this, options);
  }
}

/** Idle kept-alive connections close after this long (the API server's own idle timeout is 90 s or more). */
const IDLE_SOCKET_MS = 30_000;

export class KubeApiClient {
  private readonly base: URL;
  private readonly secure: boolean;
  private agent: { agent: HttpAgent; tls: TlsSettings } | undefined;

  /** `timeoutMs`: a request with nothing received for this long fails (a silent API server never hangs a call). */
  constructor(
    private readonly kubeConfig: k8s.KubeConfig,
    private readonly timeoutMs: number,
  ) {
    const server = kubeConfig.getCurrentCluster()?.server;
    if (!server) throw new Error('the kubeconfig names no cluster server');
    this.base = new URL(server);
    this.secure = this.base.protocol === 'https:';
  }

  /** A request with an optional JSON body (or text in `contentType`); resolves with any status, rejects (an ApiFailure without a status) only when no answer came. */
  async request(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<KubeAnswer> {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const chunks: Buffer[] = [];
    const status = await this.send(method, path, payload, contentType, (chunk) => chunks.push(chunk), {});
    return { status, text: Buffer.concat(chunks).toString('utf8') };
  }

  /**
   * A GET whose 2xx answer is handed over chunk by chunk as it arrives; resolves with the status when
   * the answer has ended (or `signal` ended it). Another status resolves with the answer's text.
   */
  async stream(path: string, onChunk: (chunk: Buffer) => void, options: StreamOptions = {}): Promise<KubeAnswer> {
    let failure: Buffer[] | undefined;
    const status = await this.send('GET', path, undefined, undefined, (chunk, ok) => (ok ? onChunk(chunk) : (failure ??= []).push(chunk)), options);
    return { status, text: failure ? Buffer.concat(failure).toString('utf8') : '' };
  }

  /** Closes the kept-alive connections. */
  close(): void {
    this.agent?.agent.destroy();
    this.agent = undefined;
  }

  private async send(
    method: string,
    path: string,
    payload: string | undefined,
    contentType: string | undefined,
    onChunk: (chunk: Buffer, ok: boolean) => void,
    { signal, idleTimeoutMs = this.timeoutMs }: StreamOptions,
  ): Promise<number> {
    const options: RequestOptions = {};
    await this.kubeConfig.applyToHTTPSOptions(options);
    const headers: Record<string, string | number> = { Accept: 'application/json', ...(options.headers as Record<string, string>) };
    if (payload !== undefined) {
      headers['Content-Type'] = contentType ?? 'application/json';
      headers['Content-Length'] = Buffer.byteLength(payload);
    }
    const proxied = Boolean(this.kubeConfig.getCurrentCluster()?.proxyUrl);
    const target = {
      protocol: this.base.protocol,
      hostname: this.base.hostname.replace(/^\[|\]$/g, ''),
      port: this.base.port,
      path: `${this.base.pathname.replace(/\/$/, '')}${path}`,
      method,
      headers,
      ...(options.auth !== undefined ? { auth: options.auth } : {}),
      agent: proxied ? options.agent : this.agentFor(options),
      ...(signal ? { signal } : {}),
    };
    return new Promise<number>((resolve, reject) => {
      let settled = false;
      const settle = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        outcome();
      };
      // Ended on purpose (`signal`): resolved as if the server had ended it, whatever error that raised.
      const fail = (error: unknown) =>
        settle(() => (signal?.aborted ? resolve(0) : reject(error instanceof ApiFailure ? error : new ApiFailure(`${method} ${path}: ${describe(error)}`, undefined, { cause: error }))));
      const req: ClientRequest = (this.secure ? httpsRequest : httpRequest)(target, (res: IncomingMessage) => {
        const status = res.statusCode ?? 0;
        const ok = status >= 200 && status < 300;
        res.on('data', (chunk: Buffer) => {
          try {
            onChunk(chunk, ok);
          } catch (error) {
            // A consumer that cannot take what arrived ends the request with its error.
            settle(() => reject(error));
            req.destroy();
          }
        });
        res.on('end', () => settle(() => resolve(status)));
        res.on('close', () => {
          if (!res.complete) fail(new ApiFailure(`${method} ${path}: the answer was cut short`, undefined));
        });
        res.on('error', fail);
      });
      req.setTimeout(idleTimeoutMs, () => req.destroy(new ApiFailure(`${method} ${path}: nothing received for ${idleTimeoutMs} ms`, undefined)));
      req.on('error', fail);
      req.end(payload);
    });
  }

  /** The kept-alive agent for these TLS settings (a new one when they changed). */
  private agentFor(options: RequestOptions): HttpAgent {
    const tls: TlsSettings = {};
    for (const field of TLS_FIELDS) if (options[field] !== undefined) (tls as Record<string, unknown>)[field] = options[field];
    if (this.agent === undefined || !sameTls(this.agent.tls, tls)) {
      // Connections of the old agent finish what they carry and are not reused.
      const settings = { keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' as const };
      this.agent = { agent: this.secure ? new SingleTlsAgent({ ...settings, ...tls }) : new HttpAgent(settings), tls };
    }
    return this.agent.agent;
  }
}

function describe(error: unknown): string {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' && message !== '' ? message : String(error);
  return typeof code === 'string' && !text.includes(code) ? `${code}: ${text}` : text;
}
