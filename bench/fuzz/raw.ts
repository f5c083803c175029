/**
 * Garbage below HTTP: bytes written straight onto a TLS connection, which no HTTP client library would
 * send. The server may answer with a 4xx or just close the connection; it must never answer 5xx or die.
 */
import fc from 'fast-check';
import { connect } from 'node:tls';
import type { ClientTarget } from '../lib/https-client';

export interface RawCase {
  label: string;
  payload: Buffer;
}

export interface RawAnswer {
  /** HTTP status of the first response, 0 when the server closed without one. */
  status: number;
  text: string;
}

/** Sends `payload`, half-closes, and collects whatever comes back until the server closes (or 5 s pass). */
export function sendRaw(target: ClientTarget, payload: Buffer): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: '127.0.0.1', port: target.port, ca: target.ca, servername: target.servername }, () => socket.end(payload));
    const finish = () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ status: match ? Number(match[1]) : 0, text: text.slice(0, 300) });
    };
    const timer = setTimeout(() => socket.destroy(), 5000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', finish);
  });
}

export function rawCases(validBody: string, count: number, seed: number): RawCase[] {
  const head = (extra: string, length: number | string = Buffer.byteLength(validBody)) =>
    `POST /mutate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`;
  const fixed: RawCase[] = [
    { label: 'body shorter than Content-Length', payload: Buffer.from(head('') + validBody.slice(0, 100)) },
    { label: 'negative Content-Length', payload: Buffer.from(head('', -5) + validBody) },
    { label: 'non-numeric Content-Length', payload: Buffer.from(head('', 'lots') + validBody) },
    { label: 'two Content-Lengths', payload: Buffer.from(head('Content-Length: 3\r\n') + validBody) },
    { label: 'chunked and Content-Length', payload: Buffer.from(head('Transfer-Encoding: chunked\r\n') + validBody) },
    { label: 'broken chunked body', payload: Buffer.from('POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n') },
    { label: 'huge header', payload: Buffer.from(head(`X-Big: ${'a'.repeat(70_000)}\r\n`) + validBody) },
    { label: 'control characters in a header', payload: Buffer.from(head('X-Bad: a\u0001b\r\n') + validBody) },
    { label: 'garbage request line', payload: Buffer.from('FOO BAR BAZ\r\n\r\n') },
    { label: 'HTTP/0.9 style', payload: Buffer.from('GET /mutate\r\n') },
    { label: 'HTTP/2 preface on HTTP/1.1', payload: Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n') },
    { label: 'pipelined valid + garbage', payload: Buffer.from(head('') + validBody + 'NOT HTTP\r\n\r\n') },
  ];
  const random = fc
    .sample(fc.uint8Array({ minLength: 1, maxLength: 2048 }), { numRuns: Math.max(0, count - fixed.length), seed })
    .map((bytes, index) => ({ label: `random bytes #${index}`, payload: Buffer.from(bytes) }));
  return [...fixed, ...random];
}
