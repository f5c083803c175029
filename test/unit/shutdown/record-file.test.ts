/**
 * The drain record written to a termination message file (src/shutdown/record-file.ts), on real files
 * and FIFOs through the Node platform: rewritten in place and cut to length, never created, never
 * waiting for a reader, and within the per-container share of the kubelet's per-pod budget.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readDrainRecord, type FinishedRecord, type StartedRecord } from '../../../src/drain-record';
import { nodePlatform } from '../../../src/shutdown/platform/node';
import { RECORD_BUDGET_BYTES, RECORD_WHOLE_UP_TO_CONTAINERS, recordFileSink } from '../../../src/shutdown/record-file';

const started: StartedRecord = { state: 'started', version: '0.1.0', startedAt: '2026-12-01T21:00:00.000Z', deadlineMs: 290_000 };
const finished = (openListeners: number): FinishedRecord => ({
  ...started,
  state: 'finished',
  reason: 'deadline',
  durationMs: 290_000,
  connectionsAtStart: 1200,
  connectionsAtEnd: 1000 * openListeners,
  openListeners: Array.from({ length: openListeners }, (_, i) => ({ name: `listener_with_a_long_name_${String(i).padStart(4, '0')}`, connections: 1000 - i })),
  openListenersOmitted: 0,
  healthcheckFailedAtMs: 12,
  envoyVersion: '1.31.2',
});

let dir = '';
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'record-file-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('recordFileSink', () => {
  test('rewrites the file in place: the finished record replaces the started one, nothing of a longer old text is left', () => {
    const path = join(dir, 'termination-log');
    writeFileSync(path, 'x'.repeat(5000)); // longer than anything written
    const sink = recordFileSink(nodePlatform, path);
    expect(sink.write(started)).toEqual({ ok: true, bytes: readFileSync(path).length });
    expect(readDrainRecord(readFileSync(path, 'utf8'))).toEqual({ kind: 'record', record: started });
    const outcome = sink.write(finished(2));
    expect(outcome.ok).toBe(true);
    expect(readDrainRecord(readFileSync(path, 'utf8'))).toEqual({ kind: 'record', record: finished(2) });
  });

  test('never creates the file: the kubelet does, so a missing one is an error that names it', () => {
    const path = join(dir, 'absent');
    const outcome = recordFileSink(nodePlatform, path).write(started);
    expect(outcome).toEqual({ ok: false, error: expect.stringContaining('ENOENT') });
    expect(existsSync(path)).toBe(false);
  });

  test('a FIFO nobody reads is refused at once (ENXIO), without waiting for a reader', () => {
    const path = join(dir, 'fifo');
    execFileSync('mkfifo', [path]);
    expect(recordFileSink(nodePlatform, path).write(started)).toEqual({ ok: false, error: expect.stringContaining('ENXIO') });
  });

  test('a FIFO whose reader does not read, its buffer full, is given up at once', () => {
    const path = join(dir, 'fifo');
    execFileSync('mkfifo', [path]);
    const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const filler = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
    try {
      const block = Buffer.alloc(65536, 0x61);
      for (;;) {
        try {
          if (writeSync(filler, block) === 0) break;
        } catch {
          break; // EAGAIN: the pipe is full
        }
      }
      expect(recordFileSink(nodePlatform, path).write(started)).toEqual({ ok: false, error: expect.stringMatching(/cannot take the record now|EAGAIN/) });
    } finally {
      closeSync(filler);
      closeSync(reader);
    }
  });

  test(`any record fits the share of a pod of ${RECORD_WHOLE_UP_TO_CONTAINERS} containers, and reads back whole`, () => {
    expect(RECORD_BUDGET_BYTES * RECORD_WHOLE_UP_TO_CONTAINERS).toBeLessThanOrEqual(12 * 1024);
    const path = join(dir, 'termination-log');
    writeFileSync(path, '');
    const many = finished(200);
    const outcome = recordFileSink(nodePlatform, path).write(many);
    expect(outcome.ok && outcome.bytes).toBeLessThanOrEqual(RECORD_BUDGET_BYTES);
    const reading = readDrainRecord(readFileSync(path, 'utf8'));
    if (reading.kind !== 'record' || reading.record.state !== 'finished') throw new Error(`not a finished record: ${JSON.stringify(reading)}`);
    expect(reading.record.openListeners.length).toBeGreaterThan(5);
    expect(reading.record.openListeners.length + reading.record.openListenersOmitted).toBe(200);
  });
});
