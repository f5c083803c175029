/**
 * Step 4: Envoy's own preStop runs the installed drain program, every argument computed from the
 * pod. Only Envoy's own termination drains Envoy: no sidecar, no file handshake, no listening socket.
 */
import { installedProgramPath } from '../install-target';
import { excludedListenerPorts, listenerExclusionPattern } from '../ports';
import type { Container, LifecycleHandler } from '../k8s';
import type { DrainTiming } from '../drain-timing';
import type { ResolvedAdmin } from '../resolve-admin';
import { jsonEqual } from '../json-value';
import { currentEnvoy, type MutationContext } from './context';

export function drainCommand(programPath: string, admin: ResolvedAdmin, timing: DrainTiming, excludedPorts: readonly number[]): string[] {
  return [
    programPath,
    'drain',
    '--admin',
    admin.parsed.address,
    '--deadline',
    `${timing.deadlineSeconds}s`,
    '--drain-delay',
    `${timing.drainDelaySeconds}s`,
    '--min-drain',
    `${timing.minDrainSeconds}s`,
    '--min-connections',
    String(timing.minConnections),
    '--poll-interval',
    `${timing.pollIntervalSeconds}s`,
    ...excludedPorts.flatMap((port) => ['--exclude-listener', listenerExclusionPattern(port)]),
  ];
}

export function adminPort(admin: ResolvedAdmin): number | undefined {
  return admin.parsed.kind === 'tcp' ? admin.parsed.port : undefined;
}

export function excludedPortsFor(envoy: Container, admin: ResolvedAdmin): number[] {
  return excludedListenerPorts(envoy, adminPort(admin));
}

export function applyPreStop(context: MutationContext): void {
  const { installTarget } = context;
  if (!context.installDrain || installTarget.kind === 'impossible') return;
  const envoy = currentEnvoy(context);
  const programPath = installedProgramPath(installTarget.mount, context.config);
  const command = drainCommand(programPath, context.admin, context.timing, excludedPortsFor(envoy, context.admin));
  const desired: LifecycleHandler = { exec: { command } };
  if (jsonEqual(envoy.lifecycle?.preStop, desired)) return;
  // Replacing the whole handler drops the old httpGet/exec/sleep: exactly one handler remains.
  context.builder.set([...context.envoyPath, 'lifecycle', 'preStop'], desired);
}
