/**
 * Root filesystems as Envoy images give them to the drain program, built from this machine's Debian
 * packages: `empty` (nothing but mount points, like a scratch image) and `glibc` (the files of a glibc
 * package and nothing else, the shape of `envoyproxy/envoy:distroless-*` minus Envoy). For another
 * architecture's executable the root also holds Debian's static qemu-user binary, which runs it.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
/** What a root needs to know of the executable it will run: the qemu-user binary, if emulated. */
export interface RootTarget {
  emulator: string | undefined;
}

export type RootKind = 'empty' | 'glibc';

export function hasRootTools(): boolean {
  try {
    execFileSync('dpkg', ['--version'], { stdio: 'ignore' });
    execFileSync('unshare', ['--version'], { stdio: 'ignore' });
    return process.getuid?.() === 0;
  } catch {
    return false;
  }
}

/** Files of a Debian package as dpkg lists them (directories left out). */
function packageFiles(pkg: string): string[] {
  return execFileSync('dpkg', ['-L', pkg], { encoding: 'utf8' })
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

/** glibc for `arch`, as (path on this machine → path in the root) pairs. */
function glibcFiles(target: RootTarget): [string, string][] {
  if (!target.emulator) return packageFiles('libc6').map((path) => [path, path]);
  // Debian's cross package keeps the arm64 glibc under /usr/aarch64-linux-gnu/lib; an arm64 image has
  // it in /lib/aarch64-linux-gnu, with the loader also at /lib/ld-linux-aarch64.so.1.
  const files = packageFiles('libc6-arm64-cross').filter((path) => path.startsWith('/usr/aarch64-linux-gnu/lib/'));
  const placed: [string, string][] = files.map((path) => [path, `/lib/aarch64-linux-gnu/${path.slice('/usr/aarch64-linux-gnu/lib/'.length)}`]);
  const loader = files.find((path) => path.endsWith('/ld-linux-aarch64.so.1'));
  if (loader) placed.push([loader, '/lib/ld-linux-aarch64.so.1']);
  return placed;
}

/**
 * Fills `root` (an empty directory) and returns the paths placed in it. Every root gets the mount
 * points a container always has (/proc, /dev), /admin for Envoy's admin socket, and, for an emulated
 * target, /usr/bin/qemu-<arch>-static.
 */
export function buildRoot(root: string, kind: RootKind, target: RootTarget): string[] {
  chmodSync(root, 0o755);
  const placed: string[] = [];
  const place = (source: string, path: string): void => {
    const destination = join(root, path);
    mkdirSync(dirname(destination), { recursive: true, mode: 0o755 });
    const real = realpathSync(source);
    copyFileSync(real, destination);
    chmodSync(destination, statSync(real).mode & 0o777);
    placed.push(path);
  };
  if (kind === 'glibc') for (const [source, path] of glibcFiles(target)) place(source, path);
  if (target.emulator) place(execFileSync('sh', ['-c', `command -v ${target.emulator}`], { encoding: 'utf8' }).trim(), `/usr/bin/${target.emulator}`);
  for (const dir of ['proc', 'dev', 'admin']) mkdirSync(join(root, dir), { mode: 0o755 });
  return placed;
}

/** How a root is given to the program, as a container runtime gives an image and its volumes. */
export interface RootMounts {
  /** The root itself read-only (`readOnlyRootFilesystem: true`). */
  readOnly?: boolean;
  /**
   * Writable paths inside the root, each bound from a path outside it (a volume, the kubelet's
   * termination message file): `[outside, inside]`. The path inside must exist in the root.
   */
  binds?: readonly (readonly [string, string])[];
  /** A network namespace of its own, with no interface up, not even loopback (`unshare --net`). */
  noNetwork?: boolean;
}

/**
 * The command that runs `args` (a program inside `root`, by its path there) chrooted as uid:gid `user`.
 * `mounts` false: nothing is mounted, not even /proc (the program must not need it).
 */
export function inRootCommand(root: string, target: RootTarget, user: string, args: string[], mounts = true, given: RootMounts = {}): [string, string[]] {
  const program = target.emulator ? [`/usr/bin/${target.emulator}`, ...args] : args;
  const network = given.noNetwork ? ['--net'] : [];
  if (!mounts) return given.noNetwork ? ['unshare', [...network, 'chroot', `--userspec=${user}`, root, ...program]] : ['chroot', [`--userspec=${user}`, root, ...program]];
  // Everything is mounted in a private mount namespace of the chroot'ed process (`unshare -m`), so it
  // vanishes with it even if the test crashes. The root is made read-only first (a bind of itself,
  // remounted), then /proc, /dev and the binds go on top, as a runtime mounts volumes over an image.
  const steps = [
    ...(given.readOnly ? ['mount --bind "$1" "$1"', 'mount -o remount,bind,ro "$1"'] : []),
    'mount -t proc proc "$1/proc"',
    'mount --bind /dev "$1/dev"',
    ...(given.binds ?? []).map(([outside, inside]) => `mount --bind '${outside}' "$1${inside}"`),
  ];
  const script = `${steps.join(' && ')} && shift && exec chroot "$@"`;
  return ['unshare', [...network, '--mount', '--propagation', 'private', 'sh', '-c', script, 'sh', root, `--userspec=${user}`, root, ...program]];
}

/** Mount points under `root` still mounted in this mount namespace. */
export function mountsUnder(root: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((mountPoint): mountPoint is string => mountPoint !== undefined && (mountPoint === root || mountPoint.startsWith(`${root}/`)));
}

/**
 * Deletes a root: what is still mounted under it is unmounted first, and nothing is deleted while a
 * mount remains, since deleting through a live /dev bind mount would wipe the host's /dev.
 */
export function removeRoot(root: string): void {
  for (const mountPoint of mountsUnder(root).reverse()) execFileSync('umount', ['-l', mountPoint]);
  if (mountsUnder(root).length > 0) throw new Error(`still mounted under ${root}; not deleting it`);
  rmSync(root, { recursive: true, force: true });
}
