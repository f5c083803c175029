/**
 * `--tls-mode files`: follow a certificate and key on disk (cert-manager or a user Secret, mounted).
 * Kubernetes updates a Secret volume by writing a new timestamped directory and renaming the `..data`
 * symlink over the old one, so the files' own inodes never change: watching the *directories* catches
 * that rename as well as plain in-place writes. Events come in bursts, so reloads are debounced; the pair
 * is read and offered to `onChange` only when its content differs from what was last delivered, and the
 * receiver validates before swapping (a half-written pair is refused, the next event retries).
 *
 * A watch on a directory dies with the directory. So the parent of each watched directory is watched
 * too, for that one name: when the directory is deleted and created again (a deploy tool replacing
 * it), the watch on it is set up anew and the pair reloaded, without waiting for the poll.
 */
import { watch, readFileSync, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

export interface CertificateFiles {
  certPath: string;
  keyPath: string;
}

export interface WatchOptions extends CertificateFiles {
  /** Called with the new content; returns a reason when it refused the pair. */
  onChange: (pair: { cert: string; key: string }) => string | undefined;
  onError: (message: string) => void;
  debounceMs?: number;
  /** Safety net for filesystems where inotify misses events (some network and overlay mounts). */
  pollIntervalMs?: number;
}

export function readCertificateFiles({ certPath, keyPath }: CertificateFiles): { cert: string; key: string } {
  return { cert: readFileSync(certPath, 'utf8'), key: readFileSync(keyPath, 'utf8') };
}

export class CertificateFileWatcher {
  /** The watch on each certificate directory, by path (absent while the directory is missing). */
  private readonly directoryWatchers = new Map<string, FSWatcher>();
  private readonly parentWatchers: FSWatcher[] = [];
  private debounce: NodeJS.Timeout | undefined;
  private poll: NodeJS.Timeout | undefined;
  private delivered: string;
  private stopped = false;

  /** `initial` is the pair already in use, so an unchanged reload is a no-op. */
  constructor(
    private readonly options: WatchOptions,
    initial: { cert: string; key: string },
  ) {
    this.delivered = fingerprint(initial);
  }

  start(): void {
    const directories = new Set([dirname(this.options.certPath), dirname(this.options.keyPath)]);
    for (const directory of directories) {
      this.watchDirectory(directory);
      this.watchParentFor(directory);
    }
    this.poll = setInterval(() => this.reload(), this.options.pollIntervalMs ?? 60_000);
    this.poll.unref();
  }

  stop(): void {
    this.stopped = true;
    for (const watcher of [...this.directoryWatchers.values(), ...this.parentWatchers.splice(0)]) watcher.close();
    this.directoryWatchers.clear();
    clearTimeout(this.debounce);
    clearInterval(this.poll);
  }

  /** (Re)starts the watch on `directory`; a missing directory is left to its parent's watch. */
  private watchDirectory(directory: string): void {
    this.directoryWatchers.get(directory)?.close();
    this.directoryWatchers.delete(directory);
    if (this.stopped) return;
    let watcher: FSWatcher;
    try {
      watcher = watch(directory, () => this.schedule());
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.options.onError(`watching ${directory}: ${(error as Error).message}`);
      return;
    }
    watcher.on('error', (error) => {
      // The directory went away under the watch: its parent's watch brings it back.
      if (this.directoryWatchers.get(directory) === watcher) this.directoryWatchers.delete(directory);
      watcher.close();
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' && (error as NodeJS.ErrnoException).code !== 'EPERM') {
        this.options.onError(`watching ${directory}: ${error.message}`);
      }
    });
    this.directoryWatchers.set(directory, watcher);
  }

  private watchParentFor(directory: string): void {
    const name = basename(directory);
    let watcher: FSWatcher;
    try {
      watcher = watch(dirname(directory), (_event, changed) => {
        // Some platforms do not say which entry changed: then it may have been this one.
        if (changed !== null && changed !== name) return;
        this.watchDirectory(directory);
        this.schedule();
      });
    } catch (error) {
      this.options.onError(`watching ${dirname(directory)} for ${name}: ${(error as Error).message}`);
      return;
    }
    watcher.on('error', (error) => this.options.onError(`watching ${dirname(directory)} for ${name}: ${error.message}`));
    this.parentWatchers.push(watcher);
  }

  private schedule(): void {
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => this.reload(), this.options.debounceMs ?? 200);
  }

  private reload(): void {
    let pair: { cert: string; key: string };
    try {
      pair = readCertificateFiles(this.options);
    } catch (error) {
      this.options.onError(`reading certificate files: ${(error as Error).message}`);
      return;
    }
    const current = fingerprint(pair);
    if (current === this.delivered) return;
    const refused = this.options.onChange(pair);
    if (refused) this.options.onError(`new certificate files refused, keeping the current ones: ${refused}`);
    else this.delivered = current;
  }
}

function fingerprint(pair: { cert: string; key: string }): string {
  return `${pair.cert}\0${pair.key}`;
}
