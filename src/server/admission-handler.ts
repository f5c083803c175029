/**
 * `POST /mutate`, on Node's own request and response objects: the headers checked, a turn on the
 * connection and an admission slot taken, the body read within its limit, the review decided, the
 * answer written, logged and counted. Every client mistake is a 4xx with a JSON `{ "error": message }`.
 *
 * The HTTPS server hands admissions straight to this handler and everything else to the express app
 * (./app): express's routing, request and response decoration cost about 10 µs of CPU per admission
 * (docs/benchmarks.md), for nothing an admission uses. Which requests are admissions is decided by
 * `isAdmissionRequest`, with express's own matching rules, so no request reaches a different place.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { AdmissionLimiter, AdmissionSlots } from './admission-limiter';
import { takeTurn } from './connection-turns';
import type { Decided } from './decision-pool';
import { HttpError } from './http-error';
import type { WebhookMetrics } from './metrics';
import { checkDeclaredBody, readBody, SlowBodyError, LARGE_BODY_PACE } from './request-body';
import { sourceOf } from './connection-guard';

export interface AdmissionHandlerOptions {
  metrics: WebhookMetrics;
  logger: Logger;
  /** Shutting down: answer with `Connection: close` so clients move to another replica. */
  isDraining: () => boolean;
  /** Largest accepted body. */
  bodyLimitBytes: number;
  /** The admission slots: a small review takes one of many, any other one of the few large ones. */
  slots: AdmissionSlots;
  /** Decides on one body (inline or in a decision worker); the body's memory is handed over. */
  decide: (body: Buffer) => Promise<Decided>;
  /** The request's body has been read (the connection guard then counts its connection as answering). */
  onBodyReceived: (req: IncomingMessage) => void;
}

/** Seconds a refused client is told to wait; the API server's client waits this long, then retries. */
export const RETRY_AFTER_SECONDS = 1;

export const ADMISSION_PATH = '/mutate';

/**
 * A `POST` to `/mutate`, as express routes `app.post('/mutate')`: case-insensitive, with or without one
 * trailing slash, with any query (kube-apiserver adds `?timeout=10s`) or fragment after it.
 */
