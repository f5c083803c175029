/**
 * The shutdown-manager sidecars, once the drain hook is in (docs/pod-changes.md): `remove` deletes
 * them, and their drain-on-restart preStop, liveness probe and unauthenticated port go with them;
 * `disarm` keeps them but strips their preStop and liveness probe (their requests are filled with the
 * other requests). Volumes always stay: Envoy still uses the admin socket directory.
 */
import type { Config, SidecarMode } from '../../config/types';
import type { EnvoyPod, Sidecar } from '../facts';
import { recorded } from './changes';

/** A sidecar's place in the pod. */
export interface SidecarPlace {
  list: 'containers' | 'initContainers';
  index: number;
}

export interface SidecarHandling {
  mode: SidecarMode;
  /** In remove mode, the sidecars to remove: in descending index order within each list, so no index shifts under a later removal. */
  removals: SidecarPlace[];
  /** In disarm mode, the sidecars to disarm, and whether their lifecycle goes whole (it held only the preStop). */
  disarm: (SidecarPlace & { wholeLifecycle: boolean })[];
  /** Sidecar preStops that go with the drain though no drain setting could be read from them. */
  warnings: string[];
  /** Sidecars back after an earlier pass removed them. */
  undoneSinceLastPass: string[];
}

export function sidecarHandling(pod: EnvoyPod, config: Config): SidecarHandling {
  const mode = pod.annotations.overrides.sidecarMode ?? config.sidecarMode;
  const place = ({ list, index }: Sidecar): SidecarPlace => ({ list, index });
  const removals =
    mode === 'remove' ? [...pod.sidecars].sort((a, b) => (a.list === b.list ? b.index - a.index : a.list.localeCompare(b.list))).map(place) : [];
  const disarm = mode === 'disarm' ? pod.sidecars.map((sidecar) => ({ ...place(sidecar), wholeLifecycle: sidecar.lifecycleOnlyPreStop })) : [];
  const undoneSinceLastPass =
    mode === 'remove' && recorded(pod.status?.actions, 'sidecar-removed')
      ? pod.sidecars.map((sidecar) => `container ${sidecar.name}: the shutdown-manager came back after drainguard removed it (drainguard.io/status); removed again`)
      : [];
  const warnings: string[] = [];
  for (const sidecar of pod.sidecars) {
    if (sidecar.unreadPreStop === undefined) continue;
    warnings.push(
      `container ${sidecar.name}: its preStop (${sidecar.unreadPreStop}) goes with the sidecar and is not a command drainguard ` +
        "can read drain settings from; drainguard's configured defaults apply",
    );
  }
  return { mode, removals, disarm, warnings, undoneSinceLastPass };
}
