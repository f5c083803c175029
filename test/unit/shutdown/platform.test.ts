import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import { statusOnly, textReader } from '../../../src/shutdown/body-readers';
import { HttpCallError, httpRequest } from '../../../src/shutdown/http1';
import { nodePlatform } from '../../../src/shutdown/platform/node';
import { longTimer, MAX_NODE_TIMER_MS } from '../../../src/shutdown/platform/platform';
import { utf8Decode, utf8Encode } from '../../../src/shutdown/platform/utf8';

const SOURCES = join(__dirname, '../../../src/shutdown');

describe('what the static executable may import', () => {
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => (statSync(join(dir, name)).isDirectory() ? files(join(dir, name)) : name.endsWith('.ts') ? [join(dir, name)] : []));

  test('only platform/node.ts (and current.ts, which the build replaces) reach Node modules', () => {
    const importers = files(SOURCES)
      .filter((file) => /from ['"]node:|require\(['"]node:/.test(readFileSync(file, 'utf8')) || /from '\.\/node'/.test(readFileSync(file, 'utf8')))
      .map((file) => relative(SOURCES, file))
      .sort();
    expect(importers).toEqual(['platform/current.ts', 'platform/node.ts']);
  });

  test('outside src/shutdown it imports only the drain contract, the drain record and the version (the build hashes exactly these)', () => {
    const outside = new Set<string>();
    for (const file of files(SOURCES)) {
      for (const [, specifier] of readFileSync(file, 'utf8').matchAll(/from '(\.[^']*)'/g)) {
        const target = relative(SOURCES, join(file, '..', specifier as string));
        if (target.startsWith('..')) outside.add(relative(join(SOURCES, '..', '..'), join(file, '..', specifier as string)));
      }
    }
    expect([...outside].sort()).toEqual(['src/drain-contract', 'src/drain-record', 'src/version']);
    const build = readFileSync(join(SOURCES, 'build/build-executable.mjs'), 'utf8');
    // A module is a file (`'src/version.ts'`) or, for the contract, its folder (`'src/drain-contract'`).
    for (const module of outside) expect(build).toMatch(new RegExp(`'${module}(\\.ts)?'`));
  });
});

describe('UTF-8', () => {
  test('encodes like Buffer (lone surrogates as U+FFFD)', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 60 }), (text) => {
      expect(Buffer.from(utf8Encode(text)).equals(Buffer.from(text, 'utf8'))).toBe(true);
    }));
  });

  test('decodes any bytes like Buffer (one U+FFFD per maximal invalid part)', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 60 }), (bytes) => {
      expect(utf8Decode(bytes)).toBe(Buffer.from(bytes).toString('utf8'));
    }), { numRuns: 2000 });
    const big = Buffer.from('é'.repeat(20_000));
    expect(utf8Decode(big)).toBe('é'.repeat(20_000));
  });
});

describe('timers of any length', () => {
  /** A native timer that records what it was asked for and fires when told. */
  function fakeNative(maxMs: number) {
    let now = 0;
    const pending: { at: number; callback: () => void }[] = [];
    return {
      asked: [] as number[],
      native: {
        set: (ms: number, callback: () => void) => {
          pending.push({ at: now + ms, callback });
          return pending.length - 1;
        },
        clear: () => undefined,
        now: () => now,
        maxMs,
      },
      /** Advances to the next pending timer and fires it. */
      fireNext(this: { asked: number[] }) {
        const next = pending.sort((a, b) => a.at - b.at).shift();
        if (!next) return false;
        (this.asked as number[]).push(next.at - now);
        now = next.at;
        next.callback();
        return true;
      },
      get now() {
        return now;
      },
    };
  }

  test('a duration above 2^31-1 ms is waited for in full, in steps the native timer can hold', () => {
    const clock = fakeNative(MAX_NODE_TIMER_MS);
    let firedAt: number | undefined;
    const deadline = 2_147_484_000 + 500; // --deadline 2147484s plus the safety margin
    longTimer(deadline, () => (firedAt = clock.now), clock.native);
    while (clock.fireNext()) {
      /* run every step */
    }
    expect(firedAt).toBe(deadline);
    expect(Math.max(...clock.asked)).toBeLessThanOrEqual(MAX_NODE_TIMER_MS);
  });

  test('short, zero and invalid durations fire once, at once or on time', () => {
    const clock = fakeNative(MAX_NODE_TIMER_MS);
    const fired: number[] = [];
    longTimer(10, () => fired.push(clock.now), clock.native);
    longTimer(Number.NaN, () => fired.push(clock.now), clock.native);
    longTimer(-5, () => fired.push(clock.now), clock.native);
    while (clock.fireNext()) {
      /* run every step */
    }
    expect(fired.sort((a, b) => a - b)).toEqual([0, 0, 10]);
  });
});

describe('the HTTP client on real sockets (Node platform)', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
  });
  const dir = mkdtempSync(join(tmpdir(), 'envoy-shutdown-http-'));
  let counter = 0;

  async function server(handler: (socket: import('node:net').Socket) => void): Promise<string> {
    const path = join(dir, `s${counter++}.sock`);
    const s = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', () => handler(socket));
    });
    servers.push(s);
    await new Promise<void>((resolve) => s.listen(path, resolve));
    return path;
  }

  const get = (path: string, timeoutMs = 2000) => httpRequest(nodePlatform, { kind: 'unix', path }, 'GET', '/server_info', timeoutMs, textReader(1024));
  const failureOf = async (promise: Promise<unknown>) => {
    try {
      await promise;
    } catch (error) {
      if (error instanceof HttpCallError) return { kind: error.kind, message: error.message };
      throw error;
    }
    throw new Error('expected a failure');
  };

  test('an answer is read', async () => {
    const path = await server((s) => s.end('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n'));
    await expect(get(path)).resolves.toEqual({ status: 200, body: '{}' });
  });

  test('a body over the reader limit is not read (undefined), the status is kept', async () => {
    const path = await server((s) => s.end(`HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n${'x'.repeat(2000)}`));
    await expect(get(path)).resolves.toEqual({ status: 200, body: undefined });
  });

  test('missing socket, refused, closed before any byte: unreachable (Envoy gone)', async () => {
    expect(await failureOf(get(join(dir, 'nothing.sock')))).toMatchObject({ kind: 'unreachable', message: expect.stringMatching(/ENOENT/) });
    const closes = await server((s) => s.destroy());
    expect(await failureOf(get(closes))).toMatchObject({ kind: 'unreachable' });
  });

  test('an answer cut short, or an unreadable answer: failed (something is there)', async () => {
    const cut = await server((s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc'));
    expect(await failureOf(get(cut))).toMatchObject({ kind: 'failed', message: expect.stringMatching(/before the end of the body/) });
    const garbage = await server((s) => s.end('not http\r\n\r\n'));
    expect(await failureOf(get(garbage))).toMatchObject({ kind: 'failed', message: expect.stringMatching(/unreadable answer/) });
  });

  test('no complete answer in time: timeout', async () => {
    const silent = await server(() => undefined);
    expect(await failureOf(get(silent, 100))).toMatchObject({ kind: 'timeout', message: expect.stringMatching(/within 100ms/) });
  });

  test('statusOnly settles on the head of a POST answer', async () => {
    const path = await server((s) => s.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nOK\n\r\n'));
    await expect(httpRequest(nodePlatform, { kind: 'unix', path }, 'POST', '/healthcheck/fail', 2000, statusOnly())).resolves.toEqual({ status: 200, body: undefined });
  });
});
