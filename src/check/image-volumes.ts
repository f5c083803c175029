/**
 * Where image volumes work (`installer.delivery: image-volume`, docs/configuration.md "Copy or image
 * volume"): what the API server, each node's kubelet and its container runtime need, judged from the
 * versions they report. Pure: the facts come from `/version` and each Node's `status.nodeInfo`.
 *
 * The facts, from the sources (docs/configuration.md lists them):
 * - feature gate ImageVolume: alpha (off) 1.31, beta off 1.33, beta on 1.35, GA locked on 1.36
 *   (kubernetes pkg/features/kube_features.go). The API server drops `volumes[].image` with the gate off;
 *   the kubelet registers the image volume plugin only with it on;
 * - containerd mounts image volumes from 2.1.0 (CRI `Mount.image`, containerd PR #10579), CRI-O from
 *   1.31.0; both mount them without noexec. cri-dockerd does not mount them.
 */

/** Whether a part can: yes, no, or the version does not show it (a gate that may have been changed, an unknown runtime). */
export type Capability = 'yes' | 'no' | 'unknown';

export interface Judgement {
  capability: Capability;
  /** Why, in words a check line can carry. */
  reason: string;
}

/** The node facts the judgement needs (`status.nodeInfo`). */
export interface NodeInfoView {
  name: string;
  kubeletVersion: string;
  containerRuntimeVersion: string;
}

/** A node's judgement, as `check -o json` reports it. */
export interface NodeImageVolumes extends NodeInfoView, Judgement {}

/** The gate's history (kube_features.go): from these minors on, by default. */
const GATE = { alpha: 31, betaOff: 33, onByDefault: 35, locked: 36 } as const;

/** The oldest runtime release that mounts image volumes. */
export const RUNTIME_MINIMUMS = {
  containerd: { version: [2, 1, 0] as const, label: 'containerd' },
  'cri-o': { version: [1, 31, 0] as const, label: 'CRI-O' },
} as const;

/** `1.36` from `v1.36.2`, `v1.36.2-eks-1a2b3c`, `v1.36.2+k3s1`. */
export function kubernetesMinor(version: string): { major: number; minor: number } | undefined {
  const match = /^v?(\d{1,4})\.(\d{1,4})(?:[.\-+]|$)/.exec(version.trim());
  return match ? { major: Number(match[1]), minor: Number(match[2]) } : undefined;
}

/** What the ImageVolume gate is by default in a component of this release. */
function gateAt(release: { major: number; minor: number }): 'absent' | 'off-by-default' | 'on-by-default' | 'locked-on' {
  if (release.major > 1) return 'locked-on';
  if (release.minor < GATE.alpha) return 'absent';
  if (release.minor < GATE.onByDefault) return 'off-by-default';
  return release.minor < GATE.locked ? 'on-by-default' : 'locked-on';
}

function gateStage(minor: number): string {
  return minor < GATE.betaOff ? 'alpha' : 'beta';
}

/** Whether a kubelet of `version` mounts image volumes. */
export function kubeletImageVolumes(version: string): Judgement {
  const release = kubernetesMinor(version);
  if (release === undefined) return { capability: 'unknown', reason: `kubelet ${JSON.stringify(version)}: not a Kubernetes version` };
  const label = `kubelet ${version}`;
  switch (gateAt(release)) {
    case 'absent':
      return { capability: 'no', reason: `${label} has no image volumes (they came in 1.31)` };
    case 'off-by-default':
      return { capability: 'unknown', reason: `${label}: the ImageVolume feature gate is ${gateStage(release.minor)} and off by default (on only if the kubelet was started with it)` };
    case 'on-by-default':
      return { capability: 'yes', reason: `${label}: ImageVolume on by default (beta; unless turned off)` };
    case 'locked-on':
      return { capability: 'yes', reason: `${label}: ImageVolume GA` };
  }
}

/** `[2, 1, 0]` from `2.1.0`, `v2.1.3`, `1.7.27-1`, `2.2.3-k3s1`. */
function releaseNumbers(version: string): [number, number, number] | undefined {
  const match = /^v?(\d{1,6})\.(\d{1,6})(?:\.(\d{1,6}))?/.exec(version);
  return match ? [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)] : undefined;
}

function atLeast(have: readonly number[], need: readonly number[]): boolean {
  for (let i = 0; i < need.length; i += 1) if ((have[i] ?? 0) !== need[i]) return (have[i] ?? 0) > need[i]!;
  return true;
}

