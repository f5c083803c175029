/**
 * `--tls-mode files`: follow a certificate and key on disk (cert-manager or a user Secret, mounted).
 * Kubernetes updates a Secret volume by writing a new timestamped directory and renaming the `..data`
 * symlink over the old one, so the files' own inodes never change: watching the *directories* catches
 * that rename as well as plain in-place writes. Events come in bursts, so reloads are debounced; the pair
 * is read and offered to `onChange` only when its content differs from what was last delivered, and the
 * receiver validates before swapping (a half-written pair is refused, the next event retries).
 */
import { watch, readFileSync, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';

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
  private readonly watchers: FSWatcher[] = [];
  private debounce: NodeJS.Timeout | undefined;
  private poll: NodeJS.Timeout | undefined;
  private delivered: string;

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
      const watcher = watch(directory, () => this.schedule());
      watcher.on('error', (error) => this.options.onError(`watching ${directory}: ${error.message}`));
      this.watchers.push(watcher);
    }
    this.poll = setInterval(() => this.reload(), this.options.pollIntervalMs ?? 60_000);
    this.poll.unref();
  }

  stop(): void {
    for (const watcher of this.watchers.splice(0)) watcher.close();
    clearTimeout(this.debounce);
    clearInterval(this.poll);
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
