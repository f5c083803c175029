import { closeSync, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync, fchmodSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** Name of the executable, both in dist/envoy-shutdown/ and in the install directory. */
export const EXECUTABLE_NAME = 'envoy-shutdown';
/** Libraries shipped beside the executable (found through its `$ORIGIN/lib` run path), if any. */
export const LIBRARY_DIR = 'lib';

export class InstallError extends Error {}

export interface InstalledFile {
  path: string;
  mode: number;
}

/** Runtimes that can run the bundle but are not the self-contained program `install` must copy. */
const GENERIC_RUNTIMES = new Set(['node', 'nodejs', 'bun']);

/**
 * Copies the running executable, and the `lib/` directory beside it if there is one, into `targetDir`.
 * Each file is written to a temporary name, fsynced and renamed, so Envoy's preStop never sees a
 * half-written program; libraries go first and the executable last, so an installed executable always
 * has its libraries. Running it again gives the same result.
 */
export function installExecutable(executablePath: string, targetDir: string): InstalledFile[] {
  if (GENERIC_RUNTIMES.has(basename(executablePath))) {
    throw new InstallError(
      `install must be run from the built ${EXECUTABLE_NAME} executable (npm run build:shutdown), not through ${basename(executablePath)}`,
    );
  }
  const sourceDir = dirname(executablePath);
  const installed: InstalledFile[] = [];
  const libraryDir = join(sourceDir, LIBRARY_DIR);
  if (existsSync(libraryDir) && statSync(libraryDir).isDirectory()) {
    const targetLibraryDir = join(targetDir, LIBRARY_DIR);
    makeDirectory(targetLibraryDir);
    for (const name of readdirSync(libraryDir).sort()) {
      installed.push(copyAtomically(join(libraryDir, name), join(targetLibraryDir, name), 0o644));
    }
    syncDirectory(targetLibraryDir);
  } else {
    makeDirectory(targetDir);
  }
  installed.push(copyAtomically(executablePath, join(targetDir, EXECUTABLE_NAME), 0o755));
  syncDirectory(targetDir);
  return installed;
}

function makeDirectory(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o755 });
  } catch (error) {
    throw new InstallError(`cannot create ${dir}: ${describe(error)}`);
  }
}

function copyAtomically(source: string, target: string, mode: number): InstalledFile {
  const temporary = join(dirname(target), `.${basename(target)}.tmp-${process.pid}`);
  try {
    copyFileSync(source, temporary);
    const fd = openSync(temporary, 'r+');
    try {
      fchmodSync(fd, mode);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, target);
    return { path: target, mode };
  } catch (error) {
    rmSync(temporary, { force: true });
    throw new InstallError(`cannot write ${target}: ${describe(error)}`);
  }
}

/** Makes the renames durable: without it a node crash could leave the directory entry pointing nowhere. */
function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function describe(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException;
  return code ? `${code} (${message})` : String(message ?? error);
}
