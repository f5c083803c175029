import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import type { Container, Pod } from '../../src/mutate/k8s';

/** Resolves a path in the repository, whether running from sources or from the compiled bench cache. */
export function repoPath(...segments: string[]): string {
  return resolve(repoRoot(), ...segments);
}

function repoRoot(): string {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'drainguard') {
      return dir;
    }
  }
  throw new Error(`cannot find the drainguard repository above ${__dirname}`);
}

/** The pod of Contour's upstream Envoy DaemonSet (the fixture every benchmark starts from). */
export function contourPod(): Pod {
  const daemonSet = parse(
    readFileSync(repoPath('..', 'shared', 'fixtures', 'contour', '03-envoy-main.yaml'), 'utf8'),
  ) as { spec: { template: Pod } };
  return { apiVersion: 'v1', kind: 'Pod', ...structuredClone(daemonSet.spec.template) };
}

/**
 * The Contour pod grown to about `targetBytes` of JSON with extra application containers carrying
 * many environment variables — the shape that made whole-object diffs slow in other injectors.
 */
export function inflatedPod(targetBytes: number): Pod {
  const pod = contourPod();
  let index = 0;
  while (JSON.stringify(pod).length < targetBytes) {
    const container: Container = {
      name: `app-${index}`,
      image: `registry.example.com/team/app-${index}:1.0.${index}`,
      env: Array.from({ length: 24 }, (_, i) => ({ name: `SETTING_${index}_${i}`, value: `value-${index}-${i}-abcdefgh` })),
      ports: [{ containerPort: 9000 + index, name: `p${index}` }],
      resources: { requests: { cpu: '50m', memory: '64Mi' } },
    };
    pod.spec.containers.push(container);
    index += 1;
  }
  return pod;
}

/**
 * Every fixture pod: test/fixtures/pods/*.yaml and the pod templates of the shared Contour DaemonSets.
 * (test/integration/server/webhook-test-kit.ts has the same list, but finds the repository relative to
 * its own file, which does not hold once it is compiled into the bench cache.)
 */
export function fixturePods(): { name: string; pod: Pod }[] {
  const yamlFiles = (dir: string) =>
    readdirSync(dir)
      .filter((file) => file.endsWith('.yaml'))
      .sort()
      .map((file) => ({ file, documents: parseAllDocuments(readFileSync(join(dir, file), 'utf8')).map((doc) => doc.toJS() as unknown) }));
  const pods: { name: string; pod: Pod }[] = [];
  for (const { file, documents } of yamlFiles(repoPath('test', 'fixtures', 'pods'))) {
    for (const doc of documents) if ((doc as Pod | null)?.kind === 'Pod') pods.push({ name: file, pod: doc as Pod });
  }
  for (const { file, documents } of yamlFiles(repoPath('..', 'shared', 'fixtures', 'contour'))) {
    for (const doc of documents) {
      const daemonSet = doc as { kind?: string; spec?: { template?: Pod } } | null;
      const template = daemonSet?.kind === 'DaemonSet' ? daemonSet.spec?.template : undefined;
      if (template) pods.push({ name: `shared/contour/${file}`, pod: { apiVersion: 'v1', kind: 'Pod', ...structuredClone(template) } });
    }
  }
  return pods;
}
