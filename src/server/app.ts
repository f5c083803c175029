/**
 * The HTTP surface of `drainguard serve`: a thin adapter that turns HTTP into calls of the pure
 * admission decision (run by the decision workers) and back. Every client mistake gets a 4xx with a
 * JSON `{ "error": message }`; express's default handler (HTML, 500s) is never reached.
 */
import express, { type ErrorRequestHandler, type Request, type RequestHandler, type Response } from 'express';
import type { Logger } from 'pino';
import { HttpError } from './http-error';
import type { AdmissionLimiter } from './admission-limiter';
import type { Decided } from './decision-pool';
import type { WebhookMetrics } from './metrics';
import { checkDeclaredBody, readBody } from './request-body';
import { takeTurn } from './connection-turns';

export interface WebhookAppOptions {
  metrics: WebhookMetrics;
  logger: Logger;
  /** Ready: a certificate is loaded and shutdown has not begun. */
  isReady: () => boolean;
  /** Shutting down: answer with `Connection: close` so clients move to another replica. */
  isDraining: () => boolean;
  /** Largest accepted body. */
  bodyLimitBytes: number;
  limiter: AdmissionLimiter;
  /** Decides on one body (a decision worker); the body's memory is handed over. */
  decide: (body: Buffer) => Promise<Decided>;
}

/** Seconds a refused client is told to wait; the API server's client waits this long, then retries. */
export const RETRY_AFTER_SECONDS = 1;

export function createWebhookApp(options: WebhookAppOptions): express.Express {
  const { metrics, logger, isReady, isDraining, limiter, decide, bodyLimitBytes } = options;
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

  app.post('/mutate', requireJsonContentType, async (req: Request, res: Response, next) => {
    let release: (() => void) | undefined;
    const turn = takeTurn(req.socket);
    try {
      // Everything the headers can tell is checked before waiting, reading or `100 Continue`.
      checkDeclaredBody(req, bodyLimitBytes);
      await turn.ready;
      const slot = limiter.acquire();
      if (slot === undefined) {
        throw new HttpError(429, `too many admissions in progress (${limiter.concurrency} running, ${limiter.queueLimit} waiting); retry`, {
          'Retry-After': String(RETRY_AFTER_SECONDS),
        });
      }
      metrics.setAdmissionLoad(limiter);
      release = await slot;
      metrics.setAdmissionLoad(limiter);
      if (req.headers.expect?.toLowerCase() === '100-continue') res.writeContinue();
      const body = await readBody(req, bodyLimitBytes);
      const started = process.hrtime.bigint();
      logger.debug({ bytes: body.length }, 'admission received; deciding');
      const decided = await decide(body);
      sendJson(res, decided.httpStatus, decided.text);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      logDecision(decided, seconds);
    } catch (error) {
      next(error);
    } finally {
      release?.();
      turn.done();
      metrics.setAdmissionLoad(limiter);
    }
  });

  function logDecision(decided: Decided, seconds: number): void {
    const { outcome } = decided;
    if (outcome === undefined) {
      // Refused before a decision: not JSON, too deep, or the worker failed before reading the uid.
      metrics.recordRejected();
      const fields = { status: decided.httpStatus, path: '/mutate', error: errorOf(decided.text) };
      if (decided.failure) logger.error(fields, 'decision worker failed before the review was read');
      else logger.warn(fields, 'request rejected');
      return;
    }
    metrics.recordAdmission(outcome, seconds);
    const fields = { ...outcome, durationMs: Math.round(seconds * 1e6) / 1e3 };
    if (outcome.result === 'error') logger.error(fields, 'drainguard failed on this pod; admitted it unchanged');
    else if (outcome.result === 'invalid') logger.warn(fields, 'malformed AdmissionReview');
    else logger.info(fields, 'admission');
  }

  app.all('/mutate', (req) => {
    throw new HttpError(405, `method ${req.method} not allowed on /mutate; use POST`, { Allow: 'POST' });
  });

  app.use((req) => {
    throw new HttpError(404, `no route for ${req.method} ${req.path}; endpoints: POST /mutate, GET /healthz, /readyz, /metrics`);
  });
  app.use(errorHandler(metrics, logger));
  return app;
}

function errorOf(text: string): string {
  try {
    return String((JSON.parse(text) as { error?: unknown }).error);
  } catch {
    return text.slice(0, 200);
  }
}

/**
 * What `res.status(status).json(body)` sends for a POST (same status, `Content-Type` and
 * `Content-Length`, no ETag since it is disabled, never a 304 since only GET/HEAD can be fresh), written
 * directly: express's version looks up four app settings, re-parses the Content-Type it just set to add
 * the charset and copies the body into a Buffer, on every admission.
 */
function sendJson(res: Response, status: number, text: string): void {
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

function errorHandler(metrics: WebhookMetrics, logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    const { status, message, headers } = describeError(error);
    if (req.path === '/mutate') {
      if (status === 429) metrics.recordThrottled();
      else metrics.recordRejected();
    }
    if (status >= 500) logger.error({ err: error, path: req.path }, 'internal error');
    else if (status === 429) logger.debug({ status, path: req.path }, 'request throttled');
    else logger.warn({ status, path: req.path, error: message }, 'request rejected');
    if (res.headersSent) return;
    // A body left unread (refused before or while reading it) is not read to its end: the connection
    // closes after the answer, so nothing of that body is mistaken for the next request.
    if (!req.complete) res.setHeader('Connection', 'close');
    res.set(headers).status(status).json({ error: message });
  };
}

function describeError(error: unknown): { status: number; message: string; headers: Record<string, string> } {
  if (error instanceof HttpError) return { status: error.status, message: error.message, headers: error.headers };
  const { status } = (error ?? {}) as { status?: unknown };
  if (typeof status === 'number' && status >= 400 && status < 500) return { status, message: String((error as Error).message), headers: {} };
  return { status: 500, message: 'internal error; see the webhook log', headers: {} };
}
