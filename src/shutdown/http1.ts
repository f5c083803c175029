/**
 * A minimal HTTP/1.1 client for Envoy's admin API, shared by both platforms: one request per
 * connection (`Connection: close`), the answer's body streamed into a BodyReader as it arrives, so no
 * answer — however large, or endless — is ever held in memory.
 *
 * Why the failure kinds matter (docs/design.md, "The drain"): only a connection that is refused, whose
 * socket file is missing, or that is reset or closed before any byte of an answer means Envoy is
 * gone. A timeout, an answer the client cannot read (malformed, cut short, oversized headers) or any
 * other error means something is there, and the drain must go on.
 */
import type { Platform, SocketAddress } from './platform/platform';
import { fromCodeUnits, utf8Encode } from './platform/utf8';

/** Consumes an answer's body piece by piece. */
export interface BodyReader<T> {
  /** A piece of the body; returns false when it needs no more (the answer is settled by what it saw). */
  push(bytes: Uint8Array): boolean;
  /** The result, once the body ended or the reader stopped. */
  finish(): T;
}

export type HttpFailureKind = 'unreachable' | 'timeout' | 'failed';

export class HttpCallError extends Error {
  constructor(
    readonly kind: HttpFailureKind,
    message: string,
  ) {
    super(message);
  }
}

export interface HttpAnswer<T> {
  status: number;
  body: T;
}

/** errno names that mean nothing is listening any more. */
const GONE = new Set(['ECONNREFUSED', 'ENOENT', 'ECONNRESET', 'EPIPE']);
/** Status line plus headers (and, for chunked bodies, the trailers) may not exceed this. */
export const MAX_HEAD_BYTES = 64 * 1024;
/** A chunk-size line (hex size plus extensions). */
const MAX_CHUNK_LINE_BYTES = 4096;
/** Chunk sizes and lengths above 2^53 cannot be counted exactly: nothing legitimate is that large. */
const MAX_HEX_DIGITS = 13;

/** An answer that is not well-formed HTTP/1.1 (or exceeds the parser's limits). */
export class ProtocolError extends Error {}

const LF = 0x0a;
const CR = 0x0d;
/** An HTTP token (RFC 9110 §5.6.2): what a header name must be, in an answer read here or a request sent. */
export const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** `value` without the spaces and tabs around it (HTTP's optional whitespace; nothing else is trimmed). */
function withoutSpaceOrTab(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && (value[start] === ' ' || value[start] === '\t')) start++;
  while (end > start && (value[end - 1] === ' ' || value[end - 1] === '\t')) end--;
  return value.slice(start, end);
}

type Framing = { kind: 'none' } | { kind: 'length'; left: number } | { kind: 'chunked' } | { kind: 'close' };

/**
 * An HTTP/1.1 response, parsed incrementally from the bytes of one connection. `feed` returns true once
 * the answer is complete (or the reader stopped); `end` is called at end of file.
 */
export class ResponseParser<T> {
  status = 0;
  /**
   * The connection may carry another request once the answer is complete: HTTP/1.1 without
   * `Connection: close` (1.0 only with `keep-alive`), a body framed by its length or its chunks, read
   * to its end. (The drain program opens a connection per request; the lean Kubernetes client of
   * src/kube-api keeps them.)
   */
  keepAlive = true;
  /** How many bytes of the last `feed` belonged to this answer: all of them until it completed. */
  used = 0;
  private phase: 'head' | 'body' | 'chunk-size' | 'chunk-data' | 'chunk-end' | 'trailers' | 'done' = 'head';
  /** The head's bytes so far, when it spans more than one read (made then). */
  private head = new Uint8Array(0);
  private headLength = 0;
  private framing: Framing = { kind: 'close' };
  private chunkLeft = 0;
  private line: number[] = [];
  private trailerBytes = 0;

  constructor(private readonly reader: BodyReader<T>) {}

  get complete(): boolean {
    return this.phase === 'done';
  }

  /** Throws ProtocolError on anything that is not a well-formed answer. */
  feed(bytes: Uint8Array): boolean {
    let i = 0;
    while (i < bytes.length && this.phase !== 'done') {
      switch (this.phase) {
        case 'head':
          i = this.readHead(bytes, i);
          break;
        case 'body':
          i = this.readBody(bytes, i);
          break;
        case 'chunk-size':
          i = this.readLine(bytes, i, MAX_CHUNK_LINE_BYTES, (line) => this.chunkSize(line));
          break;
        case 'chunk-data': {
          const end = Math.min(bytes.length, i + this.chunkLeft);
          this.chunkLeft -= end - i;
          const more = this.deliver(bytes.subarray(i, end));
          i = end;
          if (more && this.chunkLeft === 0) this.phase = 'chunk-end';
          break;
        }
        case 'chunk-end':
          i = this.readLine(bytes, i, 2, (line) => {
            if (line !== '') throw new ProtocolError('chunk data longer than its size');
            this.phase = 'chunk-size';
          });
          break;
        case 'trailers':
          i = this.readLine(bytes, i, MAX_HEAD_BYTES, (line) => {
            if (line === '') this.phase = 'done';
            else if ((this.trailerBytes += line.length) > MAX_HEAD_BYTES) throw new ProtocolError('trailers too large');
          });
          break;
      }
    }
    this.used = i;
    return this.phase === 'done';
  }

