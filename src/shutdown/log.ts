import { closeSync, openSync, writeSync } from 'node:fs';

/**
 * Where the drain's JSON lines go. A preStop hook's own output is only visible in a FailedPreStopHook
 * event, so by default the lines are written to Envoy's stdout (`/proc/1/fd/1`: PID 1 of the container
 * is Envoy), which `kubectl logs` shows. If that cannot be opened (another PID namespace, another
 * user), stderr is used.
 *
 * `ENVOY_SHUTDOWN_LOG` overrides the target: `stderr`, `stdout`, or a file path (appended to). Tests
 * set it so that they never write into the test machine's PID 1.
 */
export const LOG_TARGET_ENV = 'ENVOY_SHUTDOWN_LOG';
const DEFAULT_TARGET = '/proc/1/fd/1';

export type LogFields = Record<string, unknown>;
export type Log = (phase: string, fields?: LogFields) => void;

export interface LogSink {
  /** Where lines go: `stderr`, `stdout` or the opened path (for tests and diagnostics). */
  readonly target: string;
  write(line: string): void;
  close(): void;
}

function fdSink(fd: number, owned: boolean, target: string): LogSink {
  return {
    target,
    write: (line) => {
      writeSync(fd, line);
    },
    close: () => {
      if (owned) closeSync(fd);
    },
  };
}

export function openLogSink(env: NodeJS.ProcessEnv = process.env): LogSink {
  const target = env[LOG_TARGET_ENV] || DEFAULT_TARGET;
  if (target === 'stderr') return fdSink(2, false, 'stderr');
  if (target === 'stdout') return fdSink(1, false, 'stdout');
  try {
    return withFallback(fdSink(openSync(target, 'a'), true, target));
  } catch {
    return fdSink(2, false, 'stderr');
  }
}

/** A sink that falls back to stderr for good if its target stops accepting writes (e.g. Envoy exited). */
function withFallback(primary: LogSink): LogSink {
  let active = primary;
  return {
    get target() {
      return active.target;
    },
    write(line) {
      try {
        active.write(line);
      } catch {
        active = fdSink(2, false, 'stderr');
        active.write(line);
      }
    },
    close: () => active.close(),
  };
}

/** One JSON object per line; `phase` names the step of the drain the line is about. */
export function createLog(sink: LogSink, now: () => Date = () => new Date()): Log {
  return (phase, fields = {}) => {
    const line = JSON.stringify({ time: now().toISOString(), logger: 'envoy-shutdown', phase, ...fields });
    sink.write(`${line}\n`);
  };
}
