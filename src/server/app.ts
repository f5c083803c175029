/**
 * The HTTP surface of `drainguard serve`: a thin adapter that turns HTTP into calls of the pure
 * admission decision and back. Every client mistake gets a 4xx with a JSON `{ "error": message }`;
 * express's default handler (HTML, 500s) is never reached.
 */
import express, { type ErrorRequestHandler, type Request, type RequestHandler, type Response } from 'express';
import type { Logger } from 'pino';
import type { Config } from '../config/types';
import { decideAdmission, type MutateFunction } from '../admission/decide';
import { HttpError } from './http-error';
import { parseJsonBody } from './json-body';
import type { WebhookMetrics } from './metrics';

export interface WebhookAppOptions {
  config: Config;
  metrics: WebhookMetrics;
  logger: Logger;
  /** Ready: a certificate is loaded and shutdown has not begun. */
  isReady: () => boolean;
  /** Shutting down: answer with `Connection: close` so clients move to another replica. */
  isDraining: () => boolean;
  /** Largest accepted body. An AdmissionReview for CREATE carries one Pod (etcd caps objects at 1.5 MiB). */
  bodyLimitBytes?: number;
  /** The pure core; tests inject a failing one to exercise drainguard's own-bug path. */
  core?: MutateFunction;
}

export const DEFAULT_BODY_LIMIT_BYTES = 3 * 1024 * 1024;

export function createWebhookApp(options: WebhookAppOptions): express.Express {
  const { config, metrics, logger, isReady, isDraining, core } = options;
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

  app.post(
    '/mutate',
    requireJsonContentType,
    express.raw({ type: () => true, limit: options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES, inflate: false }),
    (req: Request, res: Response) => {
      const started = process.hrtime.bigint();
      const review = parseJsonBody(req.body);
      const decision = core ? decideAdmission(review, config, core) : decideAdmission(review, config);
      sendJson(res, decision.httpStatus, decision.body);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.recordAdmission(decision.outcome, seconds);
      const { outcome } = decision;
      const fields = { ...outcome, durationMs: Math.round(seconds * 1e6) / 1e3 };
      if (outcome.result === 'error') logger.error(fields, 'drainguard failed on this pod; admitted it unchanged');
      else if (outcome.result === 'invalid') logger.warn(fields, 'malformed AdmissionReview');
      else logger.info(fields, 'admission');
    },
  );
  app.all('/mutate', (req) => {
    throw new HttpError(405, `method ${req.method} not allowed on /mutate; use POST`, { Allow: 'POST' });
  });

  app.use((req) => {
    throw new HttpError(404, `no route for ${req.method} ${req.path}; endpoints: POST /mutate, GET /healthz, /readyz, /metrics`);
  });
  app.use(errorHandler(metrics, logger));
  return app;
}

/**
 * What `res.status(status).json(body)` sends for a POST (same status, `Content-Type` and
 * `Content-Length`, no ETag since it is disabled, never a 304 since only GET/HEAD can be fresh), written
 * directly: express's version looks up four app settings, re-parses the Content-Type it just set to add
 * the charset and copies the body into a Buffer, on every admission.
 */
function sendJson(res: Response, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

const requireJsonContentType: RequestHandler = (req, _res, next) => {
  const header = req.headers['content-type'];
  if (!header) throw new HttpError(415, 'Content-Type header is missing; expected application/json');
  const [mediaType = '', ...parameters] = header.split(';').map((part) => part.trim().toLowerCase());
  if (mediaType !== 'application/json') {
    throw new HttpError(415, `Content-Type must be application/json; got ${JSON.stringify(header.slice(0, 100))}`);
  }
  const charset = parameters.find((p) => p.startsWith('charset='))?.slice('charset='.length).replace(/"/g, '');
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new HttpError(415, `charset ${JSON.stringify(charset.slice(0, 40))} is not supported; use utf-8`);
  }
  next();
};

/** body-parser's error types, in words a caller can act on. */
const BODY_ERRORS: Record<string, (error: { limit?: number; length?: number }) => string> = {
  'entity.too.large': (e) => `request body of ${e.length ?? 'more than the limit'} bytes exceeds the ${e.limit} byte limit`,
  'request.size.invalid': () => 'request body is shorter than its Content-Length',
  'request.aborted': () => 'request body was aborted by the client',
  'encoding.unsupported': () => 'Content-Encoding is not supported; send the body uncompressed',
  'stream.encoding.set': () => 'request stream encoding is not supported',
};

function errorHandler(metrics: WebhookMetrics, logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    const { status, message, headers } = describeError(error);
    if (req.path === '/mutate') metrics.recordRejected();
    if (status >= 500) logger.error({ err: error, path: req.path }, 'internal error');
    else logger.warn({ status, path: req.path, error: message }, 'request rejected');
    if (res.headersSent) return;
    res.set(headers).status(status).json({ error: message });
  };
}

function describeError(error: unknown): { status: number; message: string; headers: Record<string, string> } {
  if (error instanceof HttpError) return { status: error.status, message: error.message, headers: error.headers };
  const { status, type } = (error ?? {}) as { status?: unknown; type?: unknown };
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const describe = typeof type === 'string' ? BODY_ERRORS[type] : undefined;
    const message = describe ? describe(error as { limit?: number; length?: number }) : String((error as Error).message);
    return { status, message, headers: {} };
  }
  return { status: 500, message: 'internal error; see the webhook log', headers: {} };
}
