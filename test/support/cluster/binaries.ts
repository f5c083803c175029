/**
 * The real control plane's executables, built from their Go modules (test/cluster/go.mod): kube-apiserver,
 * kube-controller-manager and kube-scheduler from k8s.io/kubernetes, etcd from go.etcd.io/etcd/server/v3
 * through test/cluster/etcd/main.go. Built with the ordinary `go build`, CGO off and static as upstream
 * builds them (hack/lib/golang.sh KUBE_STATIC_BINARIES), into a cache outside the repository that is
 * keyed by everything the build reads from us (go.mod, go.sum, our main, the Go version): a new checkout
 * on the same machine reuses it, a change of go.sum rebuilds it. Go keeps its own module and build caches
 * (GOMODCACHE, GOCACHE), so a rebuild after a small change is quick.
 *
 * Several test runs (jest workers, other checkouts) may ask at once: one builds under a lock directory,
 * the others wait for it; a build is written to a temporary directory and renamed into place, so a
 * directory that exists is always complete.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { repoPath } from '../repo';
import { pidAlive } from './processes';

export const CLUSTER_MODULE = repoPath('test/cluster');

/** What the module builds, by executable name: the Go package each comes from. */
const PACKAGES = {
  'kube-apiserver': 'k8s.io/kubernetes/cmd/kube-apiserver',
  'kube-controller-manager': 'k8s.io/kubernetes/cmd/kube-controller-manager',
  'kube-scheduler': 'k8s.io/kubernetes/cmd/kube-scheduler',
  etcd: './etcd',
} as const;

export type ControlPlaneExecutable = keyof typeof PACKAGES;
export type ControlPlaneBinaries = Record<ControlPlaneExecutable, string>;

/** The files of test/cluster the build reads; any change to one is a new cache entry. */
const INPUTS = ['go.mod', 'go.sum', 'etcd/main.go'];

/** `go` from PATH, else where the Go distribution installs it. */
export function goCommand(): string {
  for (const candidate of ['go', '/usr/local/go/bin/go']) {
    if (spawnSync(candidate, ['version'], { stdio: 'ignore' }).status === 0) return candidate;
  }
  throw new Error(
    'Go is needed to build the real Kubernetes control plane the tests run (test/cluster/go.mod): install Go 1.26 or newer ' +
      '(https://go.dev/dl/) and put it on PATH',
  );
}

/** The k8s.io/kubernetes release go.mod requires, e.g. `v1.37.2`: what the built binaries report as their version. */
export function kubernetesVersion(): string {
  const match = /^\s*k8s\.io\/kubernetes (v\d+\.\d+\.\d+)(?:\s*\/\/ indirect)?\s*$/m.exec(readFileSync(join(CLUSTER_MODULE, 'go.mod'), 'utf8'));
  if (!match) throw new Error('test/cluster/go.mod does not require k8s.io/kubernetes at a release version');
  return match[1]!;
}

function cacheRoot(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'drainguard', 'control-plane');
}

/** The `go build` arguments before the output directory and packages; part of the cache key. */
function buildFlags(version: string): string[] {
  return ['build', '-trimpath', '-ldflags', `-s -w ${versionFlags(version)}`];
}

const BUILD_ENV = { CGO_ENABLED: '0', GOFLAGS: '-mod=readonly -buildvcs=false' };

function cacheKey(go: string): string {
  const hash = createHash('sha256');
  for (const input of INPUTS) hash.update(`${input}\0`).update(readFileSync(join(CLUSTER_MODULE, input))).update('\0');
  hash.update(execFileSync(go, ['version'], { encoding: 'utf8' }));
  hash.update(JSON.stringify([buildFlags(kubernetesVersion()), BUILD_ENV]));
  return hash.digest('hex').slice(0, 20);
}

function binariesIn(dir: string): ControlPlaneBinaries {
  return Object.fromEntries(Object.keys(PACKAGES).map((name) => [name, join(dir, name)])) as ControlPlaneBinaries;
}

function complete(dir: string): boolean {
  return Object.values(binariesIn(dir)).every((path) => existsSync(path));
}

/** The stamped version, as upstream's build stamps it (hack/lib/version.sh), so discovery and `kubectl version` tell the release. */
function versionFlags(version: string): string {
  const [major, minor] = version.slice(1).split('.');
  const pkg = 'k8s.io/component-base/version';
  const clientPkg = 'k8s.io/client-go/pkg/version';
  return [pkg, clientPkg]
    .flatMap((p) => [`-X ${p}.gitVersion=${version}`, `-X ${p}.gitMajor=${major}`, `-X ${p}.gitMinor=${minor}`, `-X ${p}.gitTreeState=clean`])
    .join(' ');
}


/** Takes the build lock (a directory holding the owner's pid); a lock whose owner is gone is taken over. */
function withBuildLock<T>(lockDir: string, waitLog: () => void, body: () => T): T {
  let announced = false;
  for (;;) {
    try {
      mkdirSync(lockDir);
      writeFileSync(join(lockDir, 'pid'), String(process.pid));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      let owner = NaN;
      try {
        owner = Number(readFileSync(join(lockDir, 'pid'), 'utf8'));
      } catch {
        // Just created by its owner, pid not written yet: look again.
      }
      if (Number.isInteger(owner) && !pidAlive(owner)) {
        rmSync(lockDir, { recursive: true, force: true });
        continue;
      }
      if (!announced) waitLog();
      announced = true;
      // A build takes minutes; look again every second (a blocking wait: this runs in globalSetup).
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
    }
  }
  try {
    return body();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}

/**
 * The built executables, building them first when this module's inputs have no complete build in the
 * cache. `log` hears what happens (a cold build takes many minutes; go's own progress goes to stderr).
 */
export function ensureControlPlaneBinaries(log: (line: string) => void = () => undefined): ControlPlaneBinaries {
  const go = goCommand();
  const root = cacheRoot();
  const dir = join(root, cacheKey(go));
  if (complete(dir)) return binariesIn(dir);
  mkdirSync(root, { recursive: true });
  return withBuildLock(
    `${dir}.lock`,
    () => log(`waiting for another process building the control plane into ${dir}`),
    () => {
      if (complete(dir)) return binariesIn(dir);
      const version = kubernetesVersion();
      const staging = `${dir}.tmp-${process.pid}`;
      rmSync(staging, { recursive: true, force: true });
      mkdirSync(staging);
      log(`building the control plane ${version} and etcd from test/cluster/go.mod into ${dir} (go build; the first build takes minutes)`);
      const started = Date.now();
      execFileSync(go, [...buildFlags(version), '-o', staging + '/', ...Object.values(PACKAGES)], {
        cwd: CLUSTER_MODULE,
        stdio: ['ignore', 'inherit', 'inherit'],
        env: { ...process.env, ...BUILD_ENV },
      });
      // `go build -o DIR/` names each executable after its package's last element: `etcd` for ./etcd.
      for (const path of Object.values(binariesIn(staging))) statSync(path);
      renameSync(staging, dir);
      log(`built the control plane in ${((Date.now() - started) / 1000).toFixed(0)} s`);
      return binariesIn(dir);
    },
  );
}
