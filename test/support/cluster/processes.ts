/**
 * The test cluster's processes. Each is started through util-linux's `setpriv --pdeathsig KILL`, so the
 * kernel kills it when the process that started it dies, however that one ends (a crash, SIGKILL, a
 * jest timeout): no control-plane process outlives its owner. Output goes to a log file per process,
 * whose end is quoted when the process fails to start.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';

export interface ManagedProcess {
  name: string;
  child: ChildProcess;
  logFile: string;
  /** Resolves when the process has exited (with its code or signal). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it exited. */
  stop(graceMs?: number): Promise<void>;
  running(): boolean;
}

export function startProcess(
  name: string,
  command: string,
  args: readonly string[],
  logFile: string,
  options: { env?: NodeJS.ProcessEnv; cwd?: string; wrap?: (argv: string[]) => string[] } = {},
): ManagedProcess {
  const fd = openSync(logFile, 'a');
  const inner = [command, ...args];
  const argv = ['setpriv', '--pdeathsig', 'KILL', '--', ...(options.wrap ? options.wrap(inner) : inner)];
  const spawnOptions: SpawnOptions = { stdio: ['ignore', fd, fd], env: options.env ?? process.env, cwd: options.cwd };
  const child = spawn(argv[0]!, argv.slice(1), spawnOptions);
  closeSync(fd);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', () => resolve({ code: null, signal: null }));
  });
  let done = false;
  void exited.then(() => (done = true));
  return {
    name,
    child,
    logFile,
    exited,
    running: () => !done,
    async stop(graceMs = 10_000) {
      if (done) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The last lines of a process's log, for an error message. */
export function logTail(process: ManagedProcess, lines = 30): string {
  try {
    const text = readFileSync(process.logFile, 'utf8').trimEnd().split('\n');
    return text.slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * Polls `probe` until it answers true. Fails as soon as `process` exits (with its log's end), or after
 * `limitMs` (a bound for a component that hangs, far above any start time seen; not a timing assertion).
 */
export async function waitUntil(
  what: string,
  probe: () => Promise<boolean>,
  options: { process?: ManagedProcess; limitMs?: number; intervalMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + (options.limitMs ?? 180_000);
  for (;;) {
    if (options.process && !options.process.running()) {
      throw new Error(`${options.process.name} exited while waiting for ${what}; its log (${options.process.logFile}) ends:\n${logTail(options.process)}`);
    }
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) {
      const tail = options.process ? `; ${options.process.name}'s log ends:\n${logTail(options.process)}` : '';
      throw new Error(`gave up waiting for ${what}${tail}`);
    }
    const interval = options.intervalMs ?? 100;
    await Promise.race([new Promise((resolve) => setTimeout(resolve, interval)), ...(options.process ? [options.process.exited] : [])]);
  }
}

/** Is process `pid` alive (ours or another user's)? */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
