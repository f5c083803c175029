/**
 * Image-volume delivery (`installer.delivery: image-volume`, issue 32) on the real kube-apiserver:
 * drainguard installed from the chart with `config.installer.delivery=image-volume` (and its reporter),
 * Contour's Envoy DaemonSet (test/fixtures/contour, v1.33.6) and Envoy Gateway's proxy Deployment
 * (test/fixtures/upstream, v1.5.3, one of the golden corpus's image-volume fixtures) created as they
 * ship in a namespace opted in to it. The API server runs its admission chain, defaults, validates and
 * stores each pod with the image volume `image: {reference, pullPolicy}`, its read-only mount in Envoy,
 * the preStop running the program from that mount, and no installer init container; and each stored
 * pod is what `drainguard inject --config test/fixtures/configs/image-volume.yaml` writes, in every
 * field drainguard writes (./admission-comparison). The same workloads beside them in a namespace
 * opted in to a release in copy mode (the default) differ from them exactly where the modes differ.
 *
 * Then `kubectl rollout restart` of the DaemonSet: the kubelet stand-in unpacks the drain program's
 * image (`ghcr.io/drainguard/envoy-shutdown`, this checkout's build) into each pod's image volume and
 * mounts it read-only, as a runtime does; each old pod's preStop runs the program from there against
 * the Envoy simulator, nothing having copied it anywhere, and the reporter writes a Drained Event for
 * each. Only the image-volume DaemonSet runs; the other pods are held back from the scheduler (they are
 * admitted and stored, which is all the comparison needs).
 *
 * A node whose runtime cannot mount image volumes, and what `drainguard check` says of the pods placed
 * there, is test/kube/check-docs.test.ts's (a cluster of its own, for its nodes).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfigFile, type Config } from '../../src/config';
import { DRAIN_SUMMARY_ANNOTATION } from '../../src/report/drain-event';
import { drainguard } from '../e2e/cli/run-cli';
import type { KubeObject } from '../support/cluster/api';
import { adminApi, createNamespace, deleteNamespace, eventually, installDrainguard, uninstallDrainguard, type DrainguardRelease } from '../support/cluster/lane';
import { repoPath } from '../support/repo';
import { temporaryDirectory } from '../integration/server/webhook-test-kit';
import { compared, expectStoredAsInjected, referencesOf, type InjectedWorkload, type PodTemplate } from './admission-comparison';
import type { StoredPod } from './admission-kit';
import { keyed, pathText, writesBetween } from './pod-comparison';
import { contourEnvoy, drainEvents, envoyGateway, readyPods, reporterPods, rolloutRestart, sharedCluster, type EnvoyWorkload } from './report/workloads';

const IMAGE_VOLUME_CONFIG = 'test/fixtures/configs/image-volume.yaml';
/** Where the drain program's image puts the program, and where drainguard mounts that image in Envoy. */
const DRAIN_IMAGE = 'ghcr.io/drainguard/envoy-shutdown:0.1.0';
const MOUNT = '/drainguard';

const cluster = sharedCluster();
const api = () => adminApi();
const directory = temporaryDirectory();
const cleanup: (() => Promise<unknown>)[] = [];

interface Mode {
  release: DrainguardRelease;
  namespace: string;
  config: Config;
  configPath: string;
  contour: EnvoyWorkload;
  gateway: EnvoyWorkload;
}

let imageVolume: Mode;
let copy: Mode;
let plainNamespace: string;

/** The release's configuration as its webhook reads it (the chart's ConfigMap), written to a file. */
async function releaseConfig(release: DrainguardRelease): Promise<string> {
  const configMaps = await api().list<KubeObject & { data: Record<string, string> }>(
    `/api/v1/namespaces/${release.namespace}/configmaps?labelSelector=app.kubernetes.io%2Finstance%3D${release.release}`,
  );
  const path = join(directory.path, `${release.release}.yaml`);
  writeFileSync(path, configMaps.items.find((configMap) => configMap.metadata.name.endsWith('-config'))!.data['config.yaml']!);
  return path;
}

async function mode(prefix: string, release: DrainguardRelease, configPath: string, running: boolean): Promise<Mode> {
  const namespace = await createNamespace(prefix, release.optIn);
  cleanup.push(() => deleteNamespace(namespace));
  // A grace period of 15 s: the drain's deadline is 5 s (a drain with no connection ends at once anyway).
  const contour = await contourEnvoy(cluster, namespace, { gracePeriodSeconds: 15, gated: !running });
  const gateway = await envoyGateway(cluster, namespace, { replicas: 1, gated: true });
  return { release, namespace, config: loadConfigFile(repoPath(configPath)), configPath, contour, gateway };
}

