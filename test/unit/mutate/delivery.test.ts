/**
 * How the drain program reaches Envoy (`installer.delivery`): copied by an init container (copy, the
 * default), or mounted from its own image as an image volume (image-volume). A pod rewritten in one mode
 * and admitted again in the other ends exactly as a fresh admission in the other.
 */
import { defaultConfig, type Config } from '../../../src/config';
import { mutate, readStatus, type Pod } from '../../../src/mutate';
import { applyIndependently, configWith, container, drainArgs, hasContainer, loadPod, mutateOk, withAnnotations } from './support';

const SAFE_TO_EVICT = 'cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes';
const imageVolume = configWith((config) => (config.installer.delivery = 'image-volume'));
const copyMode = defaultConfig();

function copyOf(pod: Pod): Pod {
  return JSON.parse(JSON.stringify(pod)) as Pod;
}

/** The pod after admission under `config` (any outcome: unchanged and skipped pods too). */
function admitted(pod: Pod, config: Config): Pod {
  return applyIndependently(pod, mutate(pod, config).patch);
}

describe('image-volume: Envoy mounts the drain program from its own image', () => {
  const { result, after } = mutateOk(loadPod('contour-main.yaml'), imageVolume);
  const { image, imagePullPolicy, volumeName, mountPath, containerName } = imageVolume.installer;

  test('the image volume, by the configured reference and pull policy, mounted read-only into Envoy', () => {
    expect(after.spec.volumes).toContainEqual({ name: volumeName, image: { reference: image, pullPolicy: imagePullPolicy } });
    expect(container(after, 'envoy').volumeMounts).toContainEqual({ name: volumeName, mountPath, readOnly: true });
  });

  test('the preStop runs the program where the image volume shows it', () => {
    expect(drainArgs(container(after, 'envoy')).program).toBe(`${mountPath}/envoy-shutdown`);
  });

  test('no init container, no write into the bootstrap volume, no emptyDir added', () => {
    expect(hasContainer(after, containerName)).toBe(false);
    const before = loadPod('contour-main.yaml');
    expect(after.spec.initContainers).toEqual(before.spec.initContainers);
    expect(after.spec.volumes?.filter((v) => v.emptyDir !== undefined)).toEqual(before.spec.volumes?.filter((v) => v.emptyDir !== undefined));
    // The autoscaler's list names the pod's own emptyDirs only: an image volume is no local storage.
    expect(after.metadata?.annotations?.[SAFE_TO_EVICT]?.split(',')).not.toContain(volumeName);
  });

  test('the status annotation records the mode by its change, image-volume, in place of installer', () => {
    expect(result.actions).toContain('image-volume');
    expect(result.actions).not.toContain('installer');
    expect(readStatus(after)?.actions).toEqual(expect.arrayContaining(['image-volume', 'prestop']));
    expect(readStatus(after)?.actions).not.toContain('installer');
  });

  test('a second pass changes nothing', () => {
    expect(mutate(after, imageVolume)).toMatchObject({ status: 'unchanged', patch: [] });
  });

  test('the timeline says how the program arrives', () => {
    expect(result.timeline.delivery).toEqual({ mode: 'image-volume', program: `${mountPath}/envoy-shutdown`, image, volume: volumeName });
  });
});

describe('copy: the timeline says the installer copies the program', () => {
  test('into the bootstrap volume', () => {
    const { result } = mutateOk(loadPod('contour-main.yaml'));
    expect(result.timeline.delivery).toEqual({ mode: 'copy', program: '/config/drainguard/envoy-shutdown', image: copyMode.installer.image, volume: undefined });
  });
});

describe('a change of mode converges: the pod ends as a fresh admission in the new mode', () => {
  // contour-main: the program goes into the bootstrap emptyDir in copy mode; plain-envoy: its bootstrap
  // is a ConfigMap, so copy mode adds drainguard's own emptyDir (and lists it for the autoscaler).
  test.each(['contour-main.yaml', 'plain-envoy.yaml', 'envoy-gateway-envoy.yaml', 'bitnami-envoy.yaml'])('%s', (fixture) => {
    const pod = loadPod(fixture);
    const copied = admitted(pod, copyMode);
    const mounted = admitted(pod, imageVolume);
    expect(copied).not.toEqual(mounted);
    expect(admitted(copied, imageVolume)).toEqual(mounted);
    expect(admitted(mounted, copyMode)).toEqual(copied);
    // And each switch is itself settled: a second pass in the new mode changes nothing.
    expect(mutate(admitted(copied, imageVolume), imageVolume).patch).toEqual([]);
    expect(mutate(admitted(mounted, copyMode), copyMode).patch).toEqual([]);
  });

  test("copy mode's own emptyDir becomes the image volume in place, and leaves the autoscaler's list", () => {
    const copied = admitted(loadPod('plain-envoy.yaml'), copyMode);
    expect(copied.metadata?.annotations?.[SAFE_TO_EVICT]?.split(',')).toContain('drainguard');
    const result = mutate(copied, imageVolume);
    const switched = applyIndependently(copied, result.patch);
    const index = copied.spec.volumes!.findIndex((v) => v.name === 'drainguard');
    expect(switched.spec.volumes![index]).toEqual({ name: 'drainguard', image: { reference: imageVolume.installer.image, pullPolicy: 'IfNotPresent' } });
    expect(switched.metadata?.annotations?.[SAFE_TO_EVICT]?.split(',') ?? []).not.toContain('drainguard');
    expect(hasContainer(switched, 'drainguard-install')).toBe(false);
  });

  test('an installer that was the only init container goes with its list', () => {
    const copied = admitted(loadPod('plain-envoy.yaml'), copyMode);
    expect(copied.spec.initContainers?.map((c) => c.name)).toEqual(['drainguard-install']);
    expect(admitted(copied, imageVolume).spec.initContainers).toBeUndefined();
  });
});

