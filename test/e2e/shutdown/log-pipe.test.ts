/**
 * A log target nobody reads must never hold up the drain: a full pipe (Envoy's stdout when nothing
 * drains it) as the log target, made from a FIFO whose reader never reads. For each architecture.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { drainHarness, expectFailedThenDrained } from './harness';
import { parseLogLines, E2E_TARGETS } from '../../support/envoy/shutdown-executable';

/** A FIFO filled to capacity: its read end stays open here (so writers do not fail) but is not read. */
function fullPipe(path: string): { readEnd: number; filler: number } {
  execFileSync('mkfifo', [path]);
  const readEnd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const writeEnd = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
  let filler = 0;
  const block = Buffer.alloc(4096, 'x');
  try {
    for (;;) filler += writeSync(writeEnd, block);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
  } finally {
    closeSync(writeEnd);
  }
  return { readEnd, filler };
}

/** Everything in the pipe now (non-blocking reads until it is empty). */
function readAll(fd: number): string {
  const chunks: Buffer[] = [];
  const buffer = Buffer.alloc(65536);
  for (;;) {
    try {
      const n = readSync(fd, buffer);
      if (n === 0) break;
      chunks.push(Buffer.from(buffer.subarray(0, n)));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break;
      throw error;
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

describe.each(E2E_TARGETS)('$title', (target) => {
  const h = drainHarness(target, 'logpipe');
  const readEnds: number[] = [];
  afterEach(() => {
    for (const fd of readEnds.splice(0)) closeSync(fd);
  });

  test('a full log pipe nobody reads: the drain still runs and exits by itself', async () => {
    const path = join(h.workDir, 'never-read');
    const pipe = fullPipe(path);
    readEnds.push(pipe.readEnd);
    h.share(path);
    const sim = await h.simulator();
    const run = await h.drain(sim, ['--deadline', '30s', '--min-drain', '0s'], { ENVOY_SHUTDOWN_LOG: path }).finished;
    expect(run.code).toBe(0);
    // However many attempts /healthcheck/fail took under a 1 s request timeout on a loaded machine (its
    // log, which says why, went to the pipe nobody reads).
    expectFailedThenDrained(sim, '/drain_listeners?graceful&skip_exit');
    // It drained and exited: nothing of it waited for the pipe (it would still wait at the deadline).
    expect(sim.requests.filter((r) => /^\/stats/.test(r.path)).length).toBeGreaterThanOrEqual(2);
  });

  test('lines the pipe could not take follow once it is read, in order, ending with the summary', async () => {
    const path = join(h.workDir, 'read-late');
    const pipe = fullPipe(path);
    readEnds.push(pipe.readEnd);
    h.share(path);
    const sim = await h.simulator();
    const running = h.drain(sim, ['--deadline', '30s', '--min-drain', '1s', '--poll-interval', '200ms'], { ENVOY_SHUTDOWN_LOG: path });
    await sim.waitForRequest(/^\/healthcheck\/fail$/);
    let text = readAll(pipe.readEnd); // the filler, and whatever fitted after it
    const run = await running.finished;
    text += readAll(pipe.readEnd);
    expect(run.code).toBe(0);
    const lines = parseLogLines(text.slice(pipe.filler));
    // One healthcheck-fail line per attempt: a loaded machine may need more than one.
    const phases = lines.map((l) => l.phase).filter((phase, i, all) => !(phase === 'healthcheck-fail' && all[i - 1] === 'healthcheck-fail'));
    expect(phases.slice(0, 5)).toEqual(['start', 'healthcheck-fail', 'server-info', 'healthcheck-confirm', 'connections']);
    expect(lines.at(-1)).toMatchObject({ phase: 'summary', reason: 'drained' });
    expect(lines.at(-1)).not.toHaveProperty('log_lines_dropped');
  });
});
