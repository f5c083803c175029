import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAtLeast, parseEnvoyVersion } from '../../../src/shutdown/envoy-version';
import { createLog, openLogSink } from '../../../src/shutdown/log';
import { nodePlatform } from '../../../src/shutdown/platform/node';
import { parseServerInfo } from '../../../src/shutdown/server-info';

test('Envoy version strings', () => {
  expect(parseEnvoyVersion('7ed31b/1.31.2/Clean/RELEASE/BoringSSL')).toEqual({ major: 1, minor: 31, patch: 2 });
  expect(parseEnvoyVersion('7ed31b/1.28.0-dev/Modified/DEBUG/BoringSSL-FIPS')).toEqual({ major: 1, minor: 28, patch: 0 });
  expect(parseEnvoyVersion('garbage')).toBeUndefined();
  expect(isAtLeast({ major: 1, minor: 28, patch: 0 }, 1, 28)).toBe(true);
  expect(isAtLeast({ major: 1, minor: 27, patch: 9 }, 1, 28)).toBe(false);
  expect(isAtLeast({ major: 2, minor: 0, patch: 0 }, 1, 34)).toBe(true);
  expect(isAtLeast(undefined, 1, 0)).toBe(false);
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