describe('drainguard.io/status records only the mode that holds', () => {
  test.each([
    ['copy, then image-volume', copyMode, imageVolume, 'image-volume', 'installer'],
    ['image-volume, then copy', imageVolume, copyMode, 'installer', 'image-volume'],
  ] as const)('%s', (_label, first, second, kept, dropped) => {
    const twice = admitted(admitted(loadPod('contour-main.yaml'), first), second);
    const actions = readStatus(twice)?.actions ?? [];
    expect(actions).toContain(kept);
    expect(actions).not.toContain(dropped);
  });
});

describe('image-volume protects pods copy mode leaves whole', () => {
  test('a regular container with the installer\'s name keeps copy mode out, not the image volume', () => {
    const pod = loadPod('contour-main.yaml');
    pod.spec.containers.push({ name: 'drainguard-install', image: 'example/app:1' });
    expect(mutate(pod, copyMode)).toMatchObject({ status: 'skipped', reason: 'drain-not-installed' });
    expect(mutate(pod, imageVolume).status).toBe('mutated');
  });
});

describe("drainguard's own volume name taken by the user's volume keeps the drain out", () => {
  test.each([
    ['a ConfigMap', { configMap: { name: 'x' } }, /volume drainguard already exists and is not drainguard's/],
    ["an emptyDir drainguard's status does not record", { emptyDir: {} }, /volume drainguard already exists and is not drainguard's/],
    ['an image volume of another image', { image: { reference: 'example/tools:1', pullPolicy: 'IfNotPresent' } }, /volume drainguard already exists and is not drainguard's/],
  ])('%s', (_label, source, message) => {
    const pod = loadPod('plain-envoy.yaml');
    pod.spec.volumes = [...(pod.spec.volumes ?? []), { name: 'drainguard', ...source }];
    const result = mutate(pod, imageVolume);
    expect(result).toMatchObject({ status: 'skipped', reason: 'drain-not-installed', patch: [] });
    expect(result.warnings).toEqual([expect.stringMatching(message)]);
  });

  test("copy mode takes no image volume its status does not record", () => {
    const pod = loadPod('plain-envoy.yaml');
    pod.spec.volumes = [...(pod.spec.volumes ?? []), { name: 'drainguard', image: { reference: 'example/tools:1' } }];
    expect(mutate(pod, copyMode).warnings).toEqual([expect.stringMatching(/^volume drainguard already exists and is not an emptyDir/)]);
  });

  test('Envoy mounting another volume at the mount path', () => {
    const pod = loadPod('plain-envoy.yaml');
    pod.spec.volumes = [...(pod.spec.volumes ?? []), { name: 'tools', emptyDir: {} }];
    container(pod, 'proxy').volumeMounts = [...(container(pod, 'proxy').volumeMounts ?? []), { name: 'tools', mountPath: '/drainguard' }];
    expect(mutate(pod, imageVolume).warnings).toEqual([expect.stringMatching(/^Envoy already mounts volume tools at \/drainguard: the drain cannot be installed/)]);
  });
});

describe('re-invocation and upgrades in image-volume mode', () => {
  const { after } = mutateOk(loadPod('contour-main.yaml'), imageVolume);

  test('an image volume a later webhook removed comes back, with a warning', () => {
    const later = copyOf(after);
    later.spec.volumes = later.spec.volumes?.filter((v) => v.name !== 'drainguard');
    container(later, 'envoy').volumeMounts = container(later, 'envoy').volumeMounts?.filter((m) => m.name !== 'drainguard');
    const result = mutate(later, imageVolume);
    expect(applyIndependently(later, result.patch)).toEqual(after);
    expect(result.warnings).toContainEqual('image volume drainguard, installed earlier (drainguard.io/status), is gone; added again');
  });

  test("another release's image (a new digest) replaces the recorded one in place", () => {
    const next = configWith((config) => {
      config.installer.delivery = 'image-volume';
      config.installer.image = 'ghcr.io/drainguard/envoy-shutdown:0.2.0@sha256:' + 'a'.repeat(64);
    });
    const result = mutate(after, next);
    const upgraded = applyIndependently(after, result.patch);
    expect(upgraded.spec.volumes).toContainEqual({ name: 'drainguard', image: { reference: next.installer.image, pullPolicy: 'IfNotPresent' } });
    expect(upgraded).toEqual(admitted(loadPod('contour-main.yaml'), next));
  });

  test('an image volume of the configured image is drainguard\'s even when the status annotation went', () => {
    const without = withAnnotations(after, {});
    delete without.metadata!.annotations!['drainguard.io/status'];
    const result = mutate(without, imageVolume);
    expect(result.status).toBe('mutated');
    // Everything holds: only the status annotation comes back.
    expect(result.patch).toEqual([{ op: 'add', path: '/metadata/annotations/drainguard.io~1status', value: expect.any(String) }]);
  });
});
