/**
 * `drainguard check` on a cluster whose drainguard delivers the drain program as an image volume
 * (`installer.delivery: image-volume`): which nodes can mount image volumes, from what their kubelet and
 * runtime report; an Envoy pod on a node whose runtime cannot fails, and so does one whose image volume
 * the API server dropped; a pod rewritten in copy mode is listed with the restart that switches it.
 * Against the Kubernetes API double, through the real client, as check.test.ts.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultConfig, type Config } from '../../../src/config';
import { runCheckCommand } from '../../../src/cli/check';
import type { CheckReport, CheckResult } from '../../../src/check/report';
import type { Pod } from '../../../src/mutate';
import { KubeApiDouble, type KubeObject } from '../../support/kube-api-double';
import { temporaryDirectory } from '../server/webhook-test-kit';
import { installDrainguard, namespace, node, OPT_IN, pod, templates } from './cluster-scenario';

const directory = temporaryDirectory();
afterAll(() => directory.remove());

const imageVolume: Config = { ...defaultConfig(), installer: { ...defaultConfig().installer, delivery: 'image-volume' } };
const ENVOY = { kind: 'DaemonSet', name: 'envoy' } as const;

let double: KubeApiDouble;
beforeEach(async () => {
  double = await KubeApiDouble.start();
  await installDrainguard(double, { set: { 'config.installer.delivery': 'image-volume' }, kubeVersion: '1.36.2' });
  double.put(node('node-a', 'v1.36.2', 'containerd://2.1.4'));
  double.put(node('node-b', 'v1.36.2', 'containerd://1.7.27'));
  double.put(node('node-c', 'v1.34.1', 'cri-o://1.34.2'));
  double.put(namespace('projectcontour', OPT_IN));
});
afterEach(() => double.close());

async function check(output: 'json' | 'text'): Promise<{ code: number; stdout: string }> {
  const kubeconfig = join(directory.path, `kubeconfig-${Date.now()}-${Math.random()}`);
  writeFileSync(kubeconfig, double.kubeconfigYaml());
  let stdout = '';
  const code = await runCheckCommand(['-A', '--kubeconfig', kubeconfig, ...(output === 'json' ? ['-o', 'json'] : [])], { stdout: (text) => (stdout += text), env: {} });
  return { code, stdout };
}

async function report(): Promise<{ code: number; report: CheckReport }> {
  const { code, stdout } = await check('json');
  return { code, report: JSON.parse(stdout) as CheckReport };
}

const podLine = (result: CheckReport, name: string): CheckResult | undefined => result.checks.find((c) => c.id === 'pod' && c.message.startsWith(`projectcontour/${name}:`));

/** What an API server with the ImageVolume gate off stores: the pod without the image volume and Envoy's mount of it. */
function droppedImageVolume(stored: KubeObject): KubeObject {
  const spec = (stored as unknown as Pod).spec;
  const dropped = new Set((spec.volumes ?? []).filter((volume) => volume.image !== undefined).map((volume) => volume.name));
  spec.volumes = spec.volumes?.filter((volume) => !dropped.has(volume.name));
  for (const container of spec.containers) container.volumeMounts = container.volumeMounts?.filter((mount) => !dropped.has(mount.name));
  return stored;
}

test('every node judged by its kubelet and runtime; the ones that cannot or may not are named', async () => {
  const { report: result } = await report();
  expect(result.nodes?.map(({ name, capability }) => [name, capability])).toEqual([
    ['node-a', 'yes'],
    ['node-b', 'no'],
    ['node-c', 'unknown'],
  ]);
  const nodeLines = result.checks.filter((c) => c.category === 'nodes').map((c) => `${c.verdict} ${c.message}`);
  expect(nodeLines).toEqual([
    'info 1 of 3 nodes can mount image volumes; 1 cannot (node-b); 1 may not (node-c) (installer.delivery: image-volume)',
    'info node node-b cannot mount image volumes: containerd 1.7.27: image volumes need 2.1.0 or newer (kubelet v1.36.2, containerd://1.7.27)',
    'info node node-c may not mount image volumes: kubelet v1.34.1: the ImageVolume feature gate is beta and off by default (on only if the kubelet was started with it) (kubelet v1.34.1, cri-o://1.34.2)',
  ]);
});

