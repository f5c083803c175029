/**
 * `npm run release [-- --out DIR] [--if-changed]`: every artifact of a drainguard release, in one folder
 * (default dist/release), ready to upload as the GitHub release `v<version>` and to `helm push`
 * (docs/development.md, "Release"):
 *
 *   drainguard-linux-amd64, drainguard-linux-arm64   the CLI as single executables (no Node needed; glibc)
 *   drainguard-linux-<arch>.tar.gz                   each: drainguard and THIRD-PARTY-NOTICES.txt (krew's archives)
 *   THIRD-PARTY-NOTICES.txt                          the licences of Node and of every bundled npm package
 *   drainguard-<chart version>.tgz                   `helm package charts/drainguard` (after `helm lint --strict`)
 *   drainguard.yaml                                  the krew plugin manifest, pointing at the release's archives
 *   SHA256SUMS                                       `sha256sum --check` format, for every file above
 *   envoy-shutdown-image/                            the drain program's image (linux/amd64, linux/arm64) as an
 *                                                    OCI image layout, for `crane push`; the packaged chart pins
 *                                                    its digest (content-addressed, so not in SHA256SUMS)
 *
 * `--if-changed` rebuilds an executable or archive only when its inputs changed (what the tests use);
 * without it everything is built anew. Archives are reproducible: sorted, owner 0, mtime from
 * SOURCE_DATE_EPOCH or the last commit, gzip without a name or time.
 */
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parse } from 'yaml';
import { VERSION } from '../src/version';
import { CHART_DIR, helm } from '../test/support/helm';
import { REPO_ROOT } from '../test/support/repo';
import { DRAIN_IMAGE_REPOSITORY } from '../src/config/defaults';
import { buildShutdownIfStale, shutdownExecutable } from '../test/support/drain-executables';
import { buildCliExecutable, bundleCli } from './cli-executable';
import { buildDrainImage, craneBinary, DRAIN_IMAGE_LAYOUT, readDrainImageLayout } from './drain-image';
import { krewManifest } from './krew';
import { reproducibleTarFlags, run, sha256File, sourceDateEpoch } from './files';
import { thirdPartyNotices } from './notices';
import { CACHE, hostArch, pinnedNode, RELEASE_ARCHES, type ReleaseArch } from './pinned-node';

export const DEFAULT_RELEASE_DIR = join(REPO_ROOT, 'dist/release');
/** Where the chart is pushed: `helm install drainguard oci://ghcr.io/drainguard/charts/drainguard`. */
export const CHART_OCI_REPOSITORY = 'oci://ghcr.io/drainguard/charts';

export const NOTICES = 'THIRD-PARTY-NOTICES.txt';
export const CHECKSUMS = 'SHA256SUMS';
export const KREW_MANIFEST = 'drainguard.yaml';
/** The executable's name inside an archive, and so the name krew links as kubectl-drainguard. */
export const ARCHIVED_EXECUTABLE = 'drainguard';

export const executableName = (arch: ReleaseArch) => `drainguard-linux-${arch}`;
export const archiveName = (arch: ReleaseArch) => `drainguard-linux-${arch}.tar.gz`;

