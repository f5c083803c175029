/**
 * Changes to the Envoy container itself, besides its requests: the liveness probe and the preStop
 * hook (docs/design.md, "The liveness probe" and "The preStop hook and its arguments").
 */
import type { LifecycleHandler } from '../k8s';
import { jsonEqual } from '../patch/json';
import { livenessBudgetSeconds } from '../plan/liveness';
import { currentEnvoy, type StepContext } from './context';

/**
 * The planned probe when Envoy has none. A user's probe is kept, with a warning when it could
 * restart Envoy during a legitimate drain.
 */
export function applyLivenessProbe(context: StepContext): void {
  const envoy = currentEnvoy(context);
  const grace = context.grace.effectiveSeconds;
  if (envoy.livenessProbe !== undefined) {
    const budget = livenessBudgetSeconds(envoy.livenessProbe);
    if (budget <= grace) {
      context.warn(
        `container ${envoy.name}: its liveness probe gives up after ${budget}s, not more than the ${grace}s grace period: ` +
          'it can restart Envoy during a legitimate drain (kept as is)',
      );
    }
    return;
  }
  const { liveness } = context;
  if ('skipped' in liveness) {
    context.warn(`container ${envoy.name}: no liveness probe added: ${liveness.skipped}`);
    return;
  }
  if (liveness.capped !== undefined) context.warn(`container ${envoy.name}: liveness probe added, but ${liveness.capped}`);
  context.builder.set([...context.envoyPath, 'livenessProbe'], liveness.probe);
}

/**
 * Envoy's own preStop runs the installed drain program with the planned arguments. Only Envoy's own
 * termination drains Envoy: no sidecar, no file handshake, no listening socket. Replacing the whole
 * handler drops the old httpGet/exec/sleep, so exactly one handler remains.
 */
export function applyPreStop(context: StepContext): void {
  if (context.drain === undefined) return;
  const desired: LifecycleHandler = { exec: { command: context.drain.command } };
  if (jsonEqual(currentEnvoy(context).lifecycle?.preStop, desired)) return;
  context.builder.set([...context.envoyPath, 'lifecycle', 'preStop'], desired);
}
