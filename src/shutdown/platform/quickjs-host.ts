/**
 * The `host` global that runtime/host.c installs before the bundle runs: its functions, as TypeScript
 * sees them. Each function is documented where it is implemented; errors are thrown as `Error` with
 * `code` set to the errno name.
 */
export interface QuickJsHost {
  readonly args: string[];
  setTimer(ms: number, callback: () => void): number;
  clearTimer(id: number): void;
  monotonicMs(): number;
  watch(fd: number, readable: boolean, writable: boolean, callback: (readable: boolean, writable: boolean) => void): void;
  unwatch(fd: number): void;
  connectUnix(path: string): number;
  connectTcp(ipLiteral: string, port: number): number;
  connectResult(fd: number): string | null;
  /** Reads into `bytes`: how many bytes (0 at end of file), or -1 when a non-blocking fd has nothing yet. */
  readInto(fd: number, bytes: Uint8Array): number;
  /** One character per byte (Latin-1), nothing decoded. */
  latin1(bytes: Uint8Array): string;
  /** Bytes written (at most 4096), or -1 when the fd cannot take any now; never blocks. */
  tryWrite(fd: number, bytes: Uint8Array): number;
  writeAll(fd: number, bytes: Uint8Array): void;
  close(fd: number): void;
  open(path: string, flags: number, mode: number): number;
  fsync(fd: number): void;
  fchmod(fd: number, mode: number): void;
  ftruncate(fd: number, length: number): void;
  rename(from: string, to: string): void;
  unlink(path: string): void;
  mkdir(path: string, mode: number): void;
  isDirectory(path: string): boolean;
  getenv(name: string): string | undefined;
  executablePath(): string;
  pid(): number;
  exit(code: number): never;
  armHardDeadline(ms: number): void;
  disarmHardDeadline(): void;
  /** The read end of the pipe each forwarded signal's number is written to (see host.c). */
  openSignalPipe(): number;
  readonly SIGTERM: number;
  readonly SIGINT: number;
  readonly SIGHUP: number;
  readonly SIGUSR1: number;
  readonly SIGALRM: number;
  readonly O_RDONLY: number;
  readonly O_WRONLY: number;
  readonly O_CREAT: number;
  readonly O_TRUNC: number;
  readonly O_EXCL: number;
  readonly O_APPEND: number;
  readonly O_NONBLOCK: number;
  readonly O_NOCTTY: number;
  readonly O_DIRECTORY: number;
}

/** The host object, looked up when first needed (it exists only inside the static executable). */
export function quickJsHost(): QuickJsHost {
  const host = (globalThis as { host?: QuickJsHost }).host;
  if (!host) throw new Error('the QuickJS host object is missing: this code runs only inside the envoy-shutdown executable');
  return host;
}
