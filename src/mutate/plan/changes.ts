/** The changes a plan can make, by the names the status annotation and the metrics give them. */

/**
 * What a change did (metrics label `action`, the status annotation), in the order the patch stage
 * makes them; `status` is the annotation itself.
 */
export type MutationAction =
  | 'resource-requests'
  | 'liveness-probe'
  | 'startup-probe'
  | 'installer'
  | 'image-volume'
  | 'prestop'
  | 'protected-label'
  | 'sidecar-disarmed'
  | 'safe-to-evict'
  | 'grace-period'
  | 'sidecar-removed'
  | 'status';

/** How a warning names a change the status annotation records from an earlier pass. */
export const RECORDED = 'installed earlier (drainguard.io/status)';

/**
 * The change that brings the drain program into the pod, per delivery mode: the status annotation
 * records which mode rewrote the pod by it (docs/pod-changes.md).
 */
export const DELIVERY_ACTIONS = { copy: 'installer', 'image-volume': 'image-volume' } as const satisfies Record<string, MutationAction>;

/** Whether an earlier pass recorded `action` in the status annotation. */
export function recorded(actions: readonly string[] | undefined, action: MutationAction): boolean {
  return actions?.includes(action) === true;
}
