/**
 * A root filesystem holding only glibc: the files of the host's Debian `libc6` package (libraries,
 * loader, their config), nothing else — the shape of `envoyproxy/envoy:distroless-*` minus Envoy.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, realpathSync, statSync, chmodSync } from 'node:fs';
import { dirname, join } from 'node:path';

export function hasGlibcRootTools(): boolean {
  try {
    execFileSync('dpkg', ['-L', 'libc6'], { stdio: 'ignore' });
    execFileSync('unshare', ['--version'], { stdio: 'ignore' });
    return process.getuid?.() === 0;
  } catch {
    return false;
  }
}

/** Files of the libc6 package, as dpkg lists them (directories left out). */
export function glibcFiles(): string[] {
  return execFileSync('dpkg', ['-L', 'libc6'], { encoding: 'utf8' })
    .split('\n')
    .filter((path) => path.startsWith('/') && path !== '/.')
    .filter((path) => {
      try {
        return !statSync(path).isDirectory(); // also drops directory links such as a merged-/usr /lib
      } catch {
        return false; // listed but not present (excluded by dpkg path filters)
      }
    });
}

/**
 * Copies each glibc file to the same path under `root`, resolving symlinks (the host may have merged
 * /usr, where /lib is itself a link), and creates the mount points a container always has.
 */
export function buildGlibcRoot(root: string): string[] {
  chmodSync(root, 0o755);
  const files = glibcFiles();
  for (const path of files) {
    const target = join(root, path);
    mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
    const source = realpathSync(path);
    copyFileSync(source, target);
    chmodSync(target, statSync(source).mode & 0o777);
  }
  for (const dir of ['proc', 'dev']) mkdirSync(join(root, dir), { mode: 0o755 });
  return files;
}

/** Mount points under `root` still mounted in this mount namespace. */
export function mountsUnder(root: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((mountPoint): mountPoint is string => mountPoint !== undefined && (mountPoint === root || mountPoint.startsWith(`${root}/`)));
}