/** Whether a container runtime (`containerd://2.1.0`, `cri-o://1.31.2`, `docker://29.6.2`) mounts image volumes. */
export function runtimeImageVolumes(containerRuntimeVersion: string): Judgement {
  const match = /^([a-z0-9.-]+):\/\/(.+)$/i.exec(containerRuntimeVersion.trim());
  if (match === null) return { capability: 'unknown', reason: `container runtime ${JSON.stringify(containerRuntimeVersion)}: not NAME://VERSION` };
  const name = match[1]!.toLowerCase();
  const version = match[2]!;
  if (name === 'docker') return { capability: 'no', reason: `Docker ${version} (cri-dockerd) does not mount image volumes` };
  const minimum = name === 'containerd' || name === 'cri-o' ? RUNTIME_MINIMUMS[name] : undefined;
  if (minimum === undefined) return { capability: 'unknown', reason: `container runtime ${containerRuntimeVersion}: drainguard does not know whether it mounts image volumes` };
  const numbers = releaseNumbers(version);
  const needs = minimum.version.join('.');
  if (numbers === undefined) return { capability: 'unknown', reason: `${minimum.label} ${JSON.stringify(version)}: not a version (image volumes need ${needs} or newer)` };
  return atLeast(numbers, minimum.version)
    ? { capability: 'yes', reason: `${minimum.label} ${version}` }
    : { capability: 'no', reason: `${minimum.label} ${version}: image volumes need ${needs} or newer` };
}

/** Both: a node mounts image volumes when its kubelet and its runtime both do. */
export function nodeImageVolumes(node: NodeInfoView): NodeImageVolumes {
  const parts = [kubeletImageVolumes(node.kubeletVersion), runtimeImageVolumes(node.containerRuntimeVersion)];
  const failing = parts.filter((part) => part.capability === 'no');
  const unknown = parts.filter((part) => part.capability === 'unknown');
  const capability: Capability = failing.length > 0 ? 'no' : unknown.length > 0 ? 'unknown' : 'yes';
  // Say why it cannot (or may not); for a node that can, both versions.
  const reasons = capability === 'yes' ? parts : failing.length > 0 ? failing : unknown;
  return { ...node, capability, reason: reasons.map((part) => part.reason).join('; ') };
}

/** Whether the API server keeps `volumes[].image` (a control plane of `version`). */
export function controlPlaneImageVolumes(version: string): Judgement {
  const release = kubernetesMinor(version);
  if (release === undefined) return { capability: 'unknown', reason: `Kubernetes ${JSON.stringify(version)}: not a version` };
  const label = `Kubernetes ${release.major}.${release.minor}`;
  switch (gateAt(release)) {
    case 'absent':
      return { capability: 'no', reason: `${label} has no image volumes (from 1.31): its API server would store an empty emptyDir in their place` };
    case 'off-by-default':
      return {
        capability: 'no',
        reason: `${label}: the ImageVolume feature gate is ${gateStage(release.minor)} and off by default, and an API server with it off drops image volumes silently (the chart refuses image-volume below 1.35)`,
      };
    case 'on-by-default':
      return { capability: 'yes', reason: `${label}: ImageVolume on by default (beta; an API server started with it off would drop image volumes)` };
    case 'locked-on':
      return { capability: 'yes', reason: `${label}: ImageVolume GA, always on` };
  }
}

/** Node names shown in a line; `-o json` lists every node. */
const NODES_SHOWN = 5;

function someNames(nodes: readonly NodeImageVolumes[]): string {
  const shown = nodes.slice(0, NODES_SHOWN).map((node) => node.name).join(', ');
  return nodes.length > NODES_SHOWN ? `${shown}, and ${nodes.length - NODES_SHOWN} more` : shown;
}

/** `1 of 3 nodes can mount image volumes; 1 cannot (node-b); 1 may not (node-c)`. */
export function describeNodes(nodes: readonly NodeImageVolumes[]): string {
  if (nodes.length === 0) return 'the cluster lists no nodes';
  const unable = nodes.filter((node) => node.capability === 'no');
  const unsure = nodes.filter((node) => node.capability === 'unknown');
  const parts = [`${nodes.length - unable.length - unsure.length} of ${nodes.length} node${nodes.length === 1 ? '' : 's'} can mount image volumes`];
  if (unable.length > 0) parts.push(`${unable.length} cannot (${someNames(unable)})`);
  if (unsure.length > 0) parts.push(`${unsure.length} may not (${someNames(unsure)})`);
  return parts.join('; ');
}
