/**
 * Child processes for benchmarks: every process started here is killed when the benchmark ends, however
 * it ends (normal exit, thrown error, Ctrl-C), so a failed run never leaves a server holding a port or a
 * core on a shared machine.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';

const running = new Set<ChildProcess>();

function killAll(): void {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
}

process.on('exit', killAll);
for (const [signal, number] of [['SIGINT', 2], ['SIGTERM', 15]] as const) {
  process.on(signal, () => {
    killAll();
    process.exit(128 + number);
  });
}

/** Spawns a child that is killed at the latest when this process exits. */
export function spawnTracked(command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** Resolves once the child has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** SIGTERM, then SIGKILL if the child is still there after `graceMs`. */
export async function stopProcess(child: ChildProcess, graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited(child);
  clearTimeout(timer);
}

/**
 * Resolves with the first stdout line `match` returns a value for. Rejects if the child exits first or
 * nothing matches within `timeoutMs`; stderr is kept for the error message.
 */
export function waitForLine<T>(child: ChildProcess, match: (line: string) => T | undefined, timeoutMs = 15000): Promise<T> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    let stderr = '';
    const onStderr = (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000));
    const finish = (settle: () => void) => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onStderr);
      child.off('exit', onExit);
      settle();
    };
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        const value = match(line);
        if (value !== undefined) return finish(() => resolve(value));
      }
    };
    const onExit = (code: number | null) => finish(() => reject(new Error(`process exited (${code}) before it was ready; stderr:\n${stderr}`)));
    const timer = setTimeout(() => finish(() => reject(new Error(`process not ready after ${timeoutMs} ms; stderr:\n${stderr}`))), timeoutMs);
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onStderr);
    child.once('exit', onExit);
  });
}

/**
 * Like `waitForLine`, for a child whose stdout goes to a file: polls the file until a line matches.
 * Rejects if the child exits first or nothing matches within `timeoutMs`.
 */
export async function waitForFileLine<T>(child: ChildProcess, path: string, match: (line: string) => T | undefined, timeoutMs = 15000): Promise<T> {
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const giveUpAt = Date.now() + timeoutMs;
  for (;;) {
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      const value = match(line);
      if (value !== undefined) return value;
    }
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`process exited (${child.exitCode}) before it was ready; stderr:\n${stderr}`);
    if (Date.now() > giveUpAt) throw new Error(`process not ready after ${timeoutMs} ms; stderr:\n${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Keeps reading a child's output so a full pipe never blocks it (servers log every request). */
export function discardOutput(child: ChildProcess): void {
  child.stdout?.resume();
  child.stderr?.resume();
}

const USER_HZ = 100;

/**
 * CPU time (user + system) a process has used so far, in seconds, from /proc/PID/stat; undefined once it
 * is gone. Fields 14 and 15 count clock ticks of USER_HZ, which Linux fixes at 100 on every architecture
 * Node supports. The command name (field 2) may contain spaces, so fields are counted after its ")".
 */
export function readCpuSeconds(pid: number): number | undefined {
  const stat = readProcFile(pid, 'stat');
  if (stat === undefined) return undefined;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the name, field 3 (state) is index 0: utime (14) is index 11, stime (15) index 12.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? ticks / USER_HZ : undefined;
}

/** /proc/PID/<name>, or undefined once the process is gone. */
function readProcFile(pid: number, name: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/${name}`, 'utf8');
  } catch {
    return undefined;
  }
}

export interface MemoryReading {
  /** Resident set size now, KiB. */
  rssKiB: number;
  /** Peak resident set size since the process started (VmHWM), KiB. */
  peakKiB: number;
}

/** RSS and its high-water mark from /proc; undefined once the process is gone. */
export function readMemory(pid: number): MemoryReading | undefined {
  const status = readProcFile(pid, 'status');
  if (status === undefined) return undefined;
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  const reading = { rssKiB: field('VmRSS'), peakKiB: field('VmHWM') };
  // A zombie has no memory fields left: treat it as gone.
  return Number.isNaN(reading.rssKiB) ? undefined : reading;
}

/**
 * Samples a process's memory every `intervalMs` until it exits (or `stop()` is called), keeping the last
 * reading: VmHWM makes the peak exact even between samples.
 */
export function sampleMemory(pid: number, intervalMs = 10): { last: () => MemoryReading | undefined; stop: () => void } {
  let last = readMemory(pid);
  const timer = setInterval(() => {
    const reading = readMemory(pid);
    if (reading === undefined) clearInterval(timer);
    else last = reading;
  }, intervalMs);
  return { last: () => last, stop: () => clearInterval(timer) };
}
