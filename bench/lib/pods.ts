import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { Container, Pod } from '../../src/mutate/k8s';
import { fixturePods } from '../../test/integration/server/webhook-test-kit';
import { repoPath } from '../../test/support/build';

export { repoPath };

/** The pod of Contour's upstream Envoy DaemonSet (the fixture every benchmark starts from). */
export function contourPod(): Pod {
  const daemonSet = parse(
    readFileSync(repoPath('test', 'fixtures', 'contour', '03-envoy-main.yaml'), 'utf8'),
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

export { fixturePods };