export function isAdmissionRequest(req: IncomingMessage): boolean {
  if (req.method !== 'POST') return false;
  const url = req.url ?? '';
  const end = url.search(/[?#]/);
  const path = end === -1 ? url : url.slice(0, end);
  if (path === ADMISSION_PATH) return true;
  const trimmed = path.endsWith('/') ? path.slice(0, -1) : path;
  return trimmed.length === ADMISSION_PATH.length && trimmed.toLowerCase() === ADMISSION_PATH;
}

/** A JSON answer with its `Content-Length`, as express's `res.status(status).json(body)` sends it. */
export function sendJson(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.statusCode = status;
  for (const name in headers) res.setHeader(name, headers[name] as string);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** The status, message and headers a failure is answered with: a client error, or a 500 that names nothing. */
export function describeError(error: unknown): { status: number; message: string; headers: Record<string, string> } {
  if (error instanceof HttpError) return { status: error.status, message: error.message, headers: error.headers };
  const { status } = (error ?? {}) as { status?: unknown };
  if (typeof status === 'number' && status >= 400 && status < 500) return { status, message: String((error as Error).message), headers: {} };
  return { status: 500, message: 'internal error; see the webhook log', headers: {} };
}

/**
 * Answers a request that failed with the JSON error; logged by severity. A body left unread (refused
 * before or while reading it) is not read to its end: the connection closes after the answer, so
 * nothing of that body is mistaken for the next request.
 */
export function answerError(req: IncomingMessage, res: ServerResponse, logger: Logger, path: string, error: unknown): number {
  const { status, message, headers } = describeError(error);
  if (status >= 500) logger.error({ err: error, path }, 'internal error');
  else if (status === 429) logger.debug({ status, path }, 'request throttled');
  else logger.warn({ status, path, error: message }, 'request rejected');
  if (res.headersSent) return status;
  if (!req.complete) res.setHeader('Connection', 'close');
  sendJson(res, status, JSON.stringify({ error: message }), headers);
  return status;
}

function checkContentType(req: IncomingMessage): void {
  const header = req.headers['content-type'];
  if (!header) throw new HttpError(415, 'Content-Type header is missing; expected application/json');
  // The common case, exactly what kube-apiserver sends, without splitting anything.
  if (header === 'application/json') return;
  const [mediaType = '', ...parameters] = header.split(';').map((part) => part.trim().toLowerCase());
  if (mediaType !== 'application/json') {
    throw new HttpError(415, `Content-Type must be application/json; got ${JSON.stringify(header.slice(0, 100))}`);
  }
  const charset = parameters.find((p) => p.startsWith('charset='))?.slice('charset='.length).replace(/"/g, '');
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new HttpError(415, `charset ${JSON.stringify(charset.slice(0, 40))} is not supported; use utf-8`);
  }
}

function errorOf(text: string): string {
  try {
    return String((JSON.parse(text) as { error?: unknown }).error);
  } catch {
    return text.slice(0, 200);
  }
}

export function createAdmissionHandler(options: AdmissionHandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { metrics, logger, isDraining, slots, decide, bodyLimitBytes, onBodyReceived } = options;

  /** A slot in `limiter` for this request's source, or the 429 that refuses it. */
  async function slotIn(limiter: AdmissionLimiter, req: IncomingMessage): Promise<() => void> {
    const release = await limiter.acquire(sourceOf(req.socket));
    if (release === undefined) {
      throw new HttpError(429, `too many admissions in progress (${limiter.concurrency} running, ${limiter.queueLimit} waiting); retry`, {
        'Retry-After': String(RETRY_AFTER_SECONDS),
      });
    }
    return release;
  }

  function readFully(req: IncomingMessage, res: ServerResponse, pace: typeof LARGE_BODY_PACE | undefined): Promise<Buffer> {
    if (req.headers.expect?.toLowerCase() === '100-continue') res.writeContinue();
    return readBody(req, bodyLimitBytes, pace).then((body) => {
      onBodyReceived(req);
      return body;
    });
  }

  function logDecision(decided: Decided, seconds: number): void {
    const { outcome } = decided;
    if (outcome === undefined) {
      // Refused before a decision: not JSON, too deep, or the worker failed before reading the uid.
      metrics.recordRejected();
      const fields = { status: decided.httpStatus, path: ADMISSION_PATH, error: errorOf(decided.text) };
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

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (isDraining()) res.setHeader('Connection', 'close');
    let release: (() => void) | undefined;
    const turn = takeTurn(req.socket);
    try {
      // Everything the headers can tell is checked before waiting, reading or `100 Continue`.
      checkContentType(req);
      const declared = checkDeclaredBody(req, bodyLimitBytes);
      await turn.ready;
      const limiter = slots.lineFor(declared);
      let body: Buffer;
      if (limiter === slots.small) {
        // A small body is read before it takes a slot, so a client sending it slowly holds no slot:
        // only its connection, which the connection guard bounds and shares between sources.
        body = await readFully(req, res, undefined);
        release = await slotIn(limiter, req);
        // Its client left while it waited: nobody is there to answer.
        if (req.socket.destroyed) return;
      } else {
        // A large body is read only in its slot (memory: slots × body limit), and must arrive at the
        // minimum pace, so a slow client cannot keep the slot from others.
        release = await slotIn(limiter, req);
        body = await readFully(req, res, LARGE_BODY_PACE);
      }
      const started = process.hrtime.bigint();
      logger.debug({ bytes: body.length }, 'admission received; deciding');
      const decided = await decide(body);
      sendJson(res, decided.httpStatus, decided.text);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      logDecision(decided, seconds);
    } catch (error) {
      if (error instanceof SlowBodyError) metrics.recordSlowBody();
      if (answerError(req, res, logger, ADMISSION_PATH, error) === 429) metrics.recordThrottled();
      else metrics.recordRejected();
    } finally {
      release?.();
      turn.done();
    }
  }

  return (req, res) => {
    handle(req, res).catch((error: unknown) => logger.error({ err: error, path: ADMISSION_PATH }, 'internal error'));
  };
}
