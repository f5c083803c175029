/**
 * The platform inside the static executable: platform.ts implemented on the `host` object of
 * runtime/host.c. It mirrors node.ts; where Node does something implicitly (buffering a write,
 * reporting a refused connection asynchronously), it is done here explicitly.
 */
import { utf8Encode } from './utf8';
import type { FileSystem, HandledSignal, LogTarget, OutputFile, Platform, RecordFile, SocketAddress, Stream, StreamEvents } from './platform';
import { quickJsHost, type QuickJsHost } from './quickjs-host';

/** Reads per readiness callback: a fast sender must not keep timers (the call's timeout) waiting. */
const READS_PER_WAKEUP = 4;
/**
 * Every read of the process goes into this one buffer, handed on as a view that is valid during the
 * callback only (StreamEvents.data says so): one allocation for the whole run instead of one per read.
 */
const readBuffer = new Uint8Array(64 * 1024);

function errnoCode(error: unknown): string {
  return typeof (error as { code?: unknown }).code === 'string' ? (error as { code: string }).code : 'EIO';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function connectStream(host: QuickJsHost, address: SocketAddress, events: StreamEvents): Stream {
  let fd = -1;
  let closed = false;
  let connected = false;
  /** Bytes written by the caller that the socket has not taken yet. */
  const pending: Uint8Array[] = [];

  const shutdown = (): void => {
    closed = true;
    if (fd >= 0) host.close(fd); // also forgets the watch
    fd = -1;
  };
  const fail = (code: string, message: string): void => {
    if (closed) return;
    shutdown();
    events.failed(code, message);
  };
  const flush = (): void => {
    while (pending.length > 0) {
      const head = pending[0] as Uint8Array;
      const written = host.tryWrite(fd, head);
      if (written < 0) return;
      if (written === head.length) pending.shift();
      else pending[0] = head.subarray(written);
    }
  };
  const rewatch = (): void => {
    if (!closed) host.watch(fd, connected, !connected || pending.length > 0, onReady);
  };
  function onReady(readable: boolean, writable: boolean): void {
    if (closed) return;
    try {
      if (!connected) {
        const refused = host.connectResult(fd);
        if (refused !== null) return fail(refused, `connect: ${refused}`);
        connected = true;
        events.connected();
        if (closed) return;
      }
      if (writable && pending.length > 0) flush();
      if (readable) {
        for (let i = 0; i < READS_PER_WAKEUP && !closed; i++) {
          const n = host.readInto(fd, readBuffer);
          if (n < 0) break;
          if (n === 0) {
            shutdown();
            events.end();
            return;
          }
          events.data(readBuffer.subarray(0, n));
        }
      }
      rewatch();
    } catch (error) {
      fail(errnoCode(error), messageOf(error));
    }
  }

  try {
    fd = address.kind === 'unix' ? host.connectUnix(address.path) : host.connectTcp(address.host, address.port);
    host.watch(fd, false, true, onReady);
  } catch (error) {
    // Like Node: a refused connection is reported as an event, never from inside connect().
    host.setTimer(0, () => fail(errnoCode(error), messageOf(error)));
  }
  return {
    write(bytes) {
      if (closed) return;
      pending.push(bytes);
      if (!connected) return;
      try {
        flush();
        rewatch();
      } catch (error) {
        host.setTimer(0, () => fail(errnoCode(error), messageOf(error)));
      }
    },
    close: shutdown,
  };
}

function openOutput(host: QuickJsHost, target: LogTarget): OutputFile {
  const flags = host.O_WRONLY | host.O_APPEND | host.O_NONBLOCK | host.O_NOCTTY;
  let fd: number;
  if (target.kind === 'path') {
    fd = host.open(target.path, flags | host.O_CREAT, 0o666);
  } else {
    const inherited = target.kind === 'stdout' ? 1 : 2;
    try {
      // A new open file description: O_NONBLOCK on it cannot affect whoever shares ours. Without
      // /proc (or for a socket) the inherited fd is used; host.tryWrite still never blocks on it.
      fd = host.open(`/proc/self/fd/${inherited}`, flags, 0);
    } catch {
      fd = inherited;
    }
  }
  return {
    tryWrite: (bytes) => Math.max(0, host.tryWrite(fd, bytes)),
    close: () => {
      if (fd > 2) host.close(fd);
    },
  };
}

function openRecordFile(host: QuickJsHost, path: string): RecordFile {
  const fd = host.open(path, host.O_WRONLY | host.O_NONBLOCK | host.O_NOCTTY, 0);
  return {
    tryWrite: (bytes) => Math.max(0, host.tryWrite(fd, bytes)),
    truncate: (length) => host.ftruncate(fd, length),
    close: () => host.close(fd),
  };
}

function fileSystem(host: QuickJsHost): FileSystem {
  return {
    makeDirectory: (path, mode) => host.mkdir(path, mode),
    isDirectory: (path) => host.isDirectory(path),
    copyToNewFile(source, target, mode) {
      const input = host.open(source, host.O_RDONLY, 0);
      try {
        const output = host.open(target, host.O_WRONLY | host.O_CREAT | host.O_TRUNC, 0o600);
        try {
          for (;;) {
            const n = host.readInto(input, readBuffer);
            if (n < 0) throw new Error(`reading ${source}: no data on a regular file`);
            if (n === 0) break;
            host.writeAll(output, readBuffer.subarray(0, n));
          }
          host.fchmod(output, mode);
          host.fsync(output);
        } finally {
          host.close(output);
        }
      } finally {
        host.close(input);
      }
    },
    rename: (from, to) => host.rename(from, to),
    remove: (path) => {
      try {
        host.unlink(path);
      } catch (error) {
        if (errnoCode(error) !== 'ENOENT') throw error;
      }
    },
    syncDirectory(path) {
      const fd = host.open(path, host.O_RDONLY | host.O_DIRECTORY, 0);
      try {
        host.fsync(fd);
      } finally {
        host.close(fd);
      }
    },
  };
}

function onSignals(host: QuickJsHost, handler: (signal: HandledSignal) => void): void {
  const names = new Map<number, HandledSignal>([
    [host.SIGTERM, 'SIGTERM'],
    [host.SIGINT, 'SIGINT'],
    [host.SIGHUP, 'SIGHUP'],
    [host.SIGUSR1, 'SIGUSR1'],
    [host.SIGALRM, 'SIGALRM'],
  ]);
  const fd = host.openSignalPipe();
  host.watch(fd, true, false, () => {
    for (;;) {
      const n = host.readInto(fd, readBuffer);
      if (n <= 0) return;
      for (const number of readBuffer.subarray(0, n)) {
        const name = names.get(number);
        if (name !== undefined) handler(name);
      }
    }
  });
}

export function quickJsPlatform(): Platform {
  const host = quickJsHost();
  return {
    args: host.args,
    env: (name) => host.getenv(name),
    executablePath: () => host.executablePath(),
    pid: () => host.pid(),
    now: () => host.monotonicMs(),
    // host.c keeps timers as 64-bit milliseconds and clamps what it is given: no overflow to re-arm.
    setTimer: (ms, callback) => host.setTimer(ms, callback),
    clearTimer: (id) => host.clearTimer(id as number),
    onSignals: (handler) => onSignals(host, handler),
    armHardDeadline: (ms) => {
      host.armHardDeadline(ms);
      return { disarm: () => host.disarmHardDeadline() };
    },
    connect: (address, events) => connectStream(host, address, events),
    latin1: (bytes) => host.latin1(bytes),
    print: (stream, text) => host.writeAll(stream === 'stdout' ? 1 : 2, utf8Encode(text)),
    openLogTarget: (target) => openOutput(host, target),
    openRecordFile: (path) => openRecordFile(host, path),
    files: fileSystem(host),
    exit: (code) => host.exit(code),
  };
}