beforeAll(async () => {
  const ivRelease = await installDrainguard('adm-imgvol', { 'config.installer.delivery': 'image-volume', 'report.enabled': 'true', 'report.replicaCount': '1' });
  cleanup.push(() => uninstallDrainguard(ivRelease));
  const copyRelease = await installDrainguard('adm-copy');
  cleanup.push(() => uninstallDrainguard(copyRelease));
  plainNamespace = await createNamespace('adm-imgvol-plain');
  cleanup.push(() => deleteNamespace(plainNamespace));
  imageVolume = await mode('adm-imgvol', ivRelease, IMAGE_VOLUME_CONFIG, true);
  copy = await mode('adm-copy', copyRelease, await releaseConfig(copyRelease), false);
  // Envoy Gateway's ServiceAccount, for the dry runs of its pods where no webhook sees them.
  await api().create(`/api/v1/namespaces/${plainNamespace}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'envoy' } });
  const gatewayAccount = (imageVolume.gateway.manifest.spec as { template: PodTemplate }).template.spec.serviceAccountName!;
  await api().create(`/api/v1/namespaces/${plainNamespace}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: gatewayAccount } });
}, 600_000);

afterAll(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
  directory.remove();
}, 300_000);

/** The workload's pod template as applied, and `drainguard inject --config CONFIG` of it (the built CLI, as a process). */
function injected(workload: EnvoyWorkload, configPath: string): InjectedWorkload {
  const result = drainguard(['inject', '-f', '-', '--config', repoPath(configPath), '-o', 'json'], JSON.stringify(workload.manifest));
  if (result.status !== 0) throw new Error(`drainguard inject failed (${result.status}): ${result.stderr}`);
  const output = JSON.parse(result.stdout) as { spec: { template: PodTemplate } };
  return { kind: workload.kind, template: (workload.manifest.spec as { template: PodTemplate }).template, injected: output.spec.template };
}

/** The workload's pods once its controller made them all (`count`), as stored. */
async function storedPods(workload: EnvoyWorkload, count: number): Promise<StoredPod[]> {
  return eventually(`${count} pods of ${workload.kind} ${workload.namespace}/${workload.name}`, async () => {
    const pods = (await api().list<StoredPod>(`/api/v1/namespaces/${workload.namespace}/pods?labelSelector=${encodeURIComponent(workload.selector)}`)).items;
    return pods.length === count ? pods : undefined;
  });
}

const NODES = 2;
const workloads = () =>
  [
    ['Contour DaemonSet', (m: Mode) => m.contour, NODES],
    ['Envoy Gateway Deployment', (m: Mode) => m.gateway, 1],
  ] as const;

test("the release's configuration is test/fixtures/configs/image-volume.yaml's: inject runs with what the webhook runs with", async () => {
  const fromChart = loadConfigFile(await releaseConfig(imageVolume.release));
  expect(fromChart).toEqual(imageVolume.config);
  expect(fromChart.installer).toMatchObject({ delivery: 'image-volume', image: DRAIN_IMAGE });
});

