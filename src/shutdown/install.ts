import type { FileSystem } from './platform/platform';

/** Name of the executable, both in dist/envoy-shutdown/<arch>/ and in the install directory. */
export const EXECUTABLE_NAME = 'envoy-shutdown';

export class InstallError extends Error {}

export interface InstalledFile {
  path: string;
  mode: number;
}

/** Runtimes that can run the sources but are not the self-contained program `install` must copy. */
const GENERIC_RUNTIMES = new Set(['node', 'nodejs']);

function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

function parentOf(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash < 0 ? '.' : slash === 0 ? '/' : path.slice(0, slash);
}

/**
 * Copies the running executable (static: nothing ships beside it) into `targetDir`. It is written to a
 * temporary name, fsynced and renamed, so Envoy's preStop never sees a half-written program; running
 * it again gives the same result.
 */
export function installExecutable(files: FileSystem, pid: number, executablePath: string, targetDir: string): InstalledFile[] {
  if (GENERIC_RUNTIMES.has(baseName(executablePath))) {
    throw new InstallError(
      `install must be run from the built ${EXECUTABLE_NAME} executable (npm run build:shutdown), not through ${baseName(executablePath)}`,
    );
  }
  makeDirectories(files, targetDir);
  const target = targetDir.endsWith('/') ? `${targetDir}${EXECUTABLE_NAME}` : `${targetDir}/${EXECUTABLE_NAME}`;
  const installed = copyAtomically(files, pid, executablePath, target, 0o755);
  try {
    files.syncDirectory(parentOf(target));
  } catch (error) {
    throw new InstallError(`cannot sync ${parentOf(target)}: ${describe(error)}`);
  }
  return [installed];
}

/** `mkdir -p` with mode 0755: every missing level of `dir`, and `dir` must end up a directory. */
function makeDirectories(files: FileSystem, dir: string): void {
  const parts = dir.split('/');
  let prefix = dir.startsWith('/') ? '' : '.';
  try {
    for (const part of parts) {
      if (part === '' || part === '.') continue;
      prefix = `${prefix}/${part}`;
      try {
        files.makeDirectory(prefix, 0o755);
      } catch (error) {
        if ((error as { code?: string }).code !== 'EEXIST') throw error;
      }
    }
    if (!files.isDirectory(dir)) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
  } catch (error) {
    throw new InstallError(`cannot create ${dir}: ${describe(error)}`);
  }
}

function copyAtomically(files: FileSystem, pid: number, source: string, target: string, mode: number): InstalledFile {
  const temporary = `${parentOf(target)}/.${baseName(target)}.tmp-${pid}`;
  try {
    files.copyToNewFile(source, temporary, mode);
    files.rename(temporary, target);
    return { path: target, mode };
  } catch (error) {
    try {
      files.remove(temporary);
    } catch {
      // Nothing more to clean up than what the error below reports.
    }
    throw new InstallError(`cannot write ${target}: ${describe(error)}`);
  }
}

function describe(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  return code ? `${code} (${message})` : String(message ?? error);
}
