import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEnvoyVersion } from '../../../src/shutdown/envoy-version';
import { createLog, MAX_QUEUED_LOG_BYTES, openLogSink } from '../../../src/shutdown/log';
import { nodePlatform } from '../../../src/shutdown/platform/node';
import { parseServerInfo } from '../../../src/shutdown/server-info';

test('Envoy version strings', () => {
  expect(parseEnvoyVersion('7ed31b/1.31.2/Clean/RELEASE/BoringSSL')).toEqual({ major: 1, minor: 31, patch: 2 });
  expect(parseEnvoyVersion('7ed31b/1.28.0-dev/Modified/DEBUG/BoringSSL-FIPS')).toEqual({ major: 1, minor: 28, patch: 0 });
  expect(parseEnvoyVersion('garbage')).toBeUndefined();
});

test('server_info fields', () => {
  expect(parseServerInfo('{"version":"a/1.2.3/x","state":"DRAINING","uptime_current_epoch":"6s"}')).toEqual({ version: 'a/1.2.3/x', state: 'DRAINING', uptime: '6s' });
  expect(parseServerInfo('null')).toEqual({});
  expect(parseServerInfo('<html>')).toEqual({});
});

test('log lines are JSON with a phase, written to the ENVOY_SHUTDOWN_LOG target', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'es-log-')), 'log');
  const sink = openLogSink(nodePlatform, file);
  const log = createLog(sink, () => new Date('2026-01-02T03:04:05Z'));
  log('summary', { reason: 'drained', duration_ms: 5 });
  sink.close();
  expect(readFileSync(file, 'utf8')).toBe('{"time":"2026-01-02T03:04:05.000Z","logger":"envoy-shutdown","phase":"summary","reason":"drained","duration_ms":5}\n');
});

test('an unopenable target falls back to stderr', () => {
  const sink = openLogSink(nodePlatform, '/nonexistent-dir/log');
  expect(sink.target).toBe('stderr');
  sink.close();
});

test('the default target is Envoy stdout, /proc/1/fd/1', () => {
  const sink = openLogSink(nodePlatform, undefined);
  // As root in a test machine /proc/1/fd/1 may well be writable; nothing is written here.
  expect(['/proc/1/fd/1', 'stderr']).toContain(sink.target);
  sink.close();
});

describe('log writes never wait for the target', () => {
  /** A target that takes `room` more bytes, then nothing until given more; `broken` makes it fail. */
  function slowTarget(room: number) {
    const written: Buffer[] = [];
    const target = {
      room,
      broken: false,
      tryWrite(bytes: Uint8Array) {
        if (target.broken) throw Object.assign(new Error('broken pipe'), { code: 'EPIPE' });
        const n = Math.min(target.room, bytes.length);
        target.room -= n;
        written.push(Buffer.from(bytes.subarray(0, n)));
        return n;
      },
      close: () => undefined,
      text: () => Buffer.concat(written).toString('utf8'),
      lines: () => target.text().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { phase: string }),
    };
    return target;
  }

  function sinkOn(primary: ReturnType<typeof slowTarget>, stderr = slowTarget(1 << 20)) {
    const opener = { openLogTarget: (t: { kind: string }) => (t.kind === 'stderr' ? stderr : primary) };
    return openLogSink(opener, '/target');
  }

  test('a full target: lines wait in order; a line begun is finished before the next', () => {
    const target = slowTarget(10);
    const sink = sinkOn(target);
    const log = createLog(sink, () => new Date(0));
    log('start');
    log('server-info', { state: 'LIVE' });
    expect(target.text()).toHaveLength(10); // part of the first line; the rest waits
    target.room = Infinity;
    log('connections', { connections: 3 });
    sink.close();
    expect(target.lines().map((l) => l.phase)).toEqual(['start', 'server-info', 'connections']);
    expect(sink.droppedLines).toBe(0);
  });

  test('past the queue bound lines are dropped, counted, and the summary says so', () => {
    const target = slowTarget(0);
    const sink = sinkOn(target);
    const log = createLog(sink, () => new Date(0));
    const padding = 'x'.repeat(1000);
    const written = Math.ceil((MAX_QUEUED_LOG_BYTES / 1000) * 2);
    for (let i = 0; i < written; i++) log('poll', { padding });
    const dropped = sink.droppedLines;
    expect(dropped).toBeGreaterThan(written / 3);
    target.room = Infinity;
    log('summary', { reason: 'drained' });
    sink.close();
    const lines = target.lines();
    expect(lines.at(-1)).toMatchObject({ phase: 'summary', log_lines_dropped: dropped });
    expect(lines).toHaveLength(written - dropped + 1);
  });

  test('a target that fails (Envoy gone) is replaced by stderr for good; a torn line is not continued there', () => {
    const target = slowTarget(5);
    const stderr = slowTarget(1 << 20);
    const sink = sinkOn(target, stderr);
    const log = createLog(sink, () => new Date(0));
    log('start');
    target.broken = true;
    log('poll', { connections: 0 });
    expect(sink.target).toBe('stderr');
    expect(stderr.lines().map((l) => l.phase)).toEqual(['poll']);
    expect(sink.droppedLines).toBe(1); // the torn 'start' line
  });
});

describe('version parsing is strict (issue 20 item 10): nothing unusual is read as new enough for skip_exit or inboundonly', () => {
  test.each([
    ['a component beyond any release', 'abc/1.99999999999999999999.0/Clean/RELEASE/BoringSSL'],
    ['5000 nines', `abc/1.${'9'.repeat(5000)}.0/Clean/RELEASE/BoringSSL`],
    ['leading zeros', 'abc/01.034.0/Clean/RELEASE/BoringSSL'],
    ['a leading zero in the patch', 'abc/1.34.01/Clean/RELEASE/BoringSSL'],
    ['a sign', 'abc/+1.34.0/Clean/RELEASE/BoringSSL'],
    ['two version numbers', 'abc/1.34.0/1.35.0/RELEASE/BoringSSL'],
  ])('%s → unknown', (_case, text) => {
    expect(parseEnvoyVersion(text)).toBeUndefined();
  });

  test('the usual forms are read', () => {
    expect(parseEnvoyVersion('abc/1.34.0/Clean/RELEASE/BoringSSL')).toEqual({ major: 1, minor: 34, patch: 0 });
    expect(parseEnvoyVersion('abc/1.34.10-dev/Modified/DEBUG/BoringSSL')).toEqual({ major: 1, minor: 34, patch: 10 });
  });

  test('a /server_info with two top-level "version" keys has no version (JSON.parse would keep the last)', () => {
    const twice = '{"version":"abc/1.20.0/Clean/RELEASE/BoringSSL","state":"LIVE","version":"abc/1.40.0/Clean/RELEASE/BoringSSL"}';
    expect(parseServerInfo(twice).version).toBeUndefined();
    expect(parseServerInfo(twice).state).toBe('LIVE');
    // A nested "version" (node.user_agent_build_version.version) is another key.
    const nested = '{"version":"abc/1.34.0/Clean/RELEASE/BoringSSL","node":{"user_agent_build_version":{"version":{"major_number":1}}}}';
    expect(parseServerInfo(nested).version).toBe('abc/1.34.0/Clean/RELEASE/BoringSSL');
    const escaped = '{"version":"abc/1.20.0/x","\\u0076ersion":"abc/1.40.0/x"}';
    expect(parseServerInfo(escaped).version).toBeUndefined();
  });
});
