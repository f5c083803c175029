import fc from 'fast-check';
import { formatRequest, ResponseParser, type BodyReader } from '../../../src/shutdown/http1';
import { MAX_HEAD_BYTES } from '../../../src/shutdown/http1';

/** Collects the body; `stopAfter` bytes make it say it needs no more. */
function collector(stopAfter = Infinity): BodyReader<string> & { pushes: number } {
  const parts: Buffer[] = [];
  let size = 0;
  return {
    pushes: 0,
    push(bytes) {
      this.pushes++;
      parts.push(Buffer.from(bytes));
      size += bytes.length;
      return size < stopAfter;
    },
    finish: () => Buffer.concat(parts).toString('utf8'),
  };
}

/** Feeds `wire` in the given pieces; returns the parser and whether it finished before the end. */
function parse(wire: string, cuts: number[] = [], stopAfter = Infinity) {
  const bytes = Buffer.from(wire, 'latin1');
  const reader = collector(stopAfter);
  const parser = new ResponseParser(reader);
  const points = [...new Set(cuts.filter((c) => c > 0 && c < bytes.length))].sort((a, b) => a - b);
  let start = 0;
  let done = false;
  for (const end of [...points, bytes.length]) {
    if (done) break;
    done = parser.feed(bytes.subarray(start, end));
    start = end;
  }
  return { parser, reader, done };
}

const chunked = (...chunks: string[]) => `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${chunks.map((c) => `${Buffer.byteLength(c).toString(16)}\r\n${c}\r\n`).join('')}0\r\n\r\n`;

