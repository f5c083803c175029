/**
 * The compiled artefacts that end-to-end suites run as separate processes: `dist/` (the drainguard CLI
 * and server) and `dist/envoy-shutdown/` (the drain program). jest's globalSetup builds them once,
 * before any worker starts, so no two suites ever race to rewrite `dist/`; suites only assert that the
 * build is there.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** The repository, found by walking up to drainguard's package.json rather than by a fixed `../..`. */
function findRepoRoot(): string {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'drainguard') return dir;
  }
  throw new Error(`cannot find the drainguard repository above ${__dirname}`);
}

export const REPO_ROOT = findRepoRoot();

/** A path inside the repository. */
export function repoPath(...segments: string[]): string {
  return resolve(REPO_ROOT, ...segments);
}
/** The project's pinned Node (the system one may be older). */
export const NODE = join(REPO_ROOT, 'node_modules/.bin/node');
export const CLI_MAIN = join(REPO_ROOT, 'dist/cli/main.js');
/** The architectures envoy-shutdown is built for (Debian / Go names, as Docker's TARGETARCH). */
export const SHUTDOWN_ARCHES = ['amd64', 'arm64'] as const;
export type ShutdownArch = (typeof SHUTDOWN_ARCHES)[number];
/** The directory `npm run build:shutdown -- --arch ARCH` writes (the executable is alone in it). */
export function shutdownDir(arch: ShutdownArch): string {
  return join(REPO_ROOT, 'dist/envoy-shutdown', `linux-${arch}`);
}
export function shutdownExecutable(arch: ShutdownArch): string {
  return join(shutdownDir(arch), 'envoy-shutdown');
}
/** Contour's own Envoy DaemonSet manifests (examples/contour/03-envoy.yaml) at three releases. */
export const CONTOUR_FIXTURES_DIR = join(REPO_ROOT, 'test/fixtures/contour');
export const CONTOUR_FIXTURES = ['03-envoy-main.yaml', '03-envoy-v1.23.0.yaml', '03-envoy-v1.33.6.yaml'].map((name) =>
  join(CONTOUR_FIXTURES_DIR, name),
);

/** Compiles src/ to dist/ (fast enough to run every time) and rebuilds the drain program when stale. */
export function buildAll(log: (line: string) => void = () => undefined): void {
  // The project's own build script: it also makes the `drainguard` bin executable, which npx needs.
  log('building dist/ (npm run build)');
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: REPO_ROOT, stdio: 'inherit' });
  ensureShutdownToolchain(log);
  buildShutdownIfStale(log);
}

const TOOLCHAIN = join(REPO_ROOT, 'src/shutdown/build/toolchain.mjs');

/**
 * The drain program's toolchain (C compilers, qemu-user, the pinned QuickJS and musl sources), so that
 * `npm test` on a fresh clone needs nothing installed by hand: what is missing is installed by the
 * project's own script (as root on Debian, as CI runs; elsewhere the error names what to install).
 */
export function ensureShutdownToolchain(log: (line: string) => void = () => undefined): void {
  const check = spawnSync(NODE, [TOOLCHAIN, 'check'], { cwd: REPO_ROOT, encoding: 'utf8' });
  if (check.status === 0) return;
  if (process.getuid?.() !== 0) {
    throw new Error(`the drain program's toolchain is incomplete:\n${check.stderr}run \`sudo npm run toolchain:shutdown\` (Debian) once, then the tests again`);
  }
  log('installing what the drain program needs (npm run toolchain:shutdown)');
  execFileSync(NODE, [TOOLCHAIN, 'install'], { cwd: REPO_ROOT, stdio: 'inherit' });
}

/**
 * Both static executables, each rebuilt only when a hash of its inputs changed (the build script keeps
 * it beside the output): a test run builds each architecture at most once.
 */
export function buildShutdownIfStale(log: (line: string) => void = () => undefined, arches: readonly ShutdownArch[] = SHUTDOWN_ARCHES): void {
  for (const arch of arches) {
    log(`dist/envoy-shutdown/linux-${arch} (npm run build:shutdown -- --arch ${arch} --if-changed)`);
    execFileSync(NODE, [join(REPO_ROOT, 'src/shutdown/build/build-executable.mjs'), '--arch', arch, '--if-changed'], { cwd: REPO_ROOT, stdio: 'inherit' });
  }
}

/** For suites: fail with a clear message instead of a confusing ENOENT when run without globalSetup. */
export function assertBuilt(): void {
  for (const artefact of [CLI_MAIN, ...SHUTDOWN_ARCHES.map(shutdownExecutable)]) {
    if (!existsSync(artefact)) {
      throw new Error(`${artefact} is missing: run the tests through jest (its globalSetup builds) or \`npm run build && npm run build:shutdown -- --arch amd64 && npm run build:shutdown -- --arch arm64\``);
    }
  }
}
