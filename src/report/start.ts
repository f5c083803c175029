/**
 * `drainguard report` wired up: the pod watch feeds the reporter, the reporter writes Events and
 * counts metrics, and a plain HTTP server answers /metrics, /healthz and /readyz.
 *
 * Plain HTTP, not HTTPS: the reporter serves nothing but its own metrics and probes, reads no request
 * body and has no client to authenticate. A certificate it generated itself would give Prometheus
 * nothing to verify (the webhook's ServiceMonitor has to skip verification for the same reason), so it
 * would protect against nobody who can reach the pod network; the chart's NetworkPolicy limits who can
 * reach the port instead.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type * as k8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import type { Logger } from 'pino';
import { KubeApiClient } from '../kube-api/client';
import { watchAdmissionScope, type AdmissionScopeWatch } from './admission-scope';
import type { Reporter } from './drain-event';
import { kubernetesReporterApi, watchProtectedPods, type PodWatch } from './kube';
import { ReporterMetrics } from './metrics';
import { DrainReporter } from './reporter';

export interface ReporterSettings {
  kubeConfig: k8s.KubeConfig;
  host: string;
  port: number;
  logger: Logger;
  reporter: Reporter;
  /** drainguard's MutatingWebhookConfiguration: only pods of namespaces its namespaceSelector selects are reported. */
  webhookConfigName: string;
  maxReportAgeMs: number;
  requestTimeoutMs: number;
  /** Tests shorten the retry and restart delays. */
  retryDelayMs?: number;
}

export interface RunningReporter {
  /** The port /metrics is served on (the one given, or the one picked for 0). */
  port: number;
  reporter: DrainReporter;
  metrics: ReporterMetrics;
  watch: PodWatch;
  /** Resolves once the watch has delivered every change up to `resourceVersion` and every report from it is done. */
  caughtUp(resourceVersion: number): Promise<void>;
  /** Stops watching and reporting, then closes the HTTP server. */
  shutdown(): Promise<void>;
}

/**
 * The request's path as express routes it (case-insensitive, one trailing slash allowed, the query
 * ignored), for the three GET routes of a server that needs nothing else of express.
 */
function routeOf(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const end = url.search(/[?#]/);
  const path = (end === -1 ? url : url.slice(0, end)).toLowerCase();
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

export async function startReporter(settings: ReporterSettings): Promise<RunningReporter> {
  const { logger } = settings;
  const metrics = new ReporterMetrics();
  const client = new KubeApiClient(settings.kubeConfig, settings.requestTimeoutMs);
  /** Set once the port is bound (below), with the pod watch. */
  let scope: AdmissionScopeWatch | undefined;
  const reporter = new DrainReporter({
    api: kubernetesReporterApi(client),
    scope: {
      admits: (namespace) => scope!.admits(namespace),
    },
    metrics,
    logger,
    reporter: settings.reporter,
    maxReportAgeMs: settings.maxReportAgeMs,
    ...(settings.retryDelayMs !== undefined ? { retryDelayMs: settings.retryDelayMs } : {}),
  });
  let shuttingDown = false;
  /** Set once the port is bound (below): until then /readyz says not ready. */
  let watch: PodWatch | undefined;

  const answer = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const route = req.method === 'GET' || req.method === 'HEAD' ? routeOf(req) : undefined;
    if (route === '/healthz') return send(res, 200, 'text/plain; charset=utf-8', 'ok\n');
    if (route === '/readyz') {
      // Ready once the first lists are in and while the watches work: the Service then only lists
      // replicas whose metrics mean something.
      const ready = !shuttingDown && watch !== undefined && watch.synced && watch.healthy && scope !== undefined && scope.synced && scope.healthy;
      return send(res, ready ? 200 : 503, 'text/plain; charset=utf-8', ready ? 'ready\n' : 'not ready\n');
    }
    if (route === '/metrics') return send(res, 200, metrics.registry.contentType, await metrics.registry.metrics());
    const path = (req.url ?? '/').split(/[?#]/)[0];
    send(res, 404, 'application/json; charset=utf-8', JSON.stringify({ error: `no route for ${req.method} ${path}; endpoints: GET /metrics, /healthz, /readyz` }));
  };
  // Plain node:http: three GET routes need nothing express adds (it would be a few MiB of the
  // reporter's memory for it).
  const server: Server = createServer((req, res) => {
    answer(req, res).catch((error: unknown) => {
      logger.error({ err: error, path: req.url }, 'internal error');
      if (!res.headersSent) send(res, 500, 'application/json; charset=utf-8', JSON.stringify({ error: 'internal error; see the reporter log' }));
      else res.destroy();
    });
  });
  // The port first: a port that cannot be bound fails the start with nothing else running yet (a watch
  // started before would keep the process alive after it reported the failure).
  server.listen(settings.port, settings.host);
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  scope = watchAdmissionScope(client, {
    webhookConfigName: settings.webhookConfigName,
    logger,
    requestTimeoutMs: settings.requestTimeoutMs,
    ...(settings.retryDelayMs !== undefined ? { restartDelayMs: settings.retryDelayMs } : {}),
  });
  const podWatch = watchProtectedPods(client, {
    handlers: { seen: (pod) => reporter.observe(pod), deleted: (pod) => reporter.deleted(pod), vanished: (pod) => reporter.vanished(pod) },
    logger,
    requestTimeoutMs: settings.requestTimeoutMs,
    ...(settings.retryDelayMs !== undefined ? { restartDelayMs: settings.retryDelayMs } : {}),
  });
  watch = podWatch;
  metrics.observe({ watchedPods: () => podWatch.watchedPods, pendingReports: () => reporter.pending });
  logger.info({ host: settings.host, port, instance: settings.reporter.instance }, 'reporter started');

  return {
    port,
    reporter,
    metrics,
    watch: podWatch,
    async caughtUp(resourceVersion) {
      await podWatch.reached(resourceVersion);
      await reporter.idle();
    },
    async shutdown() {
      shuttingDown = true;
      await podWatch.stop();
      await scope?.stop();
      reporter.stop();
      client.close();
      const closed = once(server, 'close');
      server.close();
      server.closeAllConnections();
      await closed;
    },
  };
}
