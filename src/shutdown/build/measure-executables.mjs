#!/usr/bin/env node
/**
 * Builds envoy-shutdown both ways (bun, node-sea) into .tmp/ and measures what the README reports:
 * size on disk (program + lib/), start-up time (`version`, mean of 30 runs after 3 warm-ups), and
 * peak RSS (`version`, and a 3 s `drain` polling a small admin stub every 100 ms).
 *
 *   node src/shutdown/build/measure-executables.mjs
 *
 * Needs /usr/bin/time (Debian package `time`) for peak RSS, and what build-executable.mjs needs.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../../..');

function sizeOf(dir) {
  return readdirSync(dir, { withFileTypes: true }).reduce((sum, e) => sum + (e.isDirectory() ? sizeOf(join(dir, e.name)) : statSync(join(dir, e.name)).size), 0);
}

function startMs(exe) {
  for (let i = 0; i < 3; i++) execFileSync(exe, ['version']);
  const runs = 30;
  const begin = process.hrtime.bigint();
  for (let i = 0; i < runs; i++) execFileSync(exe, ['version']);
  return Number(process.hrtime.bigint() - begin) / 1e6 / runs;
}

/** Peak RSS in MiB, through GNU time's %M (KiB); runs asynchronously so the admin stub can answer. */
function peakRssMiB(exe, args) {
  return new Promise((resolvePeak) => {
    const proc = spawn('/usr/bin/time', ['-f', '%M', exe, ...args], { env: { ENVOY_SHUTDOWN_LOG: '/dev/null', PATH: process.env.PATH } });
    let err = '';
    proc.stderr.on('data', (c) => (err += c));
    proc.on('close', () => resolvePeak(Number(err.trim().split('\n').at(-1)) / 1024));
  });
}

function adminStub(socketPath) {
  const server = createServer((req, res) => {
    if (req.url === '/server_info') return res.end(JSON.stringify({ version: 'x/1.31.2/Clean/RELEASE/BoringSSL', state: 'LIVE' }));
    if (req.url.startsWith('/stats')) return res.end(JSON.stringify({ stats: [{ name: 'listener.0.0.0.0_8080.downstream_cx_active', value: 1 }] }));
    res.end('OK\n');
  });
  return new Promise((r) => server.listen(socketPath, () => r(server)));
}

const work = mkdtempSync(join(tmpdir(), 'envoy-shutdown-measure-'));
const socketPath = join(work, 'admin.sock');
const server = await adminStub(socketPath);
const results = [];
try {
  for (const runtime of ['bun', 'node-sea']) {
    const out = join(root, '.tmp', `envoy-shutdown-${runtime}`);
    execFileSync(process.execPath, [join(here, 'build-executable.mjs'), '--runtime', runtime, '--out', out], { stdio: 'ignore' });
    const exe = join(out, 'envoy-shutdown');
    const drainArgs = ['drain', '--admin', `unix:${socketPath}`, '--deadline', '3s', '--poll-interval', '100ms'];
    results.push({
      runtime,
      sizeMiB: +(sizeOf(out) / 2 ** 20).toFixed(1),
      startMs: +startMs(exe).toFixed(1),
      versionRssMiB: +(await peakRssMiB(exe, ['version'])).toFixed(1),
      drainRssMiB: +(await peakRssMiB(exe, drainArgs)).toFixed(1),
    });
  }
} finally {
  server.close();
  rmSync(work, { recursive: true, force: true });
}
console.table(results);
