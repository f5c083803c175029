/**
 * The platform on Node: what the unit tests run the program on. The shipped executable uses
 * quickjs.ts instead; both implement platform.ts with the same behaviour.
 */
import { closeSync, constants, copyFileSync, fchmodSync, fsyncSync, ftruncateSync, mkdirSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { connect } from 'node:net';
import { HANDLED_SIGNALS, longTimer, MAX_NODE_TIMER_MS, type FileSystem, type LogTarget, type OutputFile, type Platform, type RecordFile, type SocketAddress, type Stream, type StreamEvents } from './platform';

function errnoCode(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? 'EIO';
}

function nodeConnect(address: SocketAddress, events: StreamEvents): Stream {
  const socket = address.kind === 'unix' ? connect({ path: address.path }) : connect({ host: address.host, port: address.port });
  let closed = false;
  socket.on('connect', () => closed || events.connected());
  socket.on('data', (chunk: Buffer) => closed || events.data(chunk));
  socket.on('end', () => closed || events.end());
  socket.on('error', (error) => closed || events.failed(errnoCode(error), error.message));
  return {
    write: (bytes) => {
      socket.write(bytes);
    },
    close: () => {
      closed = true;
      socket.destroy();
    },
  };
}

/** A write to a non-blocking descriptor: the bytes it took, 0 when it can take none now. */
function tryWrite(fd: number, bytes: Uint8Array): number {
  try {
    return writeSync(fd, bytes);
  } catch (error) {
    if (errnoCode(error) === 'EAGAIN') return 0;
    throw error;
  }
}

/** Non-blocking writes through a descriptor of our own (see log.ts for why). */
function openOutput(target: LogTarget): OutputFile {
  const { O_WRONLY, O_APPEND, O_CREAT, O_NONBLOCK, O_NOCTTY } = constants;
  let fd: number;
  if (target.kind === 'path') {
    fd = openSync(target.path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_NOCTTY, 0o666);
  } else {
    const inherited = target.kind === 'stdout' ? 1 : 2;
    try {
      // A new open file description: O_NONBLOCK on it cannot affect whoever shares ours.
      fd = openSync(`/proc/self/fd/${inherited}`, O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY);
    } catch {
      fd = inherited;
    }
  }
  const owned = fd > 2;
  return {
    tryWrite: (bytes) => tryWrite(fd, bytes),
    close: () => {
      if (owned) closeSync(fd);
    },
  };
}

function openRecordFile(path: string): RecordFile {
  const { O_WRONLY, O_NONBLOCK, O_NOCTTY } = constants;
  const fd = openSync(path, O_WRONLY | O_NONBLOCK | O_NOCTTY);
  return {
    tryWrite: (bytes) => tryWrite(fd, bytes),
    truncate: (length) => ftruncateSync(fd, length),
    close: () => closeSync(fd),
  };
}

const files: FileSystem = {
  makeDirectory: (path, mode) => mkdirSync(path, { mode }),
  isDirectory: (path) => statSync(path).isDirectory(),
  copyToNewFile: (source, target, mode) => {
    copyFileSync(source, target);
    const fd = openSync(target, 'r+');
    try {
      fchmodSync(fd, mode);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  },
  rename: renameSync,
  remove: (path) => rmSync(path, { force: true }),
  syncDirectory: (path) => {
    const fd = openSync(path, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  },
};

const native = {
  set: (ms: number, callback: () => void) => setTimeout(callback, ms),
  clear: (handle: NodeJS.Timeout) => clearTimeout(handle),
  now: () => performance.now(),
  maxMs: MAX_NODE_TIMER_MS,
};

export const nodePlatform: Platform = {
  args: process.argv.slice(2),
  env: (name) => process.env[name],
  executablePath: () => process.execPath,
  pid: () => process.pid,
  now: () => performance.now(),
  setTimer: (ms, callback) => longTimer(ms, callback, native),
  clearTimer: (id) => (id as ReturnType<typeof longTimer>).cancel(),
  onSignals: (handler) => {
    for (const signal of HANDLED_SIGNALS) process.on(signal, () => handler(signal));
  },
  armHardDeadline: (ms) => {
    // Node cannot interrupt stuck JavaScript; an unreferenced timer is the closest it has.
    const timer = longTimer(ms, () => process.exit(0), { ...native, set: (delay, callback) => setTimeout(callback, delay).unref() });
    return { disarm: () => timer.cancel() };
  },
  connect: nodeConnect,
  latin1: (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1'),
  print: (stream, text) => {
    (stream === 'stdout' ? process.stdout : process.stderr).write(text);
  },
  openLogTarget: openOutput,
  openRecordFile,
  files,
  exit: (code) => process.exit(code),
};
