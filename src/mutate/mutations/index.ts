/**
 * Runs every mutation step in order against one PatchBuilder and records which steps changed
 * something. Order matters: steps read the draft left by earlier ones, and index-based sidecar
 * removals come last.
 */
import type { Analysis } from '../analysis';
import { PatchBuilder } from '../patch-builder';
import type { Pod } from '../k8s';
import type { MutationAction } from '../result';
import { currentEnvoy, type MutationContext } from './context';
import { applyGracePeriodFloor } from './grace-period-floor';
import { applyInstaller } from './installer';
import { applyLivenessProbe } from './liveness-probe';
import { applyPreStop } from './prestop';
import { fillRequests, memoryHeadroomWarning } from './resource-requests';
import { applySafeToEvict } from './safe-to-evict';
import { applyDisarm, applyKeptSidecarRequests, applyRemoval } from './sidecar';
import { applyStatus } from './status';

export function applyMutations(pod: Pod, analysis: Analysis): { builder: PatchBuilder; actions: MutationAction[] } {
  const builder = new PatchBuilder(pod);
  const context: MutationContext = { ...analysis, builder, warn: (message) => analysis.warnings.push(message) };
  const actions: MutationAction[] = [];
  const step = (action: MutationAction, apply: (context: MutationContext) => void): void => {
    const before = builder.size;
    apply(context);
    if (builder.size > before && !actions.includes(action)) actions.push(action);
  };

  step('resource-requests', (ctx) => {
    const wanted = {
      cpu: ctx.overrides.envoyCpuRequest ?? ctx.config.requests.envoy.cpu,
      memory: ctx.overrides.envoyMemoryRequest ?? ctx.config.requests.envoy.memory,
    };
    fillRequests(ctx.builder, ctx.envoyPath, currentEnvoy(ctx), wanted, ctx.warn);
    const headroom = memoryHeadroomWarning(currentEnvoy(ctx), ctx.config.shutdownProgramMemory);
    if (headroom !== undefined) ctx.warn(headroom);
  });
  step('liveness-probe', applyLivenessProbe);
  step('installer', applyInstaller);
  step('prestop', applyPreStop);
  step('sidecar-disarmed', applyDisarm);
  step('resource-requests', applyKeptSidecarRequests);
  step('safe-to-evict', applySafeToEvict);
  step('grace-period', applyGracePeriodFloor);
  // Index-based removals last: nothing after them addresses a container by index.
  step('sidecar-removed', applyRemoval);
  applyStatus(builder, actions);
  return { builder, actions: [...actions, 'status'] };
}
