/**
 * Everything envoy-shutdown needs from the system it runs on, as one small interface. The program is
 * written once against it and runs on two implementations:
 *
 *   - `node.ts`: Node's modules. Used by the unit tests (and anything else that imports the sources).
 *   - `quickjs.ts`: the `host` object of our QuickJS host (runtime/host.c). This is what ships: the
 *     static executable built by build/build-executable.mjs.
 *
 * Nothing else in src/shutdown may import a Node module (a unit test checks the imports, and the
 * QuickJS bundle cannot resolve them). HTTP, log buffering and install logic are shared TypeScript
 * on top of this interface, so both implementations behave the same way by construction.
 */

/** Where a stream connects: a unix socket path, or a TCP IP literal (never a name to resolve). */
export type SocketAddress = { kind: 'unix'; path: string } | { kind: 'tcp'; host: string; port: number };

/** Callbacks of one client connection; none is ever called synchronously from `connect`. */
export interface StreamEvents {
  connected(): void;
  /** Bytes that arrived; valid during the call only (the QuickJS platform reuses its read buffer): copy what you keep. */
  data(bytes: Uint8Array): void;
  /** The peer closed its side (end of file). */
  end(): void;
  /** The connection failed; `code` is the errno name (`ECONNREFUSED`, `ENOENT`, `ECONNRESET`, ...). */
  failed(code: string, message: string): void;
}

export interface Stream {
  write(bytes: Uint8Array): void;
  /** Closes at once; no event is delivered afterwards. */
  close(): void;
}

/** A descriptor for log lines that never blocks the caller. */
export interface OutputFile {
  /** Writes a prefix of `bytes` if the target can take it now; returns how many bytes (0: none). */
  tryWrite(bytes: Uint8Array): number;
  close(): void;
}

export type LogTarget = { kind: 'stdout' } | { kind: 'stderr' } | { kind: 'path'; path: string };

/** A file rewritten in place (the drain record): written from its start, never blocking, then cut to length. */
export interface RecordFile extends OutputFile {
  /** Sets the file's length (ftruncate): what a shorter text leaves of a longer one goes. */
  truncate(length: number): void;
}

export interface FileSystem {
  /** Creates one directory level; throws with `code` (EEXIST, ENOENT, EACCES, ENOTDIR, EROFS, ...). */
  makeDirectory(path: string, mode: number): void;
  isDirectory(path: string): boolean;
  /** Creates (or truncates) `target`, copies `source` into it, sets `mode`, fsyncs and closes it. */
  copyToNewFile(source: string, target: string, mode: number): void;
  rename(from: string, to: string): void;
  remove(path: string): void;
  /** fsync of a directory, so renames inside it are durable. */
  syncDirectory(path: string): void;
}

export type TimerId = unknown;

/**
 * The signals the drain handles itself (main.ts says what each does). SIGALRM here is one sent from
 * outside: the hard deadline's own SIGALRM never reaches JavaScript.
 */
export const HANDLED_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGUSR1', 'SIGALRM'] as const;
export type HandledSignal = (typeof HANDLED_SIGNALS)[number];

export interface Platform {
  /** Command-line arguments after the program's own name. */
  readonly args: readonly string[];
  env(name: string): string | undefined;
  /** Absolute path of the running executable (for `install`). */
  executablePath(): string;
  pid(): number;
  /** Milliseconds on a monotonic clock; only differences mean something. */
  now(): number;
  /**
   * Runs `callback` once after `ms` milliseconds. Any duration is honoured: implementations clamp what
   * their underlying timer can hold and re-arm, so a long timer never fires early (Node's setTimeout
   * fires after 1 ms for anything above 2^31-1 ms).
   */
  setTimer(ms: number, callback: () => void): TimerId;
  clearTimer(id: TimerId): void;
  /**
   * From now on the HANDLED_SIGNALS no longer end the process by their default action: each calls
   * `handler` instead, from the event loop (never inside a signal handler).
   */
  onSignals(handler: (signal: HandledSignal) => void): void;
  /** Ends the process with status 0 after `ms`, even if JavaScript is stuck by then, unless disarmed. */
  armHardDeadline(ms: number): { disarm(): void };
  connect(address: SocketAddress, events: StreamEvents): Stream;
  /**
   * The characters of `bytes`, one per byte (Latin-1: U+0000–U+00FF), nothing decoded. The stats scanner
   * reads each piece of an answer through this; natively on both platforms, as it is on every poll's path.
   */
  latin1(bytes: Uint8Array): string;
  /** A command's own output (status table, usage, errors); may wait for a slow reader. */
  print(stream: 'stdout' | 'stderr', text: string): void;
  /** Opens a log target for non-blocking writes; throws with `code` when it cannot be opened. */
  openLogTarget(target: LogTarget): OutputFile;
  /**
   * Opens an existing file for non-blocking writes from its start (no O_CREAT, no O_APPEND: the kubelet
   * creates the termination message file); throws with `code` (ENOENT, EACCES, ENXIO for a FIFO nobody
   * reads, ...) when it cannot be opened.
   */
  openRecordFile(path: string): RecordFile;
  readonly files: FileSystem;
  exit(code: number): never;
}

/** Node's largest timer (2^31-1 ms, ~24.8 days); larger values overflow to 1 ms. */
export const MAX_NODE_TIMER_MS = 2 ** 31 - 1;

/** A duration as a timer can take it: finite, at least 0 (NaN and negatives become 0). */
export function timerDuration(ms: number): number {
  if (!(ms > 0)) return 0;
  return Math.min(ms, Number.MAX_SAFE_INTEGER);
}

/**
 * A timer of any length on top of one whose maximum is `maxMs`: it waits in steps of at most `maxMs`,
 * re-arming until the full duration has passed on `now`'s clock.
 */
export function longTimer<Handle>(
  ms: number,
  callback: () => void,
  native: { set(ms: number, callback: () => void): Handle; clear(handle: Handle): void; now(): number; maxMs: number },
): { cancel(): void } {
  const due = native.now() + timerDuration(ms);
  let handle: Handle;
  const arm = (): void => {
    const left = due - native.now();
    if (left <= 0) {
      callback();
      return;
    }
    handle = native.set(Math.min(Math.ceil(left), native.maxMs), arm);
  };
  handle = native.set(Math.min(Math.ceil(timerDuration(ms)), native.maxMs), arm);
  return { cancel: () => native.clear(handle) };
}

/** A promise that settles after `ms` on `platform`'s timers. */
export function sleep(platform: Pick<Platform, 'setTimer'>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    platform.setTimer(ms, resolve);
  });
}
