/**
 * skaffold.yaml (no skaffold binary here): its build and deploy sections point at this repository's
 * Dockerfile and chart, and the values it sets render a chart whose server runs the webhook image and
 * whose webhook writes the drain image into Envoy pods, both as skaffold just built them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CHART_DIR, REPO_ROOT, findOne, webhookObjects, renderChart, type K8sObject } from '../../support/helm';
import { validateAll } from './validate';
import { DRAIN_IMAGE_STAGE } from '../../support/dockerfile-lint';

interface Release {
  name: string;
  chartPath: string;
  namespace: string;
  createNamespace?: boolean;
  setValueTemplates: Record<string, string>;
  setValues?: Record<string, string | number | boolean>;
}
interface SkaffoldConfig {
  apiVersion: string;
  kind: string;
  build: { platforms?: string[]; artifacts: { image: string; context?: string; docker: { dockerfile: string; target?: string } }[] };
  deploy: { helm: { releases: Release[] } };
  portForward?: { resourceType: string; resourceName: string; namespace: string; port: number }[];
  profiles?: { name: string; patches: { op: string; path: string; value: unknown }[] }[];
}

const skaffold = parse(readFileSync(join(REPO_ROOT, 'skaffold.yaml'), 'utf8')) as SkaffoldConfig;
const [artifact, drainArtifact] = skaffold.build.artifacts as [SkaffoldConfig['build']['artifacts'][number], SkaffoldConfig['build']['artifacts'][number]];
const release = skaffold.deploy.helm.releases[0]!;

/** What skaffold substitutes for {{.IMAGE_REPO_<name>}} / {{.IMAGE_TAG_<name>}} after a build, per artifact. */
const BUILT = { repo: 'localhost:5000/drainguard', tag: '3f2a9c1e' };
const BUILT_DRAIN = { repo: 'localhost:5000/envoy-shutdown', tag: '7b1d04aa' };
/** Skaffold sanitises the artifact name into the variable name (non-alphanumerics become `_`). */
const variable = (image: string) => image.replace(/[^A-Za-z0-9]/g, '_');
function substitute(template: string): string {
  let result = template;
  for (const [image, built] of [[artifact.image, BUILT], [drainArtifact.image, BUILT_DRAIN]] as const) {
    result = result.replaceAll(`{{.IMAGE_REPO_${variable(image)}}}`, built.repo).replaceAll(`{{.IMAGE_TAG_${variable(image)}}}`, built.tag);
  }
  return result;
}
function renderAsSkaffold(extraSet: Record<string, unknown> = {}): K8sObject[] {
  const setString: Record<string, string> = {};
  for (const [k, v] of Object.entries(release.setValueTemplates)) setString[k] = substitute(v);
  const set: Record<string, string | number | boolean> = { ...(release.setValues ?? {}) };
  for (const [k, v] of Object.entries(extraSet)) set[k] = v as string;
  return renderChart({ set, setString, namespace: release.namespace, releaseName: release.name });
}

test("a skaffold v4beta config that builds the Dockerfile's two images for the cluster's architecture, or both with -p multi-arch", () => {
  expect(skaffold.apiVersion).toMatch(/^skaffold\/v4beta\d+$/);
  expect(skaffold.kind).toBe('Config');
  expect(skaffold.build.artifacts.map((a) => [a.image, a.docker.target])).toEqual([
    ['drainguard', undefined],
    ['envoy-shutdown', DRAIN_IMAGE_STAGE],
  ]);
  for (const built of skaffold.build.artifacts) expect(existsSync(join(REPO_ROOT, built.context ?? '.', built.docker.dockerfile))).toBe(true);
  expect(skaffold.build.platforms).toBeUndefined();
  const multiArch = skaffold.profiles?.find((p) => p.name === 'multi-arch');
  expect(multiArch?.patches).toEqual([{ op: 'add', path: '/build/platforms', value: ['linux/amd64', 'linux/arm64'] }]);
});

test('deploys this chart, with the built images as image.* and drainImage.*', () => {
  expect(join(REPO_ROOT, release.chartPath)).toBe(CHART_DIR);
  expect(release.setValueTemplates).toEqual({
    'image.repository': `{{.IMAGE_REPO_${variable(artifact.image)}}}`,
    'image.tag': `{{.IMAGE_TAG_${variable(artifact.image)}}}`,
    'drainImage.repository': `{{.IMAGE_REPO_${variable(drainArtifact.image)}}}`,
    'drainImage.tag': `{{.IMAGE_TAG_${variable(drainArtifact.image)}}}`,
  });
});

test('the rendered release runs the built webhook image and writes the built drain image into Envoy pods', async () => {
  const objects = renderAsSkaffold();
  expect(await validateAll(objects)).toEqual([]);
  const deployment = findOne(webhookObjects(objects), 'Deployment') as K8sObject & { spec: { template: { spec: { containers: { image: string }[] } } } };
  expect(deployment.spec.template.spec.containers[0]!.image).toBe(`${BUILT.repo}:${BUILT.tag}`);
  expect(configOf(objects).installer.image).toBe(`${BUILT_DRAIN.repo}:${BUILT_DRAIN.tag}`);
});

function configOf(objects: K8sObject[]): { installer: { image: string; delivery: string } } {
  const configMap = findOne(webhookObjects(objects), 'ConfigMap') as K8sObject & { data: Record<string, string> };
  return parse(configMap.data['config.yaml']!) as { installer: { image: string; delivery: string } };
}

test('port-forward targets the Service the release creates', () => {
  const service = findOne(webhookObjects(renderAsSkaffold()), 'Service') as K8sObject & { spec: { ports: { port: number }[] } };
  for (const pf of skaffold.portForward ?? []) {
    expect(pf).toMatchObject({ resourceType: 'service', resourceName: service.metadata.name, namespace: release.namespace });
    expect(service.spec.ports.map((p) => p.port)).toContain(pf.port);
  }
  expect(skaffold.portForward?.length).toBeGreaterThan(0);
});

const PROFILE_EFFECTS: Record<string, (objects: K8sObject[]) => void> = {
  'cert-manager': (objects) => {
    expect(objects.filter((o) => o.kind === 'Certificate').length).toBeGreaterThan(0);
  },
  'fail-closed': (objects) => {
    const config = findOne(webhookObjects(objects), 'MutatingWebhookConfiguration') as K8sObject & { webhooks: { failurePolicy: string }[] };
    expect(config.webhooks[0]!.failurePolicy).toBe('Fail');
  },
  'image-volume': (objects) => {
    expect(configOf(objects).installer).toEqual(expect.objectContaining({ delivery: 'image-volume', image: `${BUILT_DRAIN.repo}:${BUILT_DRAIN.tag}` }));
  },
};

/** Profiles that change how the image is built (checked above), not the chart's values. */
const BUILD_PROFILES = new Set(['multi-arch']);

test.each((skaffold.profiles ?? []).filter((p) => !BUILD_PROFILES.has(p.name)).map((p) => [p.name, p] as const))('profile %s sets valid chart values', async (_name, profile) => {
  const extra: Record<string, unknown> = {};
  for (const patch of profile.patches) {
    const prefix = '/deploy/helm/releases/0/setValues/';
    expect(patch.op).toBe('add');
    expect(patch.path.startsWith(prefix)).toBe(true);
    extra[patch.path.slice(prefix.length)] = patch.value;
  }
  const objects = renderAsSkaffold(extra);
  expect(await validateAll(objects)).toEqual([]);
  const effect = PROFILE_EFFECTS[profile.name];
  expect(effect).toBeDefined(); // a new profile needs its expected effect listed here
  effect!(objects);
});
