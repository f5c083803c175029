/**
 * Changes to the Envoy container itself, besides its requests: the liveness and startup probes and
 * the preStop hook (docs/design.md, "The liveness probe" and "The preStop hook and its arguments").
 */
import type { LifecycleHandler } from '../../k8s';
import { jsonEqual } from '../patch/json';
import { currentEnvoy, type StepContext } from './context';

/**
 * The planned liveness probe when Envoy has none. A probe of Envoy's own is kept as it is: the kubelet
 * stops liveness probes before it runs preStop, so no liveness probe can cut a drain short.
 */
export function applyLivenessProbe(context: StepContext): void {
  const envoy = currentEnvoy(context);
  if (envoy.livenessProbe !== undefined) return;
  const { probes } = context;
  if ('skipped' in probes) {
    context.warn(`container ${envoy.name}: no liveness probe added: ${probes.skipped}`);
    return;
  }
  context.builder.set([...context.envoyPath, 'livenessProbe'], probes.liveness);
}

/** The planned startup probe: Envoy had neither a liveness nor a startup probe of its own. */
export function applyStartupProbe(context: StepContext): void {
  const { probes } = context;
  if ('skipped' in probes || !probes.addStartup || currentEnvoy(context).startupProbe !== undefined) return;
  context.builder.set([...context.envoyPath, 'startupProbe'], probes.startup);
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
