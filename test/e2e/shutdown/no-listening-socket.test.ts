/**
 * Security model (docs/design.md; GHSA-mjp8-x484-pm3r): `drain` never opens a listening socket.
 * The inspection is first shown able to see listeners, on a control process that does listen.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EnvoyAdminSimulator } from '../../support/envoy-admin-simulator';
import { listeningSocketsOf, socketInodes } from '../../support/envoy/listening-sockets';
import { ensureBuilt, installTo, ROOT, startProgram, stopStarted, TARGETS } from '../../support/envoy/shutdown-executable';

// A failed assertion must not leave a drain program running.
afterEach(stopStarted);

let workDir: string;
beforeAll(async () => {
  await ensureBuilt();
  workDir = mkdtempSync(join(tmpdir(), 'envoy-shutdown-nolisten-'));
}, 120_000);
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

test('control: the inspection detects TCP, UDP and unix listeners', async () => {
  const script = `
    const net = require('node:net'), dgram = require('node:dgram');
    net.createServer().listen(0, '127.0.0.1', () =>
      net.createServer().listen(${JSON.stringify(join(workDir, 'control.sock'))}, () =>
        dgram.createSocket('udp4').bind(0, '127.0.0.1', () => process.stdout.write('ready\\n'))));
    setInterval(() => {}, 1000);`;
  const control = spawn(join(ROOT, 'node_modules/.bin/node'), ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise((resolve) => control.stdout.once('data', resolve));
    const tables = listeningSocketsOf(control.pid as number).map((s) => s.table).sort();
    expect(tables).toEqual(['tcp', 'udp', 'unix']);
  } finally {
    control.kill('SIGKILL');
  }
});

test.each(TARGETS)('drain holds sockets while it runs, none of them listening ($title)', async (target) => {
  const sim = await EnvoyAdminSimulator.start({ unixSocketPath: join(workDir, `admin-${target.arch}.sock`) });
  const client: Socket = connect(sim.listenerPorts[0] as number, '127.0.0.1');
  // Slow stats answers keep the drain's admin connection open most of the time, so the samples below
  // reliably see the sockets it does hold.
  sim.faults.slow = { ms: 150, paths: /^\/stats$/ };
  try {
    const program = installTo(join(workDir, `install-${target.arch}`), target);
    const run = startProgram(target, program, ['drain', '--admin', sim.adminAddress, '--deadline', '2s', '--min-drain', '0s', '--poll-interval', '100ms']);
    const pid = run.child.pid as number;
    let exited = false;
    const finished = run.finished.then((r) => ((exited = true), r));
    await sim.waitForRequest(/^\/stats/);
    // Sample the process's sockets for the rest of its life (it polls every 100 ms until the deadline).
    let samples = 0;
    let sawSockets = false;
    while (!exited) {
      try {
        sawSockets ||= socketInodes(pid).size > 0;
        expect(listeningSocketsOf(pid)).toEqual([]);
        samples++;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error; // gone between checks
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect((await finished).code).toBe(0);
    expect(samples).toBeGreaterThan(10);
    expect(sawSockets).toBe(true);
  } finally {
    client.destroy();
    await sim.stop();
  }
});
