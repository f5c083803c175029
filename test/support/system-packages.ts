/**
 * The Debian packages the test lanes run, and their installation when one is missing, so that the
 * README's `npm test` on a fresh machine needs nothing installed by hand (as root on Debian, as CI
 * runs it; otherwise the error names what to install). Each lane's globalSetup asks for its own list;
 * the drain program's C toolchain has its own installer (src/shutdown/build/toolchain.mjs), and the
 * control plane is built with Go (test/support/cluster/binaries.ts).
 */
import { execFileSync, spawnSync } from 'node:child_process';

/** Package → what the tests use it for. */
const SYSTEM_LANE = {
  openssl: 'openssl checks certificates',
  curl: "the README's curl line",
  jq: "the README's curl line",
  'util-linux': 'unshare for the chroots, script for a terminal, setpriv',
  prometheus: 'prometheus and promtool for the monitoring tests',
  diffutils: 'GNU diff, the oracle of inject --diff',
  patch: "applies inject's --diff",
  bash: 'the completion scripts',
  zsh: 'the completion scripts',
  fish: 'the completion scripts',
} as const;

const RELEASE_LANE = {
  'docker-registry': 'the OCI registry `helm push` goes to',
  'libstdc++6-arm64-cross': "lets the arm64 Node of the CLI executable run under qemu-user",
  openssl: 'openssl checks certificates',
} as const;

const KUBE_LANE = {
  iproute2: 'ip netns and veth: the test cluster network and pod sandboxes',
  'util-linux': 'unshare, setpriv: pod mount namespaces, the users pods run as',
  openssl: "the test cluster's certificates",
  prometheus: "Prometheus scraping drainguard's pods",
  coreutils: 'chroot and env in pod roots',
} as const;

export const LANE_PACKAGES = { system: SYSTEM_LANE, release: RELEASE_LANE, kube: KUBE_LANE } as const;
export type Lane = keyof typeof LANE_PACKAGES;

function installed(pkg: string): boolean {
  const result = spawnSync('dpkg-query', ['-W', '-f=${Status}', pkg], { encoding: 'utf8' });
  return result.status === 0 && result.stdout.includes('install ok installed');
}

/** The lane's packages that are not installed. */
export function missingPackages(lane: Lane): string[] {
  return Object.keys(LANE_PACKAGES[lane]).filter((pkg) => !installed(pkg));
}

/** Installs what `lane` needs and is missing (apt-get, as root); throws naming them when it cannot. */
export function ensureSystemPackages(lane: Lane, log: (line: string) => void = () => undefined): void {
  const missing = missingPackages(lane);
  if (missing.length === 0) return;
  const why = missing.map((pkg) => `  ${pkg}: ${(LANE_PACKAGES[lane] as Record<string, string>)[pkg]}`).join('\n');
  if (process.getuid?.() !== 0 || spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status !== 0) {
    throw new Error(`the ${lane} tests need Debian packages that are missing:\n${why}\ninstall them (sudo apt-get install ${missing.join(' ')}), then run the tests again`);
  }
  log(`installing Debian packages the ${lane} tests need:\n${why}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  // Another checkout's test run may be installing at the same time: wait for dpkg's lock rather than fail.
  const lock = ['-o', 'DPkg::Lock::Timeout=600'];
  execFileSync('apt-get', [...lock, 'update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'], env });
  execFileSync('apt-get', [...lock, 'install', '-y', '-qq', '--no-install-recommends', ...missing], { stdio: ['ignore', 'ignore', 'inherit'], env });
}
