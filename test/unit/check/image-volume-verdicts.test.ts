/**
 * `drainguard check` in image-volume mode, the parts no real API server here can show: a kubelet that
 * "may not" mount image volumes (its gate off by default: 1.31 to 1.34), several kinds of nodes in one
 * cluster, and a pod whose image volume the API server dropped (an API server with the ImageVolume gate
 * off; on the test cluster's v1.37 the gate is GA and always on). Pure: the pod lines (`judgePod`), the
 * nodes' lines (`imageVolumeNodeChecks`) and the fixes (`planFixes`). test/kube/example-cluster.test.ts
 * shows the rest on the real API server: a node whose containerd cannot mount them, the pod on it, and
 * a pod rewritten in copy mode after the switch.
 */
import { defaultConfig, type Config } from '../../../src/config';
import { nodeImageVolumes, type NodeImageVolumes } from '../../../src/check/image-volumes';
import { assessPod, judgePod } from '../../../src/check/pods';
import type { EnvoyPodReport } from '../../../src/check/report';
import { imageVolumeNodeChecks } from '../../../src/check/run';
import { planFixes } from '../../../src/check/workloads';
import type { Pod } from '../../../src/mutate';
import { runningPod, templates, VERSION } from '../../support/check-pods';

const imageVolume: Config = { ...defaultConfig(), installer: { ...defaultConfig().installer, delivery: 'image-volume' } };

const NODES: NodeImageVolumes[] = [
  nodeImageVolumes({ name: 'node-a', kubeletVersion: 'v1.36.2', containerRuntimeVersion: 'containerd://2.1.4' }),
  nodeImageVolumes({ name: 'node-b', kubeletVersion: 'v1.36.2', containerRuntimeVersion: 'containerd://1.7.27' }),
  nodeImageVolumes({ name: 'node-c', kubeletVersion: 'v1.34.1', containerRuntimeVersion: 'cri-o://1.34.2' }),
];
const JUDGED = { installedVersion: VERSION, delivery: 'image-volume', nodes: new Map(NODES.map((node) => [node.name, node])) } as const;

/** Contour's pod as the webhook rewrites it in image-volume mode, placed on `nodeName`. */
function protectedOn(nodeName: string, name = 'envoy-a'): Pod {
  const pod = runningPod(templates.contour(), { name, namespace: 'projectcontour', state: 'protected', config: imageVolume, owner: { kind: 'DaemonSet', name: 'envoy' } });
  pod.spec.nodeName = nodeName;
  return pod;
}

function report(pod: Pod, config = imageVolume): EnvoyPodReport {
  const assessment = assessPod(pod, config, VERSION);
  if (assessment.kind !== 'envoy') throw new Error(`expected an Envoy pod, got ${assessment.kind}`);
  return assessment.report;
}

test('every node judged by its kubelet and runtime; the ones that cannot or may not get a line each', () => {
  expect(imageVolumeNodeChecks({ nodes: NODES }, 'image-volume').map((line) => `${line.id} ${line.verdict} ${line.message}`)).toEqual([
    'image-volumes info 1 of 3 nodes can mount image volumes; 1 cannot (node-b); 1 may not (node-c) (installer.delivery: image-volume)',
    'node info node node-b cannot mount image volumes: containerd 1.7.27: image volumes need 2.1.0 or newer (kubelet v1.36.2, containerd://1.7.27)',
    'node info node node-c may not mount image volumes: kubelet v1.34.1: the ImageVolume feature gate is beta and off by default (on only if the kubelet was started with it) (kubelet v1.34.1, cri-o://1.34.2)',
  ]);
  // Every node can: one line, passing.
  expect(imageVolumeNodeChecks({ nodes: NODES.slice(0, 1) }, 'image-volume')).toEqual([
    expect.objectContaining({ id: 'image-volumes', verdict: 'pass', message: '1 of 1 node can mount image volumes (installer.delivery: image-volume)' }),
  ]);
});