  /** End of file from the server. Throws ProtocolError if the answer was cut short. */
  end(): void {
    if (this.phase === 'done') return;
    if (this.phase === 'body' && this.framing.kind === 'close') {
      this.phase = 'done';
      return;
    }
    throw new ProtocolError(this.phase === 'head' ? 'connection closed inside the headers' : 'connection closed before the end of the body');
  }

  private deliver(bytes: Uint8Array): boolean {
    if (bytes.length === 0) return true;
    if (this.reader.push(bytes)) return true;
    // The rest of the body is still on the connection.
    this.keepAlive = false;
    this.phase = 'done';
    return false;
  }

  private readHead(bytes: Uint8Array, start: number): number {
    const available = Math.min(bytes.length - start, MAX_HEAD_BYTES - this.headLength);
    // Only the head is kept: its end is looked for in the new bytes first (linear overall), so the
    // body that came in the same read is never copied.
    const end = headEnd(this.head, this.headLength, bytes, start, start + available);
    if (end >= 0 && this.headLength === 0) {
      // The whole head in this read (the usual case): read where it is.
      this.parseHead(fromCodeUnits(bytes.subarray(start, end)));
      return end;
    }
    const take = (end < 0 ? start + available : end) - start;
    if (this.headLength + take > this.head.length) {
      const grown = new Uint8Array(Math.min(MAX_HEAD_BYTES, Math.max(this.head.length * 2, 1024, this.headLength + take)));
      grown.set(this.head.subarray(0, this.headLength));
      this.head = grown;
    }
    this.head.set(bytes.subarray(start, start + take), this.headLength);
    this.headLength += take;
    if (end < 0) {
      if (this.headLength >= MAX_HEAD_BYTES) throw new ProtocolError(`headers larger than ${MAX_HEAD_BYTES} bytes`);
      return bytes.length;
    }
    this.parseHead(fromCodeUnits(this.head.subarray(0, this.headLength)));
    this.head = new Uint8Array(0);
    return end;
  }

  private parseHead(text: string): void {
    const lines = text.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
    while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    const statusLine = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: .*)?$/.exec(lines[0] ?? '');
    if (!statusLine) throw new ProtocolError(`not an HTTP/1.x status line: ${JSON.stringify((lines[0] ?? '').slice(0, 80))}`);
    this.status = Number(statusLine[2]);
    if (this.status < 200) throw new ProtocolError(`unexpected interim answer ${this.status}`);
    let transferEncoding: string | undefined;
    let contentLength: string | undefined;
    let connection = '';
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i] as string;
      const colon = line.indexOf(':');
      // A bare CR (not ending the line) is no part of a valid header line.
      if (colon <= 0 || !HTTP_TOKEN.test(line.slice(0, colon)) || line.includes('\r')) throw new ProtocolError(`malformed header line: ${JSON.stringify(line.slice(0, 80))}`);
      const name = line.slice(0, colon).toLowerCase();
      const value = withoutSpaceOrTab(line.slice(colon + 1));
      if (name === 'connection') connection += `${value.toLowerCase()},`;
      if (name === 'transfer-encoding') transferEncoding = transferEncoding === undefined ? value : `${transferEncoding}, ${value}`;
      if (name === 'content-length') {
        if (contentLength !== undefined && contentLength !== value) throw new ProtocolError('conflicting Content-Length headers');
        contentLength = value;
      }
    }
    if (this.status === 204 || this.status === 304) {
      this.framing = { kind: 'none' };
    } else if (transferEncoding !== undefined) {
      const codings = transferEncoding.split(',').map((c) => c.trim().toLowerCase());
      // Chunked last: its framing ends the body. Any other last coding: the body runs to the close.
      this.framing = codings[codings.length - 1] === 'chunked' ? { kind: 'chunked' } : { kind: 'close' };
    } else if (contentLength !== undefined) {
      if (!/^\d{1,15}$/.test(contentLength)) throw new ProtocolError(`invalid Content-Length ${JSON.stringify(contentLength.slice(0, 40))}`);
      this.framing = { kind: 'length', left: Number(contentLength) };
    }
    const tokens = connection.split(',').map((token) => token.trim());
    this.keepAlive = (statusLine[1] === '1' ? !tokens.includes('close') : tokens.includes('keep-alive')) && this.framing.kind !== 'close';
    switch (this.framing.kind) {
      case 'none':
        this.phase = 'done';
        break;
      case 'length':
        this.phase = this.framing.left === 0 ? 'done' : 'body';
        break;
      case 'chunked':
        this.phase = 'chunk-size';
        break;
      case 'close':
        this.phase = 'body';
        break;
    }
  }

  private readBody(bytes: Uint8Array, start: number): number {
    if (this.framing.kind === 'length') {
      const end = Math.min(bytes.length, start + this.framing.left);
      this.framing.left -= end - start;
      if (this.deliver(bytes.subarray(start, end)) && this.framing.left === 0) this.phase = 'done';
      return end;
    }
    this.deliver(bytes.subarray(start));
    return bytes.length;
  }

  /** Collects one line (LF or CRLF ended) of at most `max` bytes, then hands it over without its ending. */
  private readLine(bytes: Uint8Array, start: number, max: number, done: (line: string) => void): number {
    const newline = bytes.indexOf(LF, start);
    const end = newline < 0 ? bytes.length : newline;
    if (this.line.length + (end - start) > max + 1) throw new ProtocolError('line too long');
    for (let i = start; i < end; i++) this.line.push(bytes[i] as number);
    if (newline < 0) return bytes.length;
    if (this.line[this.line.length - 1] === CR) this.line.pop();
    const line = fromCodeUnits(this.line);
    this.line = [];
    done(line);
    return newline + 1;
  }

  private chunkSize(line: string): void {
    const size = /^([0-9A-Fa-f]+)[ \t]*(?:;.*)?$/.exec(line);
    if (!size || (size[1] as string).replace(/^0+(?=.)/, '').length > MAX_HEX_DIGITS) {
      throw new ProtocolError(`invalid chunk size line ${JSON.stringify(line.slice(0, 40))}`);
    }
    this.chunkLeft = parseInt(size[1] as string, 16);
    this.phase = this.chunkLeft === 0 ? 'trailers' : 'chunk-data';
  }
}

