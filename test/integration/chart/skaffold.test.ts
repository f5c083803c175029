/**
 * skaffold.yaml (no skaffold binary here): its build and deploy sections point at this repository's
 * Dockerfile and chart, and the values it sets render a chart whose server and injected installer
 * both use the image skaffold just built.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CHART_DIR, REPO_ROOT, findOne, webhookObjects, renderChart, type K8sObject } from '../../support/helm';
import { validateAll } from './validate';

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
  build: { platforms?: string[]; artifacts: { image: string; context?: string; docker: { dockerfile: string } }[] };
  deploy: { helm: { releases: Release[] } };
  portForward?: { resourceType: string; resourceName: string; namespace: string; port: number }[];
  profiles?: { name: string; patches: { op: string; path: string; value: unknown }[] }[];
}

const skaffold = parse(readFileSync(join(REPO_ROOT, 'skaffold.yaml'), 'utf8')) as SkaffoldConfig;
const artifact = skaffold.build.artifacts[0]!;
const release = skaffold.deploy.helm.releases[0]!;

/** What skaffold substitutes for {{.IMAGE_REPO_<name>}} / {{.IMAGE_TAG_<name>}} after a build. */
const BUILT = { repo: 'localhost:5000/drainguard', tag: '3f2a9c1e' };
function substitute(template: string): string {
  // Skaffold sanitises the artifact name into the variable name (non-alphanumerics become `_`).
  const key = artifact.image.replace(/[^A-Za-z0-9]/g, '_');
  return template.replaceAll(`{{.IMAGE_REPO_${key}}}`, BUILT.repo).replaceAll(`{{.IMAGE_TAG_${key}}}`, BUILT.tag);
}
function renderAsSkaffold(extraSet: Record<string, unknown> = {}): K8sObject[] {
  const setString: Record<string, string> = {};
  for (const [k, v] of Object.entries(release.setValueTemplates)) setString[k] = substitute(v);
  const set: Record<string, string | number | boolean> = { ...(release.setValues ?? {}) };
  for (const [k, v] of Object.entries(extraSet)) set[k] = v as string;
  return renderChart({ set, setString, namespace: release.namespace, releaseName: release.name });
}

test("a skaffold v4beta config that builds the Dockerfile for the cluster's architecture, or both with -p multi-arch", () => {
  expect(skaffold.apiVersion).toMatch(/^skaffold\/v4beta\d+$/);
  expect(skaffold.kind).toBe('Config');
  expect(skaffold.build.artifacts).toHaveLength(1);
  expect(existsSync(join(REPO_ROOT, artifact.context ?? '.', artifact.docker.dockerfile))).toBe(true);
  expect(skaffold.build.platforms).toBeUndefined();
  const multiArch = skaffold.profiles?.find((p) => p.name === 'multi-arch');
  expect(multiArch?.patches).toEqual([{ op: 'add', path: '/build/platforms', value: ['linux/amd64', 'linux/arm64'] }]);
});

test('deploys this chart, with the built image as image.repository and image.tag', () => {
  expect(join(REPO_ROOT, release.chartPath)).toBe(CHART_DIR);
  expect(release.setValueTemplates['image.repository']).toBe(`{{.IMAGE_REPO_${artifact.image}}}`);
  expect(release.setValueTemplates['image.tag']).toBe(`{{.IMAGE_TAG_${artifact.image}}}`);
});

test('the rendered release runs the built image and injects the same image as installer', async () => {
  const objects = renderAsSkaffold();
  expect(await validateAll(objects)).toEqual([]);
  const deployment = findOne(webhookObjects(objects), 'Deployment') as K8sObject & { spec: { template: { spec: { containers: { image: string }[] } } } };
  expect(deployment.spec.template.spec.containers[0]!.image).toBe(`${BUILT.repo}:${BUILT.tag}`);
  const config = parse((findOne(webhookObjects(objects), 'ConfigMap') as K8sObject & { data: Record<string, string> }).data['config.yaml']!) as {
    installer: { image: string };
  };
  expect(config.installer.image).toBe(`${BUILT.repo}:${BUILT.tag}`);
});

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