test('in copy mode one note counts the nodes that could mount image volumes, for whoever considers switching', () => {
  expect(imageVolumeNodeChecks({ nodes: NODES }, 'copy')).toEqual([
    {
      category: 'nodes',
      id: 'image-volumes',
      verdict: 'info',
      message: '1 of 3 nodes can mount image volumes; 1 cannot (node-b); 1 may not (node-c): what installer.delivery: image-volume needs on every node that runs Envoy (installer.delivery: copy now)',
    },
  ]);
});

test('an Envoy pod on a node that can passes; on one whose runtime cannot it fails; on one that may not it passes, saying so', () => {
  expect(judgePod(report(protectedOn('node-a')), JUDGED)).toMatchObject({ verdict: 'pass', message: expect.stringMatching(/^protected by drainguard \S+ \(the drain program from an image volume\); drain: /) });
  expect(judgePod(report(protectedOn('node-b')), JUDGED)).toMatchObject({
    verdict: 'fail',
    message: expect.stringContaining('its node node-b cannot mount image volumes (containerd 1.7.27: image volumes need 2.1.0 or newer)'),
    hint: expect.stringContaining('keep Envoy off such nodes'),
  });
  expect(judgePod(report(protectedOn('node-c')), JUDGED)).toMatchObject({ verdict: 'pass', message: expect.stringContaining('its node node-c may not mount image volumes') });
  expect(report(protectedOn('node-a'))).toMatchObject({ delivery: 'image-volume', node: 'node-a' });
});

test('a pod whose image volume the API server dropped fails: its preStop points at nothing', () => {
  const pod = protectedOn('node-a');
  const dropped = new Set((pod.spec.volumes ?? []).filter((volume) => volume.image !== undefined).map((volume) => volume.name));
  expect([...dropped]).toEqual(['drainguard']);
  pod.spec.volumes = pod.spec.volumes?.filter((volume) => !dropped.has(volume.name));
  for (const container of pod.spec.containers) container.volumeMounts = container.volumeMounts?.filter((mount) => !dropped.has(mount.name));
  const judged = report(pod);
  expect(judged.imageVolumeMissing).toBe('/drainguard/envoy-shutdown');
  expect(judgePod(judged, JUDGED)).toMatchObject({
    verdict: 'fail',
    message: expect.stringContaining('its image volume is missing: the preStop runs /drainguard/envoy-shutdown, which nothing mounts'),
    hint: expect.stringContaining('turn the ImageVolume feature gate on in the API server'),
  });
});

test('a pod rewritten in the other mode is fixed by a restart, and the fix says which mode it was rewritten in', () => {
  const copied = report(runningPod(templates.contour(), { name: 'envoy-e', namespace: 'projectcontour', state: 'protected', owner: { kind: 'DaemonSet', name: 'envoy' } }));
  expect(copied).toMatchObject({ protection: 'other-delivery', delivery: 'copy' });
  expect(judgePod(copied, JUDGED).message).toMatch(/^rewritten by drainguard \S+ with the drain program copied by the installer, not an image volume as installer\.delivery now says/);
  const fromImage = report(protectedOn('node-a', 'envoy-f'), defaultConfig());
  expect(fromImage).toMatchObject({ protection: 'other-delivery', delivery: 'image-volume' });
  const owner = { kind: 'DaemonSet', name: 'envoy', namespace: 'projectcontour' };
  const coverage = { selected: true };
  expect(planFixes([copied, fromImage].map((pod) => ({ pod, owner, coverage, objectSelected: true })))).toEqual([
    {
      workload: owner,
      pods: ['envoy-e', 'envoy-f'],
      why: '1 pod rewritten for installer.delivery: copy, 1 pod rewritten for installer.delivery: image-volume',
      commands: ['kubectl -n projectcontour rollout restart daemonset/envoy'],
    },
  ]);
});
