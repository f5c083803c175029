/**
 * Step 4: Envoy's own preStop runs the installed drain program, every argument computed from the
 * pod. Only Envoy's own termination drains Envoy: no sidecar, no file handshake, no listening socket.
 */
import { drainCommand } from '../../drain-contract';
import { installedProgramPath } from '../install-target';
import { excludedListenerPorts, listenerExclusionPattern } from '../ports';
import type { Container, LifecycleHandler } from '../k8s';
import type { ResolvedAdmin } from '../resolve-admin';
import { jsonEqual } from '../json-value';
import { currentEnvoy, type MutationContext } from './context';

export function adminPort(admin: ResolvedAdmin): number | undefined {
  return admin.address.kind === 'tcp' ? admin.address.port : undefined;
}

export function excludedPortsFor(envoy: Container, admin: ResolvedAdmin): number[] {
  return excludedListenerPorts(envoy, adminPort(admin));
}

export function applyPreStop(context: MutationContext): void {
  const { installTarget } = context;
  if (!context.installDrain || installTarget.kind === 'impossible') return;
  const envoy = currentEnvoy(context);
  const programPath = installedProgramPath(installTarget.mount, context.config);
  const { timing, admin } = context;
  const command = drainCommand(programPath, {
    admin: admin.address,
    deadlineMs: timing.deadlineSeconds * 1000,
    drainDelayMs: timing.drainDelaySeconds * 1000,
    minDrainMs: timing.minDrainSeconds * 1000,
    minConnections: timing.minConnections,
    pollIntervalMs: timing.pollIntervalSeconds * 1000,
    excludeListeners: excludedPortsFor(envoy, admin).map(listenerExclusionPattern),
  });
  const desired: LifecycleHandler = { exec: { command } };
  if (jsonEqual(envoy.lifecycle?.preStop, desired)) return;
  // Replacing the whole handler drops the old httpGet/exec/sleep: exactly one handler remains.
  context.builder.set([...context.envoyPath, 'lifecycle', 'preStop'], desired);
}
