/**
 * A command's output is never lost, however its reader reads: stdout is a pipe that is full when the
 * program starts (and non-blocking, a description it shares with the writer that filled it), its answer
 * is larger than the pipe holds, and the reader takes 512 bytes at a time. The program must wait for room
 * (host.writeAll polls on EAGAIN) and exit only once all of it is written.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EnvoyAdminSimulator } from '../../support/envoy-admin-simulator';
import { commandFor, TARGETS } from '../../support/envoy/shutdown-executable';

/** Writes `fd` full (it is non-blocking); returns how many bytes it took. */
function fill(fd: number): number {
  const filler = Buffer.alloc(4096, 'f');
  let filled = 0;
  for (;;) {
    try {
      filled += writeSync(fd, filler);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return filled;
      throw error;
    }
  }
}

describe.each(TARGETS)('$title', (target) => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  test('status --json into a full non-blocking pipe read 512 bytes at a time: every byte arrives, then the exit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'drainguard-output-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const sim = await EnvoyAdminSimulator.start({ unixSocketPath: join(dir, 'admin.sock'), idleListeners: 1000 });
    cleanups.push(() => sim.stop());
    const fifo = join(dir, 'stdout');
    execFileSync('mkfifo', [fifo]);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    cleanups.push(() => closeSync(reader));
    const writer = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
    const filled = fill(writer);

    const [command, args] = commandFor(target, target.built, ['status', '--admin', sim.adminAddress, '--json']);
    const child = spawn(command, args, { stdio: ['ignore', writer, 'pipe'] });
    closeSync(writer);
    cleanups.push(() => {
      child.kill('SIGKILL');
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    let exitCode: number | null | undefined;
    child.on('exit', (code) => (exitCode = code));

    // Read until end of file (the program's end of the pipe closes when it exits), 512 bytes a turn.
    const pieces: Buffer[] = [];
    const piece = Buffer.alloc(512);
    for (;;) {
      let n: number;
      try {
        n = readSync(reader, piece, 0, piece.length, null);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
        n = -1;
      }
      if (n === 0) break;
      if (n > 0) pieces.push(Buffer.from(piece.subarray(0, n)));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await new Promise((resolve) => (exitCode === undefined ? child.on('close', resolve) : resolve(undefined)));

    const all = Buffer.concat(pieces);
    expect({ code: exitCode, stderr }).toEqual({ code: 0, stderr: '' });
    expect(all.subarray(0, filled).every((b) => b === 0x66)).toBe(true);
    const json = all.subarray(filled).toString('utf8');
    // Larger than the pipe holds: the program had to wait for the reader, whatever the timing.
    expect(json.length).toBeGreaterThan(filled);
    const status = JSON.parse(json) as { listeners: unknown[]; listenersNotShown: number };
    expect(status).toMatchObject({ state: 'LIVE', envoyVersion: '1.31.2', activeConnections: 0 });
    // The simulator's default listener, the 1,000 idle ones and the admin listener.
    expect(status.listeners.length + status.listenersNotShown).toBe(1002);
  }, 120_000);
});
