/**
 * The steps: every change drainguard makes to an Envoy pod, in the order it makes them. Each step
 * reads the plan and the draft left by the steps before it, writes through the one PatchBuilder,
 * and is recorded as an action when it added an operation. What each change is and why:
 * docs/pod-changes.md and docs/design.md, "What the webhook changes, and why".
 */
import type { Pod } from '../../k8s';
import { PatchBuilder } from '../patch/builder';
import type { Plan } from '../plan/plan';
import type { MutationAction, StepContext } from './context';
import { applyLivenessProbe, applyPreStop, applyStartupProbe } from './envoy';
import { applyInstaller } from './installer';
import { applyGracePeriodFloor, applyProtectedLabel, applySafeToEvict, applyStatus } from './pod';
import { applyRequests } from './requests';
import { applyDisarm, applyRemoval } from './sidecar';

export type { MutationAction };

interface Step {
  action: MutationAction;
  apply(context: StepContext): void;
}

/** In run order. The status annotation follows them all, recording which of them changed the pod. */
const STEPS: readonly Step[] = [
  // 1. cpu and memory requests for Envoy and for every sidecar that stays.
  { action: 'resource-requests', apply: applyRequests },
  // 2. a liveness probe on Envoy that recovers it when stuck, when it has none;
  { action: 'liveness-probe', apply: applyLivenessProbe },
  //    and a startup probe on the same target, when Envoy had neither probe of its own.
  { action: 'startup-probe', apply: applyStartupProbe },
  // 3. the init container that installs the drain program (and its volume, when it needs its own).
  { action: 'installer', apply: applyInstaller },
  // 4. Envoy's preStop runs the drain program;
  { action: 'prestop', apply: applyPreStop },
  //    and the pod is labelled as protected exactly when it has the drain (the reporter's selector).
  { action: 'protected-label', apply: applyProtectedLabel },
  // 5. in disarm mode, the sidecar loses its preStop and liveness probe.
  { action: 'sidecar-disarmed', apply: applyDisarm },
  // 6. the autoscaler may evict the pod's emptyDirs.
  { action: 'safe-to-evict', apply: applySafeToEvict },
  // 7. the opt-in grace period floor.
  { action: 'grace-period', apply: applyGracePeriodFloor },
  // 8. in remove mode, the sidecar goes. Last: removals shift indices, and nothing after them may
  //    address a container by index.
  { action: 'sidecar-removed', apply: applyRemoval },
];

/** Runs every step for `plan` on `pod`; the builder holds the patch and the resulting pod. */
export function applySteps(pod: Pod, plan: Plan): { builder: PatchBuilder; actions: MutationAction[] } {
  const builder = new PatchBuilder(pod);
  const context: StepContext = { ...plan, builder, warn: (message) => plan.warnings.push(message) };
  const actions: MutationAction[] = [];
  for (const step of STEPS) {
    const before = builder.size;
    step.apply(context);
    if (builder.size > before) actions.push(step.action);
  }
  // 9. the status annotation: what this pass and the earlier ones did, in step order. Unchanged when a
  //    re-invocation found everything in place, so such a pass adds no operation at all.
  const recorded = new Set<string>([...(plan.status?.actions ?? []), ...actions]);
  const wrote = applyStatus(
    builder,
    STEPS.map((step) => step.action).filter((action) => recorded.has(action)),
  );
  return { builder, actions: wrote ? [...actions, 'status'] : actions };
}