test('an Envoy pod on a node that can passes; one on a node whose runtime cannot fails, naming the node and why', async () => {
  double.put(pod(templates.contour(), { name: 'envoy-a', namespace: 'projectcontour', owner: ENVOY, state: 'protected', config: imageVolume, nodeName: 'node-a' }));
  double.put(pod(templates.contour(), { name: 'envoy-b', namespace: 'projectcontour', owner: ENVOY, state: 'protected', config: imageVolume, nodeName: 'node-b' }));
  double.put(pod(templates.contour(), { name: 'envoy-c', namespace: 'projectcontour', owner: ENVOY, state: 'protected', config: imageVolume, nodeName: 'node-c' }));
  const { code, report: result } = await report();
  expect(podLine(result, 'envoy-a')).toMatchObject({ verdict: 'pass', message: expect.stringMatching(/^projectcontour\/envoy-a: protected by drainguard \S+ \(the drain program from an image volume\); drain: /) });
  expect(podLine(result, 'envoy-b')).toMatchObject({
    verdict: 'fail',
    message: expect.stringContaining('its node node-b cannot mount image volumes (containerd 1.7.27: image volumes need 2.1.0 or newer)'),
    hint: expect.stringContaining('keep Envoy off such nodes'),
  });
  // A kubelet whose gate may have been turned on: said, not failed.
  expect(podLine(result, 'envoy-c')).toMatchObject({ verdict: 'pass', message: expect.stringContaining('its node node-c may not mount image volumes') });
  expect(result.checks.find((c) => c.id === 'pod' && c.pod?.name === 'envoy-a')?.pod).toMatchObject({ delivery: 'image-volume', node: 'node-a' });
  expect(code).toBe(1);
});

test('a pod whose image volume the API server dropped fails: its preStop points at nothing', async () => {
  double.put(droppedImageVolume(pod(templates.contour(), { name: 'envoy-d', namespace: 'projectcontour', owner: ENVOY, state: 'protected', config: imageVolume, nodeName: 'node-a' })));
  const { report: result } = await report();
  expect(podLine(result, 'envoy-d')).toMatchObject({
    verdict: 'fail',
    message: expect.stringContaining('its image volume is missing: the preStop runs /drainguard/envoy-shutdown, which nothing mounts'),
    hint: expect.stringContaining('turn the ImageVolume feature gate on in the API server'),
  });
  expect(podLine(result, 'envoy-d')?.pod?.imageVolumeMissing).toBe('/drainguard/envoy-shutdown');
});

test('a pod rewritten in copy mode is not protected as configured now: it fails, with the restart that switches it', async () => {
  double.put(pod(templates.contour(), { name: 'envoy-e', namespace: 'projectcontour', owner: ENVOY, state: 'protected', nodeName: 'node-a' }));
  const { report: result } = await report();
  expect(podLine(result, 'envoy-e')).toMatchObject({
    verdict: 'fail',
    message: expect.stringMatching(/rewritten by drainguard \S+ with the drain program copied by the installer, not an image volume as installer\.delivery now says/),
    pod: expect.objectContaining({ protection: 'other-delivery', delivery: 'copy' }),
  });
  expect(result.fixes).toEqual([expect.objectContaining({ pods: ['envoy-e'], commands: ['kubectl -n projectcontour rollout restart daemonset/envoy'] })]);
});

test('the text report: a section for the nodes, and the failing pod with its hint', async () => {
  double.put(pod(templates.contour(), { name: 'envoy-b', namespace: 'projectcontour', owner: ENVOY, state: 'protected', config: imageVolume, nodeName: 'node-b' }));
  const { code, stdout } = await check('text');
  expect(stdout).toContain('\nnodes (image volumes)\n---------------------\nℹ 1 of 3 nodes can mount image volumes; 1 cannot (node-b); 1 may not (node-c) (installer.delivery: image-volume)\n');
  expect(stdout).toMatch(/\n× projectcontour\/envoy-b: protected by drainguard .*; its node node-b cannot mount image volumes \(containerd 1\.7\.27: image volumes need 2\.1\.0 or newer\)\n {4}keep Envoy off such nodes/);
  expect(code).toBe(1);
});

test('nodes that cannot be listed leave a note, not a failure', async () => {
  double.allowOnly([
    {
      rules: [
        { apiGroups: [''], resources: ['pods', 'events'], verbs: ['list'] },
        { apiGroups: [''], resources: ['namespaces', 'services', 'configmaps', 'secrets'], verbs: ['get'] },
        { apiGroups: ['apps'], resources: ['deployments', 'replicasets'], verbs: ['get'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list'] },
        { apiGroups: ['admissionregistration.k8s.io'], resources: ['mutatingwebhookconfigurations'], verbs: ['get'] },
      ],
    },
  ]);
  const { report: result } = await report();
  expect(result.nodes).toBeUndefined();
  expect(result.checks.filter((c) => c.category === 'nodes')).toEqual([
    expect.objectContaining({ verdict: 'info', message: expect.stringMatching(/^nodes: not allowed to list nodes .*: which nodes can mount image volumes is not known \(installer\.delivery: image-volume\)$/) }),
  ]);
});

test('in copy mode one note counts the nodes that could mount image volumes, for whoever considers switching', async () => {
  await installDrainguard(double);
  const { code, report: result } = await report();
  expect(result.checks.filter((c) => c.category === 'nodes')).toEqual([
    {
      category: 'nodes',
      id: 'image-volumes',
      verdict: 'info',
      message: '1 of 3 nodes can mount image volumes; 1 cannot (node-b); 1 may not (node-c): what installer.delivery: image-volume needs on every node that runs Envoy (installer.delivery: copy now)',
    },
  ]);
  expect(code).toBe(0);
});
