/**
 * The Kubernetes API for the long-running processes (the reporter's lists, watches and Events, the
 * webhook's Secret and caBundle in self mode), authenticated as client-node authenticates. Each makes a
 * handful of kinds of request, read as JSON, and needs none of what the typed client adds per call (its
 * object serializer turns every answer into class instances and back; every request goes through
 * fetch's web streams), nor what Node's own http client does per request: on the reporter's benchmark
 * (10,000 pods, 100 drains/s, each 4 watch events and 2 Event POSTs) node:https's machinery was about
 * 40% of the reporter's CPU per drain, a POST 166 µs of client CPU back to back against 66 µs written
 * on a kept-alive TLS connection and read by a minimal parser. So requests go over connections of
 * this client's own (./connections.ts): the reporter's CPU per drain fell from 1.58 to 1.10 ms with
 * this and what followed it (docs/benchmarks.md, "The reporter's CPU per drain"). An answer is handed
 * on as text, or as chunks as they arrive (./json-stream.ts), so a list is never held whole.
 *
 * Credentials are applied by client-node (`KubeConfig.applyToHTTPSOptions`: tokens read again as they
 * rotate, exec plugins, OIDC, client certificates), at most once a second (CREDENTIALS_REUSE_MS) and
 * again after a 401. Connections are made with the TLS settings that call returns and are replaced
 * when those change (a rotated CA or client certificate). A cluster reached through a proxy
 * (`proxy-url`) is served by node:https with client-node's proxy agent.
 */
import { performance } from 'node:perf_hooks';
import type * as k8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { KeptAliveConnections, ProxiedRequests, type AppliedOptions, type Receive, type Transport } from './connections';
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

/**
 * An answer read whole (`request`, or a stream's failure) larger than this fails the request. The API
 * server takes at most 3 MiB in a request and etcd stores at most 1.5 MiB per object, so one object's
 * answer is far smaller; lists are streamed.
 */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/**
 * Credentials once applied serve the requests of the next second. client-node reads the CA, client
 * certificate and key files again on every call (a file read each, and a comparison of their bytes
 * here), for changes that come rarely and need not be seen at once: the kubelet rotates a projected
 * ServiceAccount token long before it expires, and client-node itself reads a token file again only
 * every 60 s, as client-go does. A 401 drops them at once.
 */
export const CREDENTIALS_REUSE_MS = 1000;

/** Credentials as applied, and the headers they make. */
interface Credentials {
  options: AppliedOptions;
  headers: Readonly<Record<string, string>>;
}

export interface KubeApiClientOptions {
  /** How long applied credentials serve requests (ms); CREDENTIALS_REUSE_MS unless a test needs another. */
  credentialsReuseMs?: number;
}

export class KubeApiClient {
  /** The server's path prefix (a server URL may carry one), without its trailing slash. */
  private readonly prefix: string;
  private readonly transport: Transport;
  private readonly credentialsReuseMs: number;
  private credentials: { applied: Promise<Credentials>; atMs: number } | undefined;

