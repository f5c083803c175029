/**
 * How the kubelet stand-in runs a container's process without a container runtime: in the pod's
 * network namespace (./network), in a mount namespace of its own (`unshare --mount`, so every mount
 * vanishes with the process), chrooted into a root assembled as a runtime assembles one — the image's
 * files, then /proc, a /dev of the usual device nodes, the pod's volumes at their mount paths, the
 * termination-message file, /etc/hosts — read-only when `readOnlyRootFilesystem` says so, and run as
 * the pod's user. An exec hook runs the same way, in the same network namespace and with the same
 * mounts, as `crictl exec` enters a running container.
 */
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FileImage } from './images';

export interface Mount {
  /** The path inside the container. */
  target: string;
  /** The file or directory of this machine that appears there. */
  source: string;
  readOnly: boolean;
  /** A single file rather than a directory. */
  file?: boolean;
}

export interface ContainerLaunch {
  /** Where the root is assembled (an empty directory of the pod's). */
  root: string;
  /** The pod's network namespace; absent: this host's (hostNetwork). */
  netns?: string;
  /** The image's files; an empty image for a scratch root (Envoy's, for its exec hooks). */
  image: Pick<FileImage, 'files' | 'hostUsr'>;
  mounts: Mount[];
  readOnlyRoot: boolean;
  user: { uid: number; gid: number };
  /** The resolved command line (entrypoint/command and args, `$(VAR)` expanded). */
  argv: string[];
  env: Record<string, string>;
  workingDir?: string;
}

const DEVICES = ['null', 'zero', 'full', 'random', 'urandom', 'tty'];

function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * The shell script that builds the root inside the new mount namespace and execs the program; `sh`
 * runs it as root before the chroot. Written to a file beside the root, so no command line holds it.
 */
function setupScript(launch: ContainerLaunch): string {
  const r = (path: string) => quote(join(launch.root, path));
  const lines = ['set -eu', `mount --bind ${quote(launch.root)} ${quote(launch.root)}`];
  const bind = (source: string, target: string, readOnly: boolean, file: boolean) => {
    lines.push(file ? `mkdir -p "$(dirname ${r(target)})" && touch ${r(target)}` : `mkdir -p ${r(target)}`);
    lines.push(`mount --bind ${quote(source)} ${r(target)}`);
    if (readOnly) lines.push(`mount -o remount,bind,ro ${r(target)}`);
  };
  if (launch.image.hostUsr) {
    bind('/usr', '/usr', true, false);
    for (const link of ['bin', 'lib', 'lib64', 'sbin']) lines.push(`ln -sfn usr/${link} ${r(link)}`);
  }
  for (const [target, source] of Object.entries(launch.image.files)) {
    bind(source, target, true, !statSync(source).isDirectory());
  }
  lines.push(`mkdir -p ${r('proc')} ${r('dev')} ${r('tmp')} ${r('etc')}`);
  lines.push(`mount -t proc proc ${r('proc')}`);
  lines.push(`mount -t tmpfs -o mode=755,size=1m tmpfs ${r('dev')}`);
  for (const device of DEVICES) lines.push(`touch ${r(`dev/${device}`)} && mount --bind /dev/${device} ${r(`dev/${device}`)}`);
  lines.push(`ln -s /proc/self/fd ${r('dev/fd')}`);
  lines.push(`mount -t tmpfs -o mode=1777,size=64m tmpfs ${r('tmp')}`);
  for (const mount of launch.mounts) bind(mount.source, mount.target, mount.readOnly, mount.file === true);
  if (launch.readOnlyRoot) lines.push(`mount -o remount,bind,ro ${quote(launch.root)}`);
  const { uid, gid } = launch.user;
  if (launch.image.hostUsr) {
    // The image has setpriv: drop to the user inside the root, and ask again to die with the kubelet
    // (a change of user clears the parent-death signal that setpriv set outside).
    const workingDir = launch.workingDir ? ['/usr/bin/env', '-C', launch.workingDir] : [];
    const program = [...workingDir, '/usr/bin/setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--pdeathsig', 'KILL', '--', ...launch.argv];
    lines.push(`exec chroot ${quote(launch.root)} ${program.map(quote).join(' ')}`);
  } else {
    lines.push(`exec chroot --userspec=${uid}:${gid} --groups= ${quote(launch.root)} ${launch.argv.map(quote).join(' ')}`);
  }
  return lines.join('\n') + '\n';
}

/** The command that runs `launch` (for ./processes' `startProcess` or a hook's spawn), and its environment. */
export function launchCommand(launch: ContainerLaunch, scriptPath: string): { command: string; args: string[]; env: NodeJS.ProcessEnv } {
  mkdirSync(launch.root, { recursive: true, mode: 0o755 });
  writeFileSync(scriptPath, setupScript(launch), { mode: 0o700 });
  const unshare = ['unshare', '--mount', '--propagation', 'private', 'sh', scriptPath];
  const argv = launch.netns ? ['ip', 'netns', 'exec', launch.netns, ...unshare] : unshare;
  // The container's environment only (and a PATH for the tools of the setup, as a runtime's own is).
  const env: NodeJS.ProcessEnv = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', ...launch.env };
  return { command: argv[0]!, args: argv.slice(1), env };
}

/** Kubernetes' `$(VAR)` expansion of command and args (`$$` escapes), from the container's environment. */
export function expandReferences(text: string, env: Record<string, string>): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (match, name: string | undefined) => {
    if (match === '$$') return '$';
    return name !== undefined && name in env ? env[name]! : match;
  });
}
