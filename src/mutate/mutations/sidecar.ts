/**
 * Step 5: the shutdown-manager sidecar. `remove` deletes it (its drain-on-restart preStop, its
 * liveness probe and its unauthenticated port go with it); `disarm` keeps it but strips its preStop
 * and liveness probe and gives it requests. Volumes always stay: Envoy still uses the admin socket dir.
 *
 * Removal is index-based, so it is emitted last (after every operation that addresses containers by
 * index) and in descending index order within each list, so no index shifts under a later operation.
 */
import type { SidecarMode } from '../../config/types';
import type { SidecarRef } from '../detect';
import type { PathSegment } from '../json-pointer';
import type { Container } from '../k8s';
import type { MutationContext } from './context';
import { fillRequests } from './resource-requests';

export function sidecarMode(context: MutationContext): SidecarMode {
  return context.overrides.sidecarMode ?? context.config.sidecarMode;
}

function sidecarPath(sidecar: SidecarRef): PathSegment[] {
  return ['spec', sidecar.list, sidecar.index];
}

/** Requests for every sidecar that stays (disarmed, or kept because the drain was not installed). */
export function applyKeptSidecarRequests(context: MutationContext): void {
  if (context.installDrain && sidecarMode(context) === 'remove') return;
  for (const sidecar of context.sidecars) {
    const path = sidecarPath(sidecar);
    fillRequests(context.builder, path, context.builder.read(path) as Container, context.config.requests.sidecar, context.warn);
  }
}

export function applyDisarm(context: MutationContext): void {
  if (!context.installDrain || sidecarMode(context) !== 'disarm') return;
  for (const sidecar of context.sidecars) {
    const path = sidecarPath(sidecar);
    context.builder.remove([...path, 'lifecycle', 'preStop']);
    context.builder.remove([...path, 'livenessProbe']);
  }
}

export function applyRemoval(context: MutationContext): void {
  if (!context.installDrain || sidecarMode(context) !== 'remove') return;
  const byListThenDescendingIndex = [...context.sidecars].sort((a, b) =>
    a.list === b.list ? b.index - a.index : a.list.localeCompare(b.list),
  );
  for (const sidecar of byListThenDescendingIndex) context.builder.remove(sidecarPath(sidecar));
}
