/**
 * Hostile clients below the review level, run while the fuzz reviews are being sent: each scenario
 * connects on its own and reports whether the server behaved as it must (issue: no request can stall a
 * replica). None of them may cost the server its answers to everyone else, which the fuzz run and its
 * /healthz prober check at the same time.
 */
import { connect as tcpConnect } from 'node:net';
import { connect, type TLSSocket } from 'node:tls';
import type { ClientTarget } from '../lib/https-client';

export interface HostileOutcome {
  scenario: string;
  ok: boolean;
  detail: string;
}

function tls(target: ClientTarget, options: Record<string, unknown> = {}): TLSSocket {
  return connect({ host: '127.0.0.1', port: target.port, ca: target.ca, servername: target.servername, ...options });
}

/** Writes `payload` once connected, collects what comes back until the server closes or `limitMs` pass. */
function exchange(target: ClientTarget, payload: string, limitMs: number, until?: (text: string) => boolean): Promise<string> {
  return new Promise((resolve) => {
    const socket = tls(target);
    let text = '';
    const timer = setTimeout(() => socket.destroy(), limitMs);
    socket.once('secureConnect', () => socket.write(payload));
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (until?.(text)) socket.destroy();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(text);
    });
  });
}

const head = (length: number, extra = '') => `POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`;

async function declaredGigabyte(target: ClientTarget): Promise<HostileOutcome> {
  const answer = await exchange(target, `${head(1024 ** 3)}{"apiVersion":`, 10_000);
  return { scenario: 'Content-Length: 1 GiB', ok: /^HTTP\/1\.1 413 /.test(answer), detail: answer.split('\r\n')[0] ?? 'no answer' };
}

async function expectContinue(target: ClientTarget): Promise<HostileOutcome> {
  const answer = await exchange(target, head(10_000_000, 'Expect: 100-continue\r\n'), 10_000);
  return { scenario: 'Expect: 100-continue, 10 MB', ok: /^HTTP\/1\.1 413 /.test(answer) && !answer.includes('100 Continue'), detail: answer.split('\r\n')[0] ?? 'no answer' };
}

async function pipeline(target: ClientTarget, reviewBody: string, count: number): Promise<HostileOutcome> {
  const request = `${head(Buffer.byteLength(reviewBody))}${reviewBody}`;
  const answers = (text: string) => (text.match(/HTTP\/1\.1 \d{3} /g) ?? []).length;
  const text = await exchange(target, request.repeat(count), 60_000, (received) => answers(received) >= count);
  const statuses = [...new Set(text.match(/HTTP\/1\.1 \d{3}/g) ?? [])];
  return { scenario: `${count} pipelined reviews`, ok: answers(text) === count && statuses.join() === 'HTTP/1.1 200', detail: `${answers(text)} answered, statuses ${statuses.join(', ') || 'none'}` };
}

function weakCipher(target: ClientTarget): Promise<HostileOutcome> {
  return new Promise((resolve) => {
    const socket = tls(target, { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2', ciphers: 'AES128-SHA' });
    socket.once('secureConnect', () => {
      resolve({ scenario: 'TLS 1.2 with AES128-SHA only', ok: false, detail: `connected with ${socket.getCipher().name}` });
      socket.destroy();
    });
    socket.once('error', (error) => resolve({ scenario: 'TLS 1.2 with AES128-SHA only', ok: true, detail: `refused: ${error.message.slice(0, 80)}` }));
  });
}

function unfinishedHandshake(target: ClientTarget, limitMs: number): Promise<HostileOutcome> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = tcpConnect({ host: '127.0.0.1', port: target.port });
    const timer = setTimeout(() => socket.destroy(new Error('still open')), limitMs);
    socket.once('connect', () => socket.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01])));
    socket.on('error', () => undefined);
    socket.once('close', () => {
      clearTimeout(timer);
      const seconds = (Date.now() - started) / 1000;
      resolve({ scenario: 'TLS handshake never finished', ok: seconds < limitMs / 1000, detail: `closed by the server after ${seconds.toFixed(1)} s` });
    });
  });
}

/** Opens `count` idle TLS connections at once; beyond the server's cap they must be closed at once. */
async function connectionFlood(target: ClientTarget, count: number, cap: number): Promise<HostileOutcome> {
  const sockets: TLSSocket[] = [];
  const results = await Promise.all(
    Array.from({ length: count }, () =>
      new Promise<boolean>((resolve) => {
        const socket = tls(target);
        sockets.push(socket);
        socket.once('secureConnect', () => resolve(true));
        socket.once('error', () => resolve(false));
        socket.once('close', () => resolve(false));
      }),
    ),
  );
  for (const socket of sockets) socket.destroy();
  const accepted = results.filter(Boolean).length;
  return { scenario: `${count} idle connections at once`, ok: accepted <= cap, detail: `${accepted} accepted, ${count - accepted} closed at once (cap ${cap}, shared with the fuzz clients)` };
}

/** Every hostile client but the connection flood, at once. */
export async function runHostileScenarios(target: ClientTarget, reviewBody: string, options: { handshakeTimeoutMs: number }): Promise<HostileOutcome[]> {
  return Promise.all([
    declaredGigabyte(target),
    expectContinue(target),
    pipeline(target, reviewBody, 200),
    weakCipher(target),
    unfinishedHandshake(target, options.handshakeTimeoutMs + 5000),
  ]);
}

/**
 * 50 connections more than the server's cap, at once. Run on its own: while it holds the cap, every new
 * connection is closed at once, a client reconnecting (or a prober's first connection) included.
 */
export function runConnectionFlood(target: ClientTarget, options: { maxConnections: number }): Promise<HostileOutcome> {
  return connectionFlood(target, options.maxConnections + 50, options.maxConnections);
}
