/**
 * The HTTP surface of `drainguard serve` besides admissions: health, readiness, metrics, and a JSON
 * 4xx for everything else (another method on `/mutate` is 405, an unknown path 404); express's default
 * handler (HTML, 500s) is never reached. Admissions (`POST /mutate`) are handled by ./admission-handler,
 * which the HTTPS server calls directly.
 */
import express, { type ErrorRequestHandler } from 'express';
import type { Logger } from 'pino';
import { ADMISSION_PATH, answerError } from './admission-handler';
import { HttpError } from './http-error';
import type { WebhookMetrics } from './metrics';

export interface WebhookAppOptions {
  metrics: WebhookMetrics;
  logger: Logger;
  /** Ready: a certificate is loaded and shutdown has not begun. */
  isReady: () => boolean;
  /** Shutting down: answer with `Connection: close` so clients move to another replica. */
  isDraining: () => boolean;
}

export function createWebhookApp(options: WebhookAppOptions): express.Express {
  const { metrics, logger, isReady, isDraining } = options;
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');

  app.use((_req, res, next) => {
    if (isDraining()) res.setHeader('Connection', 'close');
    next();
  });

  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok\n');
  });
  app.get('/readyz', (_req, res) => {
    const ready = isReady();
    res.status(ready ? 200 : 503).type('text/plain').send(ready ? 'ready\n' : 'not ready\n');
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  app.all(ADMISSION_PATH, (req) => {
    throw new HttpError(405, `method ${req.method} not allowed on ${ADMISSION_PATH}; use POST`, { Allow: 'POST' });
  });

  app.use((req) => {
    throw new HttpError(404, `no route for ${req.method} ${req.path}; endpoints: POST /mutate, GET /healthz, /readyz, /metrics`);
  });
  app.use(errorHandler(metrics, logger));
  return app;
}

function errorHandler(metrics: WebhookMetrics, logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    answerError(req, res, logger, req.path, error);
    // Only another method reaches express on this path (405): POST goes to the admission handler.
    if (req.path === ADMISSION_PATH) metrics.recordRejected();
  };
}
