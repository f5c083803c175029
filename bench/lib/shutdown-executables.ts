/**
 * The built `envoy-shutdown` executables, one per architecture the toolchain knows, and how this host runs
 * each: directly, or under Debian's qemu-user-static. Which emulator is the toolchain's own answer
 * (`launcherFor` in src/shutdown/build/toolchain.mjs), so the benchmark and the build agree.
 */
import { execFileSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { repoPath } from '../../test/support/repo';

/** What the benchmark uses of src/shutdown/build/toolchain.mjs (a plain ES module, no types). */
interface Toolchain {
  ARCHES: Record<string, unknown>;
  hostArch(): string;
  launcherFor(arch: string): string[];
}

export interface ShutdownExecutable {
  arch: string;
  /** Repository-relative: dist/envoy-shutdown/linux-<arch>/envoy-shutdown. */
  relativePath: string;
  path: string;
  /** The qemu-user binary that runs it on this host; undefined when it is this host's architecture. */
  emulator: string | undefined;
  /** The command line that runs it with `args` here. */
  command(args: readonly string[]): [string, string[]];
}

export async function shutdownExecutables(): Promise<{ all: ShutdownExecutable[]; host: ShutdownExecutable }> {
  // A dynamic import: the bench is CommonJS, the toolchain an ES module loaded from the repository itself.
  const toolchain = (await import(pathToFileURL(repoPath('src/shutdown/build/toolchain.mjs')).href)) as Toolchain;
  const all = Object.keys(toolchain.ARCHES).map((arch): ShutdownExecutable => {
    const relativePath = `dist/envoy-shutdown/linux-${arch}/envoy-shutdown`;
    const path = repoPath(relativePath);
    const [emulator] = toolchain.launcherFor(arch);
    const command = (args: readonly string[]): [string, string[]] => (emulator ? [emulator, [path, ...args]] : [path, [...args]]);
    return { arch, relativePath, path, emulator, command };
  });
  const host = all.find((executable) => executable.arch === toolchain.hostArch());
  if (!host) throw new Error(`the toolchain lists no executable for this host (${toolchain.hostArch()})`);
  return { all, host };
}

/** `npm run build:shutdown -- --arch A --if-changed` for each: the build script skips what is up to date. */
export function buildIfChanged(executables: readonly ShutdownExecutable[], log: (line: string) => void): void {
  for (const { arch } of executables) {
    log(`dist/envoy-shutdown/linux-${arch} (build:shutdown --arch ${arch} --if-changed)`);
    execFileSync(process.execPath, [repoPath('src/shutdown/build/build-executable.mjs'), '--arch', arch, '--if-changed'], { cwd: repoPath(), stdio: 'inherit' });
  }
}

/** The drain's `summary` line from the program's log (one JSON object a line, on stderr). */
export function drainSummary(log: string): Record<string, unknown> | undefined {
  for (const line of log.split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as Record<string, unknown>;
    if (entry.phase === 'summary') return entry;
  }
  return undefined;
}
