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
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type * as k8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import type { Logger } from 'pino';
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

export async function startReporter(settings: ReporterSettings): Promise<RunningReporter> {
  const { logger } = settings;
  const metrics = new ReporterMetrics();
  const api = await kubernetesReporterApi(settings.kubeConfig, settings.requestTimeoutMs);
  /** Set once the port is bound (below), with the pod watch. */
  let scope: AdmissionScopeWatch | undefined;
  const reporter = new DrainReporter({
    api,
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

  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok\n');
  });
  // Ready once the first lists are in and while the watches work: the Service then only lists
  // replicas whose metrics mean something.
  app.get('/readyz', (_req, res) => {
    const ready = !shuttingDown && watch !== undefined && watch.synced && watch.healthy && scope !== undefined && scope.synced && scope.healthy;
    res.status(ready ? 200 : 503).type('text/plain').send(ready ? 'ready\n' : 'not ready\n');
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  app.use((req, res) => {
    res.status(404).json({ error: `no route for ${req.method} ${req.path}; endpoints: GET /metrics, /healthz, /readyz` });
  });
  // The port first: a port that cannot be bound fails the start with nothing else running yet (a watch
  // started before would keep the process alive after it reported the failure).
  const server: Server = createServer(app);
  server.listen(settings.port, settings.host);
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  scope = await watchAdmissionScope(settings.kubeConfig, {
    webhookConfigName: settings.webhookConfigName,
    logger,
    requestTimeoutMs: settings.requestTimeoutMs,
    ...(settings.retryDelayMs !== undefined ? { restartDelayMs: settings.retryDelayMs } : {}),
  }).catch((error: unknown) => {
    server.close();
    throw error;
  });
  const podWatch = await watchProtectedPods(settings.kubeConfig, {
    handlers: { seen: (pod) => reporter.observe(pod), gone: (pod, how) => reporter.gone(pod, how) },
    logger,
    requestTimeoutMs: settings.requestTimeoutMs,
    ...(settings.retryDelayMs !== undefined ? { restartDelayMs: settings.retryDelayMs } : {}),
  }).catch(async (error: unknown) => {
    await scope?.stop();
    server.close();
    throw error;
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
      const closed = once(server, 'close');
      server.close();
      server.closeAllConnections();
      await closed;
    },
  };
}
