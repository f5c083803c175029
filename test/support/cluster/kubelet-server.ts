/**
 * The kubelet's own HTTPS API, as far as the tests use it: `GET /containerLogs/{namespace}/{pod}/{container}`,
 * which kube-apiserver calls for a pod's `log` subresource (`kubectl logs`, `helm test --logs`). As a
 * kubelet's, it listens on the node's address and the port the Node's `daemonEndpoints.kubeletEndpoint`
 * names, serves a certificate of the cluster's CA (kube-apiserver verifies it with
 * `--kubelet-certificate-authority`), and answers only kube-apiserver, known by its client certificate
 * (`--kubelet-client-certificate`). A real kubelet asks the API server whether that user may reach
 * `nodes/proxy` (a SubjectAccessReview); here only kube-apiserver's own user is let in.
 *
 * One server plays every node of the stand-in: they share the host's address. Logs are what the
 * container wrote to its stdout and stderr, whole or the last `tailLines`/`limitBytes`; `follow` and
 * `previous` are refused with 400 (nothing in the tests needs them).
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { TLSSocket } from 'node:tls';

export interface KubeletServing {
  host: string;
  port: number;
  /** PEM of the serving certificate and its key. */
  cert: string;
  key: string;
  /** PEM of the CA that signs kube-apiserver's client certificate. */
  clientCa: string;
  /** The user (certificate CN) kube-apiserver calls the kubelet as. */
  apiServerUser: string;
}

/** Where a container's log is: its file, or why there is none. */
export type LogLookup = { file: string } | { status: 400 | 404; message: string };

export async function startKubeletServer(serving: KubeletServing, findLog: (namespace: string, pod: string, container: string) => LogLookup): Promise<Server> {
  const server = createServer({ cert: serving.cert, key: serving.key, ca: serving.clientCa, requestCert: true, rejectUnauthorized: true }, (request, response) => {
    const answer = (status: number, text: string) => {
      response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
      response.end(text);
    };
    const peer = (request.socket as TLSSocket).getPeerCertificate();
    if (peer.subject?.CN !== serving.apiServerUser) return answer(403, `Forbidden (user=${peer.subject?.CN ?? 'anonymous'}, verb=get, resource=nodes, subresource=proxy)`);
    const url = new URL(request.url ?? '/', 'https://kubelet');
    const match = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    if (request.method !== 'GET' || !match) return answer(404, '404 page not found');
    if (url.searchParams.get('follow') === 'true' || url.searchParams.get('previous') === 'true') {
      return answer(400, 'the test kubelet serves the current log of a container only (no follow, no previous)');
    }
    const [namespace, pod, container] = match.slice(1).map(decodeURIComponent) as [string, string, string];
    const found = findLog(namespace, pod, container);
    if ('status' in found) return answer(found.status, found.message);
    let text = existsSync(found.file) ? readFileSync(found.file, 'utf8') : '';
    const tailLines = url.searchParams.get('tailLines');
    if (tailLines !== null) {
      const lines = text.split(/(?<=\n)/);
      text = lines.slice(Math.max(0, lines.length - Number(tailLines))).join('');
    }
    const limitBytes = url.searchParams.get('limitBytes');
    if (limitBytes !== null) text = Buffer.from(text).subarray(0, Number(limitBytes)).toString('utf8');
    answer(200, text);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(serving.port, serving.host, () => resolve());
  });
  return server;
}
