/**
 * Which control planes, kubelets and container runtimes can use image volumes, from the versions they
 * report (`/version`, `status.nodeInfo`): the ImageVolume gate's history in kube_features.go, and the
 * first containerd and CRI-O releases that mount them.
 */
import { controlPlaneImageVolumes, kubeletImageVolumes, nodeImageVolumes, runtimeImageVolumes } from '../../../src/check/image-volumes';

test.each([
  ['v1.30.14', 'no', /has no image volumes/],
  ['v1.31.0', 'unknown', /alpha and off by default/],
  ['v1.33.5-eks-1a2b3c', 'unknown', /beta and off by default/],
  ['v1.34.2', 'unknown', /beta and off by default/],
  ['v1.35.0', 'yes', /on by default \(beta/],
  ['v1.36.2+k3s1', 'yes', /GA/],
  ['v1.37.2', 'yes', /GA/],
  ['v2.0.0', 'yes', /GA/],
  ['nonsense', 'unknown', /not a Kubernetes version/],
])('kubelet %s: %s', (version, capability, reason) => {
  expect(kubeletImageVolumes(version)).toEqual({ capability, reason: expect.stringMatching(reason) });
});

test.each([
  ['containerd://2.1.0', 'yes', /^containerd 2\.1\.0$/],
  ['containerd://v2.2.3-k3s1', 'yes', /containerd v2\.2\.3-k3s1/],
  ['containerd://2.0.7', 'no', /containerd 2\.0\.7: image volumes need 2\.1\.0 or newer/],
  ['containerd://1.7.27-1', 'no', /need 2\.1\.0 or newer/],
  ['containerd://1.7', 'no', /need 2\.1\.0 or newer/],
  ['cri-o://1.31.0', 'yes', /CRI-O 1\.31\.0/],
  ['cri-o://1.30.9', 'no', /CRI-O 1\.30\.9: image volumes need 1\.31\.0 or newer/],
  ['CRI-O://1.36.3', 'yes', /CRI-O 1\.36\.3/],
  ['docker://29.6.2', 'no', /cri-dockerd\) does not mount image volumes/],
  ['containerd://main', 'unknown', /not a version/],
  ['rkt://1.30.0', 'unknown', /does not know whether it mounts image volumes/],
  ['containerd', 'unknown', /not NAME:\/\/VERSION/],
])('runtime %s: %s', (version, capability, reason) => {
  expect(runtimeImageVolumes(version)).toEqual({ capability, reason: expect.stringMatching(reason) });
});

test.each([
  [{ kubeletVersion: 'v1.36.0', containerRuntimeVersion: 'containerd://2.1.4' }, 'yes', 'kubelet v1.36.0: ImageVolume GA; containerd 2.1.4'],
  [{ kubeletVersion: 'v1.36.0', containerRuntimeVersion: 'containerd://1.7.27' }, 'no', 'containerd 1.7.27: image volumes need 2.1.0 or newer'],
  [{ kubeletVersion: 'v1.30.0', containerRuntimeVersion: 'docker://27.0.1' }, 'no', /^kubelet v1\.30\.0 has no image volumes.*; Docker 27\.0\.1/],
  [{ kubeletVersion: 'v1.34.0', containerRuntimeVersion: 'cri-o://1.34.1' }, 'unknown', /^kubelet v1\.34\.0: the ImageVolume feature gate is beta and off by default/],
  // A runtime that cannot outweighs a kubelet that may.
  [{ kubeletVersion: 'v1.34.0', containerRuntimeVersion: 'containerd://2.0.0' }, 'no', /^containerd 2\.0\.0: image volumes need 2\.1\.0 or newer$/],
])('node %j: %s', (info, capability, reason) => {
  const judged = nodeImageVolumes({ name: 'node-a', ...info });
  expect(judged).toEqual({ name: 'node-a', ...info, capability, reason: typeof reason === 'string' ? reason : expect.stringMatching(reason) });
});

test.each([
  ['v1.30.3', 'no', /would store an empty emptyDir/],
  ['v1.32.0', 'no', /alpha and off by default.*drops image volumes silently/],
  ['v1.34.1-gke.100', 'no', /beta and off by default/],
  ['v1.35.4', 'yes', /on by default \(beta; an API server started with it off would drop/],
  ['v1.36.0', 'yes', /GA, always on/],
  ['v1.37.2', 'yes', /GA, always on/],
  ['1.x', 'unknown', /not a version/],
])('control plane %s: %s', (version, capability, reason) => {
  expect(controlPlaneImageVolumes(version)).toEqual({ capability, reason: expect.stringMatching(reason) });
});
