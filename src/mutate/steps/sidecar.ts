/**
 * The shutdown-manager sidecar, once the drain hook is in. `disarm` keeps it but strips its preStop
 * and liveness probe (its requests are filled with the other requests); `remove` deletes it, and its
 * drain-on-restart preStop, its liveness probe and its unauthenticated port go with it. Volumes
 * always stay: Envoy still uses the admin socket directory.
 */
import type { Lifecycle } from '../../k8s';
import { sidecarPath, type StepContext } from './context';

export function applyDisarm(context: StepContext): void {
  if (context.drain === undefined || context.sidecarMode !== 'disarm') return;
  for (const sidecar of context.sidecars) {
    const path = sidecarPath(sidecar);
    const lifecycle = context.builder.read([...path, 'lifecycle']) as Lifecycle | undefined;
    // A lifecycle that held only the preStop goes whole: an empty `lifecycle: {}` says nothing.
    const onlyPreStop = lifecycle !== undefined && lifecycle.preStop !== undefined && Object.keys(lifecycle).length === 1;
    context.builder.remove(onlyPreStop ? [...path, 'lifecycle'] : [...path, 'lifecycle', 'preStop']);
    context.builder.remove([...path, 'livenessProbe']);
  }
}

/**
 * Removal is index-based, so it must be the last step (after every operation that addresses
 * containers by index), in descending index order within each list, so no index shifts under a
 * later operation.
 */
export function applyRemoval(context: StepContext): void {
  if (context.drain === undefined || context.sidecarMode !== 'remove') return;
  const byListThenDescendingIndex = [...context.sidecars].sort((a, b) =>
    a.list === b.list ? b.index - a.index : a.list.localeCompare(b.list),
  );
  for (const sidecar of byListThenDescendingIndex) context.builder.remove(sidecarPath(sidecar));
}