describe('HTTP/1.1 answers, parsed as bytes arrive', () => {
  test('Content-Length, chunked (Envoy admin), and close-delimited bodies', () => {
    const length = parse('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello');
    expect([length.done, length.parser.status, length.reader.finish()]).toEqual([true, 200, 'hello']);
    const chunks = parse(chunked('{"stats":', '[]}'));
    expect([chunks.done, chunks.reader.finish()]).toEqual([true, '{"stats":[]}']);
    const close = parse('HTTP/1.1 503 Service Unavailable\r\n\r\nbusy');
    expect(close.done).toBe(false);
    close.parser.end();
    expect([close.parser.status, close.reader.finish()]).toEqual([503, 'busy']);
    const empty = parse('HTTP/1.1 204 No Content\r\n\r\n');
    expect([empty.done, empty.reader.finish()]).toEqual([true, '']);
  });

  test('the same answer however the bytes are split', () => {
    const wire = chunked('{"stats":[{"name":"listener.a.downstream_cx_active","value":3}', ',{"name":"x","value":1}]}');
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: wire.length - 1 }), { maxLength: 12 }), (cuts) => {
        const { done, reader, parser } = parse(wire, cuts);
        expect(done).toBe(true);
        expect(parser.status).toBe(200);
        expect(reader.finish()).toBe('{"stats":[{"name":"listener.a.downstream_cx_active","value":3},{"name":"x","value":1}]}');
      }),
    );
  });

  test('chunk extensions, bare LF line ends and trailers are accepted', () => {
    const { done, reader } = parse('HTTP/1.1 200 OK\ntransfer-encoding: chunked\n\n3;ext=1\nabc\n0\nx-trailer: 1\n\n');
    expect([done, reader.finish()]).toEqual([true, 'abc']);
  });

  test('header values lose the spaces and tabs around them, nothing else; names are matched in any case', () => {
    const { done, reader } = parse('HTTP/1.1 200 OK\r\ncontent-LENGTH: \t 3 \t\r\nX-Empty:\r\n\r\nabcdef');
    expect([done, reader.finish()]).toEqual([true, 'abc']);
    expect(() => parse('HTTP/1.1 200 OK\r\nContent-Length: \u000b3\r\n\r\nabc')).toThrow(/invalid Content-Length/);
  });

  test('a reader that has seen enough ends the answer early', () => {
    const { done, reader } = parse(chunked('a'.repeat(100), 'b'.repeat(100)), [], 10);
    expect(done).toBe(true);
    expect(reader.pushes).toBe(1);
  });

  test.each([
    ['garbage', 'SSH-2.0-OpenSSH_9.2\r\n\r\n', /not an HTTP\/1.x status line/],
    ['an interim answer', 'HTTP/1.1 100 Continue\r\n\r\n', /interim/],
    ['a malformed header', 'HTTP/1.1 200 OK\r\nno colon here\r\n\r\n', /malformed header/],
    ['a folded header', 'HTTP/1.1 200 OK\r\nA: b\r\n  c\r\n\r\n', /malformed header/],
    ['a header without a name', 'HTTP/1.1 200 OK\r\n: b\r\n\r\n', /malformed header/],
    ['a header name with a space', 'HTTP/1.1 200 OK\r\nContent Length: 1\r\n\r\n', /malformed header/],
    ['a bare CR inside a header line', 'HTTP/1.1 200 OK\r\nA: b\rContent-Length: 1\r\n\r\n', /malformed header/],
    ['two lengths', 'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n', /conflicting Content-Length/],
    ['a negative length', 'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n', /invalid Content-Length/],
    ['a chunk size that is not hex', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', /invalid chunk size/],
    ['a chunk size beyond 2^53', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n', /invalid chunk size/],
    ['chunk data longer than its size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc\r\n', /longer than its size|line too long/],
  ])('%s is refused', (_name, wire, message) => {
    expect(() => parse(wire)).toThrow(message);
  });

  test('headers beyond the limit are refused without buffering more', () => {
    const head = `HTTP/1.1 200 OK\r\n${'X-Pad: y\r\n'.repeat(MAX_HEAD_BYTES / 10 + 1)}`;
    expect(() => parse(head, [1000, 30000])).toThrow(/headers larger than/);
  });

  test('a kept-alive connection: the answer says whether it may carry the next request, and which bytes were its own', () => {
    // What the lean Kubernetes client (src/kube-api/client.ts) reads on a connection it keeps.
    const next = 'HTTP/1.1 200 OK\r\n';
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), fc.boolean(), fc.boolean(), (body, isChunked, close) => {
        const bytes = Buffer.byteLength(body);
        const head = `HTTP/1.1 201 Created\r\n${close ? 'Connection: close\r\n' : ''}${isChunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${bytes}`}\r\n\r\n`;
        const wire = Buffer.from(`${head}${isChunked ? `${bytes > 0 ? `${bytes.toString(16)}\r\n${body}\r\n` : ''}0\r\n\r\n` : body}${next}`);
        const reader = collector();
        const parser = new ResponseParser(reader);
        // The answer and the next one's first bytes, in two pieces: the second starts inside the answer.
        const split = wire.length - next.length - 1;
        expect(parser.feed(wire.subarray(0, split))).toBe(false);
        expect(parser.used).toBe(split);
        expect(parser.feed(wire.subarray(split))).toBe(true);
        expect(parser.used).toBe(1);
        expect([parser.status, parser.keepAlive, reader.finish()]).toEqual([201, !close, body]);
      }),
    );
    const once = (wire: string) => parse(wire).parser.keepAlive;
    expect(once('HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n')).toBe(false);
    expect(once('HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n')).toBe(true);
    expect(once('HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n')).toBe(false);
    // A body that ends with the connection, or one the reader stopped reading, leaves none to reuse.
    expect(once('HTTP/1.1 200 OK\r\n\r\nuntil the end')).toBe(false);
    expect(parse(chunked('a'.repeat(100), 'b'.repeat(100)), [], 10).parser.keepAlive).toBe(false);
  });

  test('an answer cut short is an error at end of file', () => {
    expect(() => parse('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc').parser.end()).toThrow(/before the end of the body/);
    expect(() => parse('HTTP/1.1 200 O').parser.end()).toThrow(/inside the headers/);
    expect(() => parse(chunked('abc').slice(0, -5)).parser.end()).toThrow(/before the end of the body/);
  });
});

describe('requests', () => {
  test('one per connection, Connection: close; a POST says it has no body', () => {
    expect(Buffer.from(formatRequest('GET', '/server_info')).toString()).toBe(
      'GET /server_info HTTP/1.1\r\nHost: localhost\r\nUser-Agent: envoy-shutdown\r\nAccept: */*\r\nConnection: close\r\n\r\n',
    );
    expect(Buffer.from(formatRequest('POST', '/healthcheck/fail')).toString()).toMatch(/\r\nContent-Length: 0\r\n\r\n$/);
  });

  test.each(['/a b', '/a\r\nX: y', 'relative', '/ü'])('refuses the path %j', (path) => {
    expect(() => formatRequest('GET', path)).toThrow(/printable origin-form/);
  });
});
