/** What every step receives, and what a step can have done. */
import type { Container } from '../../k8s';
import type { PatchBuilder } from '../patch/builder';
import type { Plan } from '../plan/plan';

/** What a step did (metrics label `action`, the status annotation). */
export type MutationAction =
  | 'resource-requests'
  | 'liveness-probe'
  | 'startup-probe'
  | 'installer'
  | 'prestop'
  | 'protected-label'
  | 'sidecar-disarmed'
  | 'safe-to-evict'
  | 'grace-period'
  | 'sidecar-removed'
  | 'status';

export interface StepContext extends Plan {
  /** Steps write only through the builder, and read the draft it keeps (earlier steps' changes included). */
  readonly builder: PatchBuilder;
  warn(message: string): void;
}

/** Envoy as it is now in the draft. */
export function currentEnvoy(context: StepContext): Container {
  return context.builder.read(context.envoyPath) as Container;
}

/** Where a sidecar is in the pod, as a patch path. */
export function sidecarPath(sidecar: { list: 'containers' | 'initContainers'; index: number }): ['spec', 'containers' | 'initContainers', number] {
  return ['spec', sidecar.list, sidecar.index];
}
