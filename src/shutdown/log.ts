import type { OutputFile, Platform } from './platform/platform';
import { utf8Encode } from './platform/utf8';

/**
 * Where the drain's JSON lines go. A preStop hook's own output is only visible in a FailedPreStopHook
 * event, so by default the lines are written to Envoy's stdout (`/proc/1/fd/1`: PID 1 of the container
 * is Envoy), which `kubectl logs` shows. If that cannot be opened (another PID namespace, another
 * user), stderr is used.
 *
 * `ENVOY_SHUTDOWN_LOG` overrides the target: `stderr`, `stdout`, or a file path (appended to). Tests
 * set it so that they never write into the test machine's PID 1.
 *
 * A log write never blocks the drain (docs/design.md, "The drain"): a pipe nobody reads (Envoy stuck,
 * a full container log pipe) would otherwise stop the program before its first admin call. Targets are
 * opened non-blocking; lines the target cannot take now wait in a bounded queue and are written at the
 * next line or at the end; past the bound they are dropped, counted, and the summary says how many.
 */
export const LOG_TARGET_ENV = 'ENVOY_SHUTDOWN_LOG';
const DEFAULT_TARGET = '/proc/1/fd/1';
/** Lines waiting for a slow target, at most (a drain writes a few kilobytes in all). */
export const MAX_QUEUED_LOG_BYTES = 64 * 1024;

export type LogFields = Record<string, unknown>;
export type Log = (phase: string, fields?: LogFields) => void;

export interface LogSink {
  /** Where lines go: `stderr`, `stdout` or the opened path (for tests and diagnostics). */
  readonly target: string;
  /** Lines given up so far (target full past the queue bound, or unwritable). */
  readonly droppedLines: number;
  write(line: string): void;
  close(): void;
}

type Opener = Pick<Platform, 'openLogTarget'>;

class NonBlockingSink implements LogSink {
  droppedLines = 0;
  private readonly queue: Uint8Array[] = [];
  private queuedBytes = 0;
  /** The first queued line was partly written: the rest must follow before anything else. */
  private headIsPartial = false;

  constructor(
    private readonly opener: Opener,
    private output: OutputFile | undefined,
    public target: string,
  ) {}

  write(line: string): void {
    this.flush();
    const bytes = utf8Encode(line);
    if (bytes.length === 0) return;
    if (!this.output || (this.queue.length > 0 && this.queuedBytes + bytes.length > MAX_QUEUED_LOG_BYTES)) {
      this.droppedLines++;
      return;
    }
    this.queue.push(bytes);
    this.queuedBytes += bytes.length;
    this.flush();
  }

  close(): void {
    this.flush();
    this.droppedLines += this.queue.length;
    this.queue.length = 0;
    this.output?.close();
    this.output = undefined;
  }

  /** Writes queued lines while the target takes them, never waiting for it. */
  private flush(): void {
    while (this.queue.length > 0 && this.output) {
      const head = this.queue[0] as Uint8Array;
      let written: number;
      try {
        written = this.output.tryWrite(head);
      } catch {
        this.fallBack();
        continue;
      }
      if (written === 0) return;
      this.queuedBytes -= written;
      if (written < head.length) {
        this.queue[0] = head.subarray(written);
        this.headIsPartial = true;
      } else {
        this.queue.shift();
        this.headIsPartial = false;
      }
    }
    if (!this.output) {
      this.droppedLines += this.queue.length;
      this.queue.length = 0;
      this.queuedBytes = 0;
    }
  }

  /** The target stopped accepting writes (e.g. Envoy exited): stderr from now on, or nothing. */
  private fallBack(): void {
    this.output?.close();
    this.output = undefined;
    if (this.target === 'stderr') return;
    this.target = 'stderr';
    if (this.headIsPartial) {
      // The rest of a line begun on the old target would be a torn line on the new one.
      this.queuedBytes -= (this.queue.shift() as Uint8Array).length;
      this.headIsPartial = false;
      this.droppedLines++;
    }
    try {
      this.output = this.opener.openLogTarget({ kind: 'stderr' });
    } catch {
      this.output = undefined;
    }
  }
}

/** Opens the log target named by `setting` (the ENVOY_SHUTDOWN_LOG value; unset: Envoy's stdout). */
export function openLogSink(opener: Opener, setting: string | undefined): LogSink {
  const target = setting || DEFAULT_TARGET;
  const open = (name: string): LogSink =>
    new NonBlockingSink(opener, opener.openLogTarget(name === 'stderr' || name === 'stdout' ? { kind: name } : { kind: 'path', path: name }), name);
  try {
    return open(target);
  } catch {
    try {
      return open('stderr');
    } catch {
      return new NonBlockingSink(opener, undefined, 'stderr');
    }
  }
}

/** One JSON object per line; `phase` names the step of the drain the line is about. */
export function createLog(sink: LogSink, now: () => Date = () => new Date()): Log {
  return (phase, fields = {}) => {
    // The summary says whether lines went missing, so a reader knows the log is incomplete.
    const extra = phase === 'summary' && sink.droppedLines > 0 ? { log_lines_dropped: sink.droppedLines } : {};
    const line = JSON.stringify({ time: now().toISOString(), logger: 'envoy-shutdown', phase, ...fields, ...extra });
    sink.write(`${line}\n`);
  };
}