/**
 * Where the head ends in bytes[from, to): the index just past its first empty line (`\n\n` or `\n\r\n`),
 * which may begin in the `kept` bytes of the head read before (`head[0, kept)`); -1 when it does not end there.
 */
function headEnd(head: Uint8Array, kept: number, bytes: Uint8Array, from: number, to: number): number {
  /** The byte `back` places before bytes[i]: in the new bytes, else in the head kept before them; -1 before both. */
  const byteBefore = (i: number, back: number): number => {
    const at = i - back;
    if (at >= from) return bytes[at] as number;
    const inHead = kept + (at - from);
    return inHead >= 0 ? (head[inHead] as number) : -1;
  };
  for (let i = bytes.indexOf(LF, from); i >= 0 && i < to; i = bytes.indexOf(LF, i + 1)) {
    if (byteBefore(i, 1) === LF || (byteBefore(i, 1) === CR && byteBefore(i, 2) === LF)) return i + 1;
  }
  return -1;
}

export function formatRequest(method: 'GET' | 'POST', path: string): Uint8Array {
  if (!/^\/[\x21-\x7e]*$/.test(path)) throw new Error(`request path ${JSON.stringify(path)} is not a printable origin-form path`);
  // A POST without a body still says so: HTTP/1.1 servers may otherwise wait for one.
  const length = method === 'POST' ? 'Content-Length: 0\r\n' : '';
  return utf8Encode(`${method} ${path} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: envoy-shutdown\r\nAccept: */*\r\nConnection: close\r\n${length}\r\n`);
}

/**
 * One request on a fresh connection. Resolves with the status and what `reader` made of the body;
 * rejects with an HttpCallError whose kind says whether the server is gone.
 */
export function httpRequest<T>(
  platform: Pick<Platform, 'connect' | 'setTimer' | 'clearTimer'>,
  address: SocketAddress,
  method: 'GET' | 'POST',
  path: string,
  timeoutMs: number,
  reader: BodyReader<T>,
): Promise<HttpAnswer<T>> {
  const request = formatRequest(method, path);
  return new Promise((resolve, reject) => {
    const parser = new ResponseParser(reader);
    let received = 0;
    let settled = false;
    const settle = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      platform.clearTimer(timer);
      stream.close();
      outcome();
    };
    const fail = (kind: HttpFailureKind, why: string): void => settle(() => reject(new HttpCallError(kind, `${method} ${path}: ${why}`)));
    const succeed = (): void => {
      try {
        const body = reader.finish();
        settle(() => resolve({ status: parser.status, body }));
      } catch (error) {
        fail('failed', (error as Error).message);
      }
    };
    const timer = platform.setTimer(Math.max(1, timeoutMs), () =>
      fail('timeout', `no complete answer within ${timeoutMs}ms${received > 0 ? ` (${received} bytes received)` : ''}`),
    );
    const stream = platform.connect(address, {
      connected: () => stream.write(request),
      data: (bytes) => {
        if (settled) return;
        received += bytes.length;
        try {
          if (parser.feed(bytes)) succeed();
        } catch (error) {
          if (!(error instanceof ProtocolError)) throw error;
          fail('failed', `unreadable answer: ${error.message}`);
        }
      },
      end: () => {
        if (settled) return;
        if (received === 0) return fail('unreachable', 'connection closed without an answer');
        try {
          parser.end();
          succeed();
        } catch (error) {
          if (!(error instanceof ProtocolError)) throw error;
          fail('failed', `unreadable answer: ${error.message}`);
        }
      },
      failed: (code, message) => {
        if (settled) return;
        if (received === 0 && GONE.has(code)) return fail('unreachable', code);
        fail('failed', received === 0 ? `${code} (${message})` : `${code} after ${received} bytes of the answer`);
      },
    });
  });
}
