/**
 * The drain hook: Envoy's preStop runs the installed drain program with the planned settings. Only
 * Envoy's own termination drains Envoy: no sidecar, no file handshake, no listening socket.
 */
import { drainCommand, terminationMessagePathProblem, type DrainArguments } from '../../drain-contract';
import type { LifecycleHandler } from '../../k8s';
import type { EnvoyContainer } from '../facts';
import type { ResolvedAdmin } from './admin';
import { listenerExclusionPattern, type ExcludedListener } from './listeners';
import type { DrainTiming } from './timing';

/** The API server's default terminationMessagePath, which a pod read before defaulting may lack. */
export const DEFAULT_TERMINATION_MESSAGE_PATH = '/dev/termination-log';

/**
 * Where the drain writes its record: Envoy's own terminationMessagePath, so that the kubelet reports it
 * (docs/envoy-shutdown.md, "The drain record"). A path the drain contract refuses is not written: the
 * drain runs without a record rather than not at all.
 */
export function terminationMessagePath(envoy: EnvoyContainer): { path: string | undefined; warnings: string[] } {
  // Empty is what the API server defaults, as it does a missing one.
  const path = envoy.terminationMessagePath || DEFAULT_TERMINATION_MESSAGE_PATH;
  const problem = terminationMessagePathProblem(path);
  if (problem === undefined) return { path, warnings: [] };
  const quotedPath = JSON.stringify(path.length > 64 ? `${path.slice(0, 61)}...` : path);
  return {
    path: undefined,
    warnings: [
      `container ${envoy.name}: terminationMessagePath ${quotedPath} cannot take the drain record (${problem}); the drain runs without writing one, and drainguard report will see its terminations as unreported`,
    ],
  };
}

/** Envoy's preStop: the drain program at `program` (its path in Envoy), with every planned setting. */
export function drainHook(
  program: string,
  settings: { admin: ResolvedAdmin; timing: DrainTiming; excluded: readonly ExcludedListener[]; recordPath: string | undefined },
): LifecycleHandler {
  const { admin, timing, excluded, recordPath } = settings;
  const drainSettings: Partial<DrainArguments> = {
    admin: admin.address,
    deadlineMs: timing.deadlineSeconds * 1000,
    drainDelayMs: timing.drainDelaySeconds * 1000,
    minDrainMs: timing.minDrainSeconds * 1000,
    minConnections: timing.minConnections,
    pollIntervalMs: timing.pollIntervalSeconds * 1000,
    excludeListeners: excluded.map((listener) => listenerExclusionPattern(listener.port)),
  };
  if (recordPath !== undefined) drainSettings.terminationMessagePath = recordPath;
  const command = drainCommand(program, drainSettings);
  // Replacing the whole handler drops the old httpGet/exec/sleep, so exactly one handler remains.
  return { exec: { command } };
}