describe.each(workloads())('%s', (_title, workloadOf, count) => {
  test('stored with the image volume, its read-only mount in Envoy, the preStop from the mount, no installer; equal to drainguard inject in every field it writes', async () => {
    const workload = workloadOf(imageVolume);
    const pods = await storedPods(workload, count);
    for (const pod of pods) {
      const volumes = (pod.spec.volumes ?? []).filter((volume) => (volume as { image?: unknown }).image !== undefined);
      expect(volumes).toEqual([{ name: 'drainguard', image: { reference: DRAIN_IMAGE, pullPolicy: 'IfNotPresent' } }]);
      const envoy = pod.spec.containers.find((container) => container.name === 'envoy')!;
      expect(envoy.volumeMounts).toContainEqual({ name: 'drainguard', mountPath: MOUNT, readOnly: true });
      expect(envoy.lifecycle?.preStop?.exec?.command?.slice(0, 2)).toEqual([`${MOUNT}/envoy-shutdown`, 'drain']);
      expect((pod.spec.initContainers ?? []).map((container) => container.name)).not.toContain('drainguard-install');
      expect(JSON.parse(pod.metadata.annotations!['drainguard.io/status']!)).toMatchObject({ actions: expect.arrayContaining(['image-volume']) });
    }
    const asInjected = injected(workload, IMAGE_VOLUME_CONFIG);
    const references = await referencesOf(asInjected.injected, `${workload.name}-`, { plain: plainNamespace, optedIn: workload.namespace });
    expectStoredAsInjected(asInjected, { pods, ...references }, imageVolume.config);
  }, 120_000);

  test('beside the same workload in copy mode: they differ exactly where the modes do', async () => {
    const [copyPod] = await storedPods(workloadOf(copy), count);
    const [imageVolumePod] = await storedPods(workloadOf(imageVolume), count);
    // The copy-mode pods are equal to inject's in copy mode too (the release's own configuration).
    const asInjected = injected(workloadOf(copy), copy.configPath);
    const references = await referencesOf(asInjected.injected, `${workloadOf(copy).name}-`, { plain: plainNamespace, optedIn: copy.namespace });
    expectStoredAsInjected(asInjected, { pods: await storedPods(workloadOf(copy), count), ...references }, copy.config);

    const kind = workloadOf(copy).kind;
    // Which pods are held back from the scheduler is this suite's choice, not drainguard's: left out of both.
    const ungated = (pod: StoredPod) => {
      const { schedulingGates: _gates, ...spec } = compared(pod, kind).spec as Record<string, unknown>;
      return { ...compared(pod, kind), spec };
    };
    const differences = writesBetween(keyed(ungated(copyPod!)), keyed(ungated(imageVolumePod!))).map((write) => `${write.kind} ${pathText(write.path)}`);
    expect(differences.sort()).toEqual(
      (kind === 'DaemonSet'
        ? [
            'changed metadata.annotations.drainguard.io/status',
            'changed spec.containers[name=envoy].lifecycle.preStop.exec.command',
            'added spec.containers[name=envoy].volumeMounts[name=drainguard]',
            'removed spec.initContainers[name=drainguard-install]',
            'added spec.volumes[name=drainguard]',
          ]
        : [
            'removed metadata.annotations.cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes',
            'changed metadata.annotations.drainguard.io/status',
            'changed spec.containers[name=envoy].lifecycle.preStop.exec.command',
            'removed spec.initContainers',
            'removed spec.volumes[name=drainguard].emptyDir',
            'added spec.volumes[name=drainguard].image',
          ]
      ).sort(),
    );
  }, 120_000);
});

test("a rollout restart of the DaemonSet drains each old pod with the program from its image volume, and the reporter writes a Drained Event for each", async () => {
  const daemonSet = imageVolume.contour;
  const old = await readyPods(cluster, daemonSet, NODES);
  // Started by the stand-in as a kubelet starts them: no installer ran (there is none), Envoy runs.
  for (const pod of old) {
    expect((pod.status as { initContainerStatuses?: { name: string }[] }).initContainerStatuses?.map((status) => status.name) ?? []).not.toContain('drainguard-install');
  }
  const [reporter] = await reporterPods(cluster, imageVolume.release, 1);
  await rolloutRestart(cluster, daemonSet);
  const events = await eventually('a drain Event for each old pod', async () => {
    const found = await drainEvents(cluster, daemonSet.namespace, 'pod');
    return found.length === NODES ? found : undefined;
  });
  expect(events.map((event) => event.involvedObject.uid).sort()).toEqual(old.map((pod) => pod.metadata.uid).sort());
  for (const event of events) {
    expect(event).toMatchObject({ reason: 'Drained', type: 'Normal', reportingInstance: reporter!.metadata.name, message: expect.stringMatching(/^drained 0 connections in \d+(\.\d)? s$/) });
    expect(JSON.parse(event.metadata.annotations![DRAIN_SUMMARY_ANNOTATION]!)).toMatchObject({ workload: 'daemonset/envoy', container: 'envoy', outcome: 'drained', deadlineMs: 5000 });
  }
  // The new pods run, from the image volume too.
  for (const pod of (await readyPods(cluster, daemonSet, NODES)) as unknown as StoredPod[]) {
    expect(pod.spec.volumes?.find((volume) => volume.name === 'drainguard')).toEqual({ name: 'drainguard', image: { reference: DRAIN_IMAGE, pullPolicy: 'IfNotPresent' } });
  }
}, 600_000);
