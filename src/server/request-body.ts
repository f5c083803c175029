/**
 * Reading a request body with the limit applied before and while reading: a declared
 * `Content-Length` over the limit is refused before a byte of the body is read (and before
 * `100 Continue`), a chunked body is cut off the moment it passes the limit. The body lands in one
 * buffer that owns its memory, so it can be handed to a decision worker without a copy.
 */
import type { IncomingMessage } from 'node:http';
import { HttpError } from './http-error';

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

/** The whole body, at most `limit` bytes; rejects with a 413 as soon as more arrives. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
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
    const finish = (outcome: () => void) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      outcome();
    };
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
