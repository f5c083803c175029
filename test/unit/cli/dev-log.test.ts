/**
 * `serve --dev` on a terminal: pino's JSON lines as one readable line each, from what pino really writes.
 */
import pino from 'pino';
import { PassThrough } from 'node:stream';
import { devLogStream, formatDevLogLine } from '../../../src/cli/dev-log';

const line = (entry: Record<string, unknown>) => JSON.stringify({ level: 30, time: '2026-12-01T12:00:01.250Z', pid: 7, hostname: 'h', name: 'drainguard', ...entry });

test('time of day, level, message, then the other fields as key=value; pid, hostname and name left out', () => {
  expect(formatDevLogLine(line({ msg: 'listening', address: '127.0.0.1', port: 8443 }), false)).toBe('12:00:01.250 INFO  listening address=127.0.0.1 port=8443\n');
});

test('a value with spaces, quotes or = is quoted; objects and arrays are JSON', () => {
  expect(formatDevLogLine(line({ level: 40, msg: 'denied', reason: 'bad value "x"', paths: ['/a'], limits: { max: 2 } }), false)).toBe(
    '12:00:01.250 WARN  denied reason="bad value \\"x\\"" paths=["/a"] limits={"max":2}\n',
  );
});

test('the level is coloured unless colour is off', () => {
  expect(formatDevLogLine(line({ level: 50, msg: 'failed' }), true)).toBe('12:00:01.250 \u001b[31mERROR\u001b[0m failed\n');
  expect(formatDevLogLine(line({ level: 50, msg: 'failed' }), false)).not.toContain('\u001b');
});

test("an error's stack goes below its line, indented", () => {
  const text = formatDevLogLine(line({ level: 50, msg: 'decision failed', err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at f (x.js:1:1)' }, uid: 'u1' }), false);
  expect(text).toBe('12:00:01.250 ERROR decision failed uid=u1\n    Error: boom\n        at f (x.js:1:1)\n');
});

test('a line that is not a JSON object is passed through as it is', () => {
  expect(formatDevLogLine('not json {', false)).toBe('not json {\n');
  expect(formatDevLogLine('[1,2]', false)).toBe('[1,2]\n');
});

test('as pino\'s destination: lines split across writes come out whole, the last one at the end', async () => {
  const out = new PassThrough();
  let written = '';
  out.on('data', (chunk: Buffer) => (written += chunk.toString()));
  const stream = devLogStream(out, false);
  const logger = pino({ base: { name: 'drainguard' }, timestamp: () => ',"time":"2026-12-01T12:00:01.250Z"' }, stream);
  logger.info({ port: 1 }, 'one');
  logger.warn('two');
  stream.write('{"level":30,"time":"2026-12-01T12:00:02.000Z","ms');
  stream.write('g":"three"}\n{"level":30,"msg":"four"}');
  stream.end();
  await new Promise((resolve) => stream.once('finish', resolve));
  expect(written).toBe('12:00:01.250 INFO  one port=1\n12:00:01.250 WARN  two\n12:00:02.000 INFO  three\nINFO  four\n');
});
