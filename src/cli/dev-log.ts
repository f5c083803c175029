/**
 * `serve --dev` on a terminal: pino's JSON lines turned into one readable line each
 * (`12:00:01.250 INFO  listening address=127.0.0.1 port=8443`), the level coloured unless NO_COLOR is
 * set, an error's stack below its line. Anywhere else (a pipe, a file, a container) the server writes
 * pino's JSON unchanged. A few lines of our own instead of pino-pretty and its dozen dependencies: the
 * server's lines are flat objects with one `err` at most.
 */
import { Writable } from 'node:stream';

const LEVELS: Record<number, { name: string; colour: string }> = {
  10: { name: 'TRACE', colour: '\u001b[90m' },
  20: { name: 'DEBUG', colour: '\u001b[36m' },
  30: { name: 'INFO ', colour: '\u001b[32m' },
  40: { name: 'WARN ', colour: '\u001b[33m' },
  50: { name: 'ERROR', colour: '\u001b[31m' },
  60: { name: 'FATAL', colour: '\u001b[35m' },
};
const RESET = '\u001b[0m';
/** Fields every line has, shown by position rather than as key=value. */
const FRAME = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'name']);

function formatValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}

/** One pino JSON line as text; a line that is not a JSON object is passed through as it is. */
export function formatDevLogLine(line: string, colour: boolean): string {
  let entry: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return `${line}\n`;
    entry = parsed as Record<string, unknown>;
  } catch {
    return `${line}\n`;
  }
  // isoTimeOncePerSecond's form (2026-12-01T12:00:01.250Z): the time of day is what a developer reads.
  const time = typeof entry.time === 'string' && /T(\d\d:\d\d:\d\d\.\d{3})Z$/.exec(entry.time)?.[1];
  const level = LEVELS[entry.level as number] ?? { name: String(entry.level).padEnd(5), colour: '' };
  const fields = Object.entries(entry)
    .filter(([key]) => !FRAME.has(key) && key !== 'err')
    .map(([key, value]) => `${key}=${formatValue(value)}`);
  const err = entry.err as { stack?: unknown; message?: unknown } | undefined;
  const stack = err && (typeof err.stack === 'string' ? err.stack : String(err.message));
  const head = [time || String(entry.time ?? ''), colour && level.colour ? `${level.colour}${level.name}${RESET}` : level.name, String(entry.msg ?? ''), ...fields];
  return `${head.filter((part) => part !== '').join(' ')}\n${stack ? `${stack.replace(/^/gm, '    ')}\n` : ''}`;
}

/** A destination for pino that writes formatted lines to `out`. */
export function devLogStream(out: NodeJS.WritableStream, colour: boolean): Writable {
  let pending = '';
  return new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop()!;
      out.write(lines.map((line) => formatDevLogLine(line, colour)).join(''));
      done();
    },
    final(done) {
      if (pending !== '') out.write(formatDevLogLine(pending, colour));
      done();
    },
  });
}
