/**
 * Faults the real kube-apiserver does not make by itself, injected between it and a client: a TLS proxy
 * that forwards bytes both ways unchanged and implements nothing of the API. It terminates the client's
 * TLS with a certificate of a CA of its own (the client's kubeconfig trusts that CA; a bearer token goes
 * through as any header does) and opens one TLS connection to kube-apiserver per client connection,
 * trusting the cluster's CA.
 *
 * It reads only the request lines going up, to know which request a fault is for: HTTP/1.1 requests one
 * at a time on a connection (what client-node sends), framed by Content-Length. A connection whose
 * request it cannot frame (a chunked body) is forwarded untouched and never faulted. A test arms a fault
 * for the next request matching a method and path:
 *
 *   lose-answer   the request goes up; kube-apiserver's answer comes back and is dropped, and both
 *                 connections close: the write happened, the client never learns it
 *   reset         the client's connection is reset before anything of the request goes up: nothing happened
 *   slow          the answer is held back `delayMs` before it goes on (a client with a shorter timeout
 *                 gives up while the write has happened)
 */
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { connect, createSecureContext, TLSSocket } from 'node:tls';
import { stringify } from 'yaml';
import { createCertificateAuthority, issueCertificate, type CertificateAuthority } from './pki';

export type FaultKind = 'lose-answer' | 'reset' | 'slow';

export interface ArmedFault {
  kind: FaultKind;
  method: string;
  path: RegExp;
  /** For `slow`: how long the answer is held. */
  delayMs?: number;
}

interface Armed extends ArmedFault {
  injected: () => void;
}

/** What the proxy saw of one request going up. */
export interface SeenRequest {
  method: string;
  path: string;
  fault?: FaultKind;
}

export class FaultProxy {
  readonly seen: SeenRequest[] = [];
  private readonly armed: Armed[] = [];
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly ca: CertificateAuthority,
  ) {}

  /** A proxy on 127.0.0.1 to `upstream` (`https://host:port`, serving a certificate of `upstreamCa`). */
  static async start(options: { upstream: string; upstreamCa: string; dir: string }): Promise<FaultProxy> {
    mkdirSync(options.dir, { recursive: true });
    const ca = createCertificateAuthority(options.dir, 'drainguard test fault proxy');
    const serving = issueCertificate(ca, options.dir, { name: 'proxy', commonName: 'fault proxy', ipAddresses: ['127.0.0.1'], usage: 'server' });
    const target = new URL(options.upstream);
    let proxy: FaultProxy | undefined;
    const secureContext = createSecureContext({ cert: readFileSync(serving.cert), key: readFileSync(serving.key) });
    // TLS over a TCP socket of its own, so that a reset resets the TCP connection itself.
    const server = createServer((raw) => {
      const client = new TLSSocket(raw, { isServer: true, secureContext });
      const upstream = connect({ host: target.hostname, port: Number(target.port), ca: options.upstreamCa });
      proxy!.relay(raw, client, upstream);
    });
    proxy = new FaultProxy(server, ca);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return proxy;
  }

  get url(): string {
    return `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** A kubeconfig through this proxy with a bearer token (a ServiceAccount's, from the TokenRequest API). */
  writeKubeconfig(path: string, token: string): string {
    const config = {
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'proxy',
      clusters: [{ name: 'proxy', cluster: { server: this.url, 'certificate-authority-data': Buffer.from(this.ca.pem).toString('base64') } }],
      users: [{ name: 'token', user: { token } }],
      contexts: [{ name: 'proxy', context: { cluster: 'proxy', user: 'token' } }],
    };
    writeFileSync(path, stringify(config), { mode: 0o600 });
    return path;
  }

  /** Arms a fault for the next request that matches; resolves once it has been injected. */
  arm(fault: ArmedFault): Promise<void> {
    return new Promise((resolve) => this.armed.push({ ...fault, injected: resolve }));
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private take(method: string, path: string): Armed | undefined {
    const index = this.armed.findIndex((fault) => fault.method === method && fault.path.test(path));
    return index >= 0 ? this.armed.splice(index, 1)[0] : undefined;
  }

  private relay(raw: Socket, client: TLSSocket, upstream: TLSSocket): void {
    raw.on('error', () => undefined);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('error', () => undefined);
      socket.once('close', () => {
        this.sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    /** The fault of the request whose answer is on its way down, if any. */
    let answering: Armed | undefined;
    let pending = Buffer.alloc(0);
    /** Body bytes of the current request still to come; -1 while reading a request's head; null: not framed. */
    let bodyLeft: number | null = -1;

    client.on('data', (chunk: Buffer) => {
      if (bodyLeft === null) return void upstream.write(chunk);
      pending = Buffer.concat([pending, chunk]);
      let forward = 0;
      for (;;) {
        if (bodyLeft > 0) {
          const take = Math.min(bodyLeft, pending.length - forward);
          forward += take;
          bodyLeft -= take;
          if (bodyLeft > 0) break;
          bodyLeft = -1;
        }
        const end = pending.indexOf('\r\n\r\n', forward);
        if (end < 0) break;
        const head = pending.subarray(forward, end).toString('latin1');
        const [method = '', target = ''] = head.split('\r\n', 1)[0]!.split(' ');
        const path = target.split('?')[0]!;
        const fault = this.take(method, path);
        this.seen.push({ method, path, ...(fault ? { fault: fault.kind } : {}) });
        if (fault?.kind === 'reset') {
          fault.injected();
          upstream.destroy();
          raw.resetAndDestroy();
          return;
        }
        if (fault) answering = fault;
        const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
        const chunked = /\r\ntransfer-encoding:\s*chunked/i.test(head);
        forward = end + 4;
        if (chunked) {
          bodyLeft = null;
          forward = pending.length;
          break;
        }
        bodyLeft = length ? Number(length[1]) : 0;
        if (bodyLeft === 0) bodyLeft = -1;
      }
      upstream.write(pending.subarray(0, forward));
      pending = pending.subarray(forward);
    });

    upstream.on('data', (chunk: Buffer) => {
      const fault = answering;
      if (fault?.kind === 'lose-answer') {
        // kube-apiserver answered: the request took effect. The client never hears of it.
        fault.injected();
        client.destroy();
        upstream.destroy();
        return;
      }
      if (fault?.kind === 'slow') {
        upstream.pause();
        setTimeout(() => {
          answering = undefined;
          fault.injected();
          client.write(chunk);
          upstream.resume();
        }, fault.delayMs ?? 0);
        return;
      }
      client.write(chunk);
    });
  }
}

/** A token of a ServiceAccount from the TokenRequest API (what a pod's projected token is), valid for an hour. */
export async function serviceAccountToken(api: { create<T>(path: string, body: unknown): Promise<T> }, namespace: string, account: string): Promise<string> {
  const review = await api.create<{ status: { token: string } }>(`/api/v1/namespaces/${namespace}/serviceaccounts/${account}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600 },
  });
  return review.status.token;
}
