/**
 * The static `envoy-shutdown` executables (`dist/envoy-shutdown/linux-<arch>/`) that the system lane's
 * suites run natively and under qemu-user, and the C toolchain that builds them. Only the system jest
 * project builds them (its globalSetup); test/unit/test-lanes.test.ts keeps every suite that reaches this
 * module out of the unit lane, which must pass with no toolchain and no root.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { NODE, REPO_ROOT } from './repo';

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
    throw new Error(
      `the drain program's toolchain is incomplete:\n${check.stderr}run \`sudo npm run toolchain:shutdown\` (Debian) once, then the tests again ` +
        '(`npm run test:unit` needs none of it)',
    );
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
export function assertShutdownBuilt(): void {
  for (const artefact of SHUTDOWN_ARCHES.map(shutdownExecutable)) {
    if (!existsSync(artefact)) {
      throw new Error(
        `${artefact} is missing: run the tests through jest's system project (its globalSetup builds) or ` +
          '`npm run build:shutdown -- --arch amd64 && npm run build:shutdown -- --arch arm64`',
      );
    }
  }
}