interface ChartYaml {
  name: string;
  version: string;
  home: string;
}
export function chartMetadata(): ChartYaml {
  return parse(readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as ChartYaml;
}
export const chartPackageName = () => `${chartMetadata().name}-${chartMetadata().version}.tgz`;

/** Where the GitHub release `v<version>` serves its files (Chart.yaml `home` is the repository). */
export function downloadBase(version: string = VERSION): string {
  return `${chartMetadata().home}/releases/download/v${version}`;
}

/** Every file of the release folder, in the order SHA256SUMS lists them. */
export function releaseFiles(): string[] {
  return [...RELEASE_ARCHES.flatMap((arch) => [executableName(arch), archiveName(arch)]), NOTICES, chartPackageName(), KREW_MANIFEST, CHECKSUMS].sort();
}

export interface ReleaseOptions {
  out?: string;
  ifChanged?: boolean;
  log?: (line: string) => void;
}

/**
 * `name` in `out`, a reproducible .tar.gz of `files` (entry → source and mode; entries in byte order),
 * rebuilt when a source changed.
 */
function buildArchive(out: string, name: string, files: Record<string, { source: string; mode: number }>, ifChanged: boolean): boolean {
  const target = join(out, name);
  const entries = Object.keys(files).sort();
  const tarFlags = reproducibleTarFlags(sourceDateEpoch());
  // -6 (gzip's default): 0.6 % larger than -9 on the executables, in well under half the time.
  const gzipFlags = ['-n', '-6'];
  const inputs = JSON.stringify({ tarFlags, gzipFlags, files: entries.map((entry) => [entry, files[entry]!.mode, sha256File(files[entry]!.source)]) });
  const stamp = join(CACHE, 'stamps', `${createHash('sha256').update(target).digest('hex').slice(0, 16)}.inputs`);
  if (ifChanged && existsSync(target) && existsSync(stamp) && readFileSync(stamp, 'utf8') === inputs) return false;

  const staging = join(CACHE, `${name}.staging`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(join(staging, 'tree'), { recursive: true });
  try {
    for (const [entry, { source, mode }] of Object.entries(files)) {
      copyFileSync(source, join(staging, 'tree', entry));
      chmodSync(join(staging, 'tree', entry), mode);
    }
    const tar = join(staging, 'archive.tar');
    run(['tar', ...tarFlags, '-cf', tar, '-C', join(staging, 'tree'), ...entries]);
    // -n: no file name or time in the gzip header, so the same tree gives the same bytes.
    run(['gzip', ...gzipFlags, tar]);
    renameSync(`${tar}.gz`, target);
    mkdirSync(join(CACHE, 'stamps'), { recursive: true });
    writeFileSync(stamp, inputs);
    return true;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * The values.yaml of the packaged chart: the repository's, with drainImage.digest set to the drain image
 * built for this release, so the chart a user installs pins the image the release publishes. Only that
 * line changes (the comments stay); the result is read back and must differ from the original in
 * exactly that value.
 */
export function valuesWithDrainDigest(text: string, digest: string): string {
  const stamped = text.replace(/^(drainImage:\n(?:(?:[ \t]+.*)?\n)*?[ \t]+digest: )""[ \t]*$/m, `$1"${digest}"`);
  const before = parse(text) as { drainImage?: Record<string, unknown> };
  const after = parse(stamped) as { drainImage?: Record<string, unknown> };
  const expected = { ...before, drainImage: { ...before.drainImage, digest } };
  if (before.drainImage?.digest !== '' || JSON.stringify(after) !== JSON.stringify(expected)) {
    throw new Error('charts/drainguard/values.yaml must hold drainImage.digest: "" for the release to write the drain image\'s digest into');
  }
  return stamped;
}

/** `helm package` of a copy of the chart whose values pin the drain image by `digest`. */
function packageChart(out: string, digest: string): void {
  const staging = join(CACHE, `chart-staging-${process.pid}`);
  const chart = join(staging, chartMetadata().name);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    cpSync(CHART_DIR, chart, { recursive: true });
    writeFileSync(join(chart, 'values.yaml'), valuesWithDrainDigest(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8'), digest));
    const packaged = helm(['package', chart, '--destination', out]);
    if (packaged.status !== 0 || !existsSync(join(out, chartPackageName()))) throw new Error(`helm package failed:\n${packaged.stdout}${packaged.stderr}`);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** The release folder: made, or refused when it holds files this script did not make. */
function prepareOut(out: string): void {
  mkdirSync(out, { recursive: true });
  const present = readdirSync(out);
  const ours = new Set([...releaseFiles(), DRAIN_IMAGE_LAYOUT]);
  const foreign = present.filter((name) => !ours.has(name));
  if (foreign.length === 0) return;
  // A folder this script made (it has SHA256SUMS) loses the files of an older release; any other is left alone.
  if (!present.includes(CHECKSUMS)) throw new Error(`${out} holds files that are not release artifacts (${foreign.join(', ')}): pick an empty --out`);
  for (const name of foreign) rmSync(join(out, name), { recursive: true, force: true });
}

/** Builds the release folder; returns its path. */
export async function buildRelease(options: ReleaseOptions = {}): Promise<string> {
  const out = resolve(options.out ?? DEFAULT_RELEASE_DIR);
  const started = performance.now();
  const log = options.log ?? ((line: string) => process.stderr.write(`release: ${((performance.now() - started) / 1000).toFixed(1).padStart(5)} s  ${line}\n`));
  const ifChanged = options.ifChanged ?? false;
  hostArch(); // refuses an unsupported build host before any work
  prepareOut(out);
  // SHA256SUMS goes last: until it is written again, the folder does not claim to be a finished release.
  rmSync(join(out, CHECKSUMS), { force: true });

  log('helm lint --strict');
  const lint = helm(['lint', '--strict', CHART_DIR]);
  if (lint.status !== 0) throw new Error(`helm lint --strict ${relative(REPO_ROOT, CHART_DIR)} failed:\n${lint.stdout}${lint.stderr}`);

  log('the CLI bundle (esbuild; with --if-changed, the last one while its inputs are unchanged)');
  const bundle = await bundleCli(ifChanged);
  const nodes = Object.fromEntries(RELEASE_ARCHES.map((arch) => [arch, pinnedNode(arch, log)])) as Record<ReleaseArch, ReturnType<typeof pinnedNode>>;
  const noticesFile = join(out, NOTICES);
  const host = nodes[hostArch()];
  writeFileSync(noticesFile, thirdPartyNotices({ nodeVersion: host.version, nodeLicense: host.license, packageDirs: bundle.packageDirs }));

  for (const arch of RELEASE_ARCHES) {
    const executable = join(out, executableName(arch));
    if (!ifChanged) rmSync(executable, { force: true });
    buildCliExecutable({ arch, bundle, node: nodes[arch], target: executable, log });
    const archive = { [ARCHIVED_EXECUTABLE]: { source: executable, mode: 0o755 }, [NOTICES]: { source: noticesFile, mode: 0o644 } };
    if (buildArchive(out, archiveName(arch), archive, ifChanged)) log(`${archiveName(arch)}: archived`);
  }

  log('the drain program (npm run build:shutdown, each architecture when its inputs changed)');
  buildShutdownIfStale(log);
  const drainImage = await buildDrainImage({
    out,
    executables: Object.fromEntries(RELEASE_ARCHES.map((arch) => [arch, shutdownExecutable(arch)])) as Record<ReleaseArch, string>,
    epoch: sourceDateEpoch(),
    ifChanged,
    log,
  });

  log(`helm package (drainImage.digest ${drainImage.digest})`);
  packageChart(out, drainImage.digest);

  const base = downloadBase();
  writeFileSync(
    join(out, KREW_MANIFEST),
    krewManifest({
      version: VERSION,
      homepage: chartMetadata().home,
      archives: RELEASE_ARCHES.map((arch) => ({
        arch,
        uri: `${base}/${archiveName(arch)}`,
        sha256: sha256File(join(out, archiveName(arch))),
        files: [ARCHIVED_EXECUTABLE, NOTICES],
      })),
    }),
  );

  log('SHA256SUMS');
  const sums = releaseFiles()
    .filter((name) => name !== CHECKSUMS)
    .map((name) => `${sha256File(join(out, name))}  ${name}\n`)
    .join('');
  writeFileSync(join(out, CHECKSUMS), sums);
  return out;
}

function describe(out: string): string {
  const rows = releaseFiles().map((name) => `  ${(statSync(join(out, name)).size / 1e6).toFixed(1).padStart(7)} MB  ${name}`);
  const image = readDrainImageLayout(join(out, DRAIN_IMAGE_LAYOUT));
  const at = (path: string) => relative(process.cwd(), path);
  return (
    `${at(out) || '.'}:\n${rows.join('\n')}\n` +
    `  ${DRAIN_IMAGE_LAYOUT}/  the drain image ${image.digest} (${image.manifests.map((m) => m.platform).join(', ')})\n\n` +
    'Publish, in this order (the chart pins the image, so the image goes first):\n' +
    `  ${at(craneBinary())} push ${at(image.layout)} ${DRAIN_IMAGE_REPOSITORY}:${VERSION}    # prints ${DRAIN_IMAGE_REPOSITORY}@${image.digest}\n` +
    `  upload every other file to the GitHub release v${VERSION} (${downloadBase()}/...)\n` +
    `  helm push ${at(join(out, chartPackageName()))} ${CHART_OCI_REPOSITORY}\n`
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { out: { type: 'string' }, 'if-changed': { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h', default: false } },
  });
  if (values.help) {
    process.stdout.write('Usage: npm run release [-- --out DIR] [--if-changed]\n\nBuilds every release artifact into DIR (default dist/release).\n');
    return;
  }
  const out = await buildRelease({ ...(values.out === undefined ? {} : { out: values.out }), ifChanged: values['if-changed'] });
  process.stdout.write(describe(out));
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`release: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
