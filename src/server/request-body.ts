/**
 * Reading a request body with the limit applied before and while reading: a declared
 * `Content-Length` over the limit is refused before a byte of the body is read (and before
 * `100 Continue`), a chunked body is cut off the moment it passes the limit. The body lands in one
 * buffer that owns its memory, so it can be handed to a decision worker without a copy.
 */
import type { IncomingMessage } from 'node:http';
import { HttpError } from './http-error';

/** How fast a body must arrive: all of it within `graceMs` plus its size at `bytesPerSecond`. */
export interface BodyPace {
  bytesPerSecond: number;
  graceMs: number;
}

/**
 * The pace of a body read in a large slot. The API server writes a review it holds in memory in one go:
 * even over a 10 Mbit/s link a 3 MiB review takes 2.5 s, within the 4 s this allows it. A client
 * sending one byte a second keeps a slot for just over a second.
 */
export const LARGE_BODY_PACE: BodyPace = { bytesPerSecond: 1024 * 1024, graceMs: 1000 };

/** A body that arrived slower than its pace: answered 408, and its connection closed. */
export class SlowBodyError extends HttpError {
  constructor(received: number, expected: number, elapsedMs: number, pace: BodyPace) {
    super(
      408,
      `request body arrived too slowly: ${received} of ${expected} bytes in ${(elapsedMs / 1000).toFixed(1)} s; ` +
        `a body over 64 KiB must arrive at ${pace.bytesPerSecond / 1024} KiB/s (after ${pace.graceMs} ms)`,
    );
  }
}

export function tooLarge(limit: number, length?: number): HttpError {
  return new HttpError(413, `request body of ${length ?? 'more than the limit'} bytes exceeds the ${limit} byte limit`);
}

/**
 * Refuses, without reading anything, a body the headers already say is too large or encoded. Returns
 * the declared length (undefined for a chunked body).
 */
export function checkDeclaredBody(req: IncomingMessage, limit: number): number | undefined {
  const encoding = req.headers['content-encoding']?.trim().toLowerCase();
  if (encoding !== undefined && encoding !== '' && encoding !== 'identity') {
    throw new HttpError(415, 'Content-Encoding is not supported; send the body uncompressed');
  }
  const declared = declaredLength(req);
  if (declared !== undefined && declared > limit) throw tooLarge(limit, declared);
  return declared;
}

/** Node's parser has already refused a malformed or repeated Content-Length. */
function declaredLength(req: IncomingMessage): number | undefined {
  const header = req.headers['content-length'];
  return header === undefined ? undefined : Number(header);
}

/**
 * The whole body, at most `limit` bytes; rejects with a 413 as soon as more arrives, and with a 408 when
 * `pace` is given and the body is not all there in time.
 */
export function readBody(req: IncomingMessage, limit: number, pace?: BodyPace): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // A client that left while its request waited for a slot: its 'close' has already been emitted and
    // no 'data' or 'end' will ever come, so waiting for them would hold the slot for good.
    if (req.destroyed || req.socket.destroyed) {
      reject(new HttpError(400, 'request body was aborted by the client'));
      return;
    }
    const declared = declaredLength(req);
    // Exactly the declared size, outside Node's shared pool: the buffer owns its ArrayBuffer.
    let body = Buffer.allocUnsafeSlow(declared ?? Math.min(limit, 64 * 1024));
    let length = 0;
    const startedAt = performance.now();
    let paceTimer: NodeJS.Timeout | undefined;
    let settled = false;
    const finish = (outcome: () => void) => {
      settled = true;
      clearTimeout(paceTimer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      outcome();
    };
    if (pace) {
      const expected = declared ?? limit;
      paceTimer = setTimeout(
        // What arrived while this process was busy is read first (the poll phase runs before
        // setImmediate): a body is judged on what the client sent, not on how busy the server was.
        () => setImmediate(() => {
          if (!settled) finish(() => reject(new SlowBodyError(length, expected, performance.now() - startedAt, pace)));
        }),
        pace.graceMs + (1000 * expected) / pace.bytesPerSecond,
      );
    }
    const onData = (chunk: Buffer) => {
      if (length + chunk.length > limit) return finish(() => reject(tooLarge(limit)));
      if (length + chunk.length > body.length) {
        // Chunked: grow geometrically, never past the limit.
        const grown = Buffer.allocUnsafeSlow(Math.min(limit, Math.max(body.length * 2, length + chunk.length)));
        body.copy(grown, 0, 0, length);
        body = grown;
      }
      chunk.copy(body, length);
      length += chunk.length;
    };
    const onEnd = () =>
      finish(() => {
        if (length === body.length) return resolve(body);
        const exact = Buffer.allocUnsafeSlow(length);
        body.copy(exact, 0, 0, length);
        resolve(exact);
      });
    const onClose = () => finish(() => reject(new HttpError(400, 'request body was aborted by the client')));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('close', onClose);
  });
}
