/**
 * The pods tests and benchmarks send, read from the repository's fixture manifests as data.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { parse, parseAllDocuments } from 'yaml';
import type { Container, Pod } from '../../../src/mutate';
import { repoPath } from '../repo';

const CONTOUR_MAIN = repoPath('test', 'fixtures', 'contour', '03-envoy-main.yaml');

/** The pod of Contour's upstream Envoy DaemonSet (the fixture every benchmark starts from). */
export function contourPod(): Pod {
  const daemonSet = parse(readFileSync(CONTOUR_MAIN, 'utf8')) as { spec: { template: Pod } };
  return { apiVersion: 'v1', kind: 'Pod', ...structuredClone(daemonSet.spec.template) };
}

/**
 * Every fixture pod: the Pod documents of test/fixtures/pods/*.yaml, then the pod template of each
 * DaemonSet in test/fixtures/contour/*.yaml (named and namespaced as its controller would create it).
 */
export function fixturePods(): { name: string; pod: Pod }[] {
  const documents = (directory: string) =>
    readdirSync(repoPath(directory))
      .filter((file) => file.endsWith('.yaml'))
      .sort()
      .flatMap((file) => parseAllDocuments(readFileSync(repoPath(directory, file), 'utf8')).map((doc) => ({ file, object: doc.toJS() as unknown })));
  const pods: { name: string; pod: Pod }[] = [];
  for (const { file, object } of documents('test/fixtures/pods')) {
    if ((object as Pod | null)?.kind === 'Pod') pods.push({ name: file, pod: object as Pod });
  }
  for (const { file, object } of documents('test/fixtures/contour')) {
    const daemonSet = object as { kind?: string; metadata?: { name?: string; namespace?: string }; spec?: { template?: Pod } } | null;
    const template = daemonSet?.kind === 'DaemonSet' ? daemonSet.spec?.template : undefined;
    if (!template) continue;
    const metadata = { ...template.metadata, generateName: `${daemonSet?.metadata?.name}-`, namespace: daemonSet?.metadata?.namespace ?? 'default' };
    pods.push({ name: `contour/${file}`, pod: { apiVersion: 'v1', kind: 'Pod', ...template, metadata } });
  }
  return pods;
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