  /** `timeoutMs`: a request with nothing received for this long fails (a silent API server never hangs a call). */
  constructor(
    private readonly kubeConfig: k8s.KubeConfig,
    private readonly timeoutMs: number,
    { credentialsReuseMs = CREDENTIALS_REUSE_MS }: KubeApiClientOptions = {},
  ) {
    this.credentialsReuseMs = credentialsReuseMs;
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster?.server) throw new Error('the kubeconfig names no cluster server');
    let server: URL;
    try {
      server = new URL(cluster.server);
    } catch {
      throw new Error(`the kubeconfig's cluster ${cluster.name} has an invalid server URL ${JSON.stringify(cluster.server)}`);
    }
    if (server.protocol !== 'https:' && server.protocol !== 'http:') throw new Error(`the kubeconfig's server ${cluster.server} is neither https: nor http:`);
    // client-node's own rule (its agent refuses the first request otherwise): plain HTTP only when the cluster entry asks for no TLS checks.
    if (server.protocol === 'http:' && !cluster.skipTLSVerify) {
      throw new Error(`the kubeconfig's server ${cluster.server} is plain HTTP, which needs insecure-skip-tls-verify: true in its cluster entry (credentials and answers cross the network unencrypted)`);
    }
    this.prefix = server.pathname.replace(/\/$/, '');
    this.transport = cluster.proxyUrl ? new ProxiedRequests(server) : new KeptAliveConnections(server);
  }

  /** A request with an optional JSON body (or text in `contentType`); resolves with any status, rejects (an ApiFailure without a status) only when no answer came. */
  async request(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<KubeAnswer> {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const answer = wholeAnswer(`${method} ${path}`);
    const status = await this.send(method, path, payload, contentType, answer.receive, {});
    return { status, text: answer.text() };
  }

  /**
   * A GET whose 2xx answer is handed over chunk by chunk as it arrives; resolves with the status when
   * the answer has ended (or `signal` ended it). Another status resolves with the answer's text.
   */
  async stream(path: string, onChunk: (chunk: Buffer) => void, options: StreamOptions = {}): Promise<KubeAnswer> {
    const failure = wholeAnswer(`GET ${path}`);
    const status = await this.send('GET', path, undefined, undefined, (chunk, ok) => (ok ? onChunk(chunk) : failure.receive(chunk, ok)), options);
    return { status, text: failure.text() };
  }

  /** Closes every connection (a request under way fails); later requests open new ones. */
  close(): void {
    this.transport.close();
  }

  private async send(method: string, path: string, payload: string | undefined, contentType: string | undefined, receive: Receive, { signal, idleTimeoutMs = this.timeoutMs }: StreamOptions): Promise<number> {
    const what = `${method} ${path}`;
    if (signal?.aborted) return 0;
    let credentials: Credentials;
    try {
      credentials = await this.currentCredentials();
    } catch (error) {
      throw new ApiFailure(`${what}: the kubeconfig's credentials could not be applied: ${describe(error)}`, undefined, { cause: error });
    }
    const { options, headers } = credentials;
    /** What `receive` threw: rejected as it is, not as a failure of the request. */
    let refused: { error: unknown } | undefined;
    const guarded: Receive = (chunk, ok) => {
      try {
        receive(chunk, ok);
      } catch (error) {
        refused = { error };
        throw error;
      }
    };
    let status: number;
    try {
      status = await this.transport.send({ method, target: this.prefix + path, headers, payload, contentType: contentType ?? 'application/json' }, options, guarded, idleTimeoutMs, signal);
    } catch (error) {
      if (refused?.error === error || error instanceof ApiFailure) throw error;
      throw new ApiFailure(`${what}: ${describe(error)}`, undefined, { cause: error });
    }
    // Credentials the server refused (a token rotated or expired): the next request applies them anew.
    if (status === 401) this.credentials = undefined;
    return status;
  }

  /** The credentials applied within the last CREDENTIALS_REUSE_MS, or applied now. */
  private currentCredentials(): Promise<Credentials> {
    const now = performance.now();
    if (this.credentials === undefined || now - this.credentials.atMs >= this.credentialsReuseMs) {
      const applied = this.applyCredentials();
      const entry = { applied, atMs: now };
      this.credentials = entry;
      // A failure (an exec plugin that failed, a file that is gone) is not kept: the next request tries again.
      applied.catch(() => {
        if (this.credentials === entry) this.credentials = undefined;
      });
    }
    return this.credentials.applied;
  }

  private async applyCredentials(): Promise<Credentials> {
    const options: AppliedOptions = {};
    await this.kubeConfig.applyToHTTPSOptions(options as Parameters<k8s.KubeConfig['applyToHTTPSOptions']>[0]);
    const headers: Record<string, string> = { 'User-Agent': 'drainguard', Accept: 'application/json' };
    for (const name in options.headers) headers[name] = String(options.headers[name]);
    // As node:https turns its `auth` option into the header.
    if (options.auth !== undefined) headers.Authorization = `Basic ${Buffer.from(options.auth).toString('base64')}`;
    return { options, headers };
  }
}

/** Collects an answer read whole, up to MAX_ANSWER_BYTES (then fails the request). */
function wholeAnswer(what: string): { receive: Receive; text(): string } {
  const chunks: Buffer[] = [];
  let bytes = 0;
  return {
    receive: (chunk) => {
      bytes += chunk.length;
      if (bytes > MAX_ANSWER_BYTES) throw new ApiFailure(`${what}: the answer is larger than ${MAX_ANSWER_BYTES} bytes`, undefined);
      chunks.push(chunk);
    },
    text: () => (chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8')),
  };
}

function describe(error: unknown): string {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' && message !== '' ? message : String(error);
  return typeof code === 'string' && !text.includes(code) ? `${code}: ${text}` : text;
}
