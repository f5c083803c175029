/**
 * Envoy's preStop (docs/design.md, "The preStop hook and its arguments"): drainguard replaces only a
 * hook it recognises as the shutdown-manager handshake or its own drain; any other is the user's and
 * is kept, and then the drain cannot go in. drainguard's own hook from an earlier run is read back,
 * so that a second pass writes the same hook after the sidecar is gone.
 */
import type { DrainArguments } from '../../drain-contract';
import type { EnvoyPod } from '../facts';
import { RECORDED, recorded } from './changes';

export type EnvoyHook =
  /** A user's preStop drainguard keeps: no drain. */
  | { blocked: string }
  | {
      /** The settings of drainguard's hook from an earlier run, when it can be read. */
      previous: DrainArguments | undefined;
      /** What a later change did to drainguard's recorded drain, restored now (a later webhook?). */
      undoneSinceLastPass: string[];
      /** drainguard's hook from an earlier run that the drain program would refuse. */
      unreadable: string[];
    };

export function envoyHook(pod: EnvoyPod): EnvoyHook {
  const { envoy } = pod;
  const { preStop } = envoy;
  // drainguard installed its drain here before: whatever took its place since is a later change to undo.
  const drainWasInstalled = recorded(pod.status?.actions, 'prestop');
  if (preStop.kind === 'user' && !drainWasInstalled) {
    return {
      blocked:
        `container ${envoy.name}: its preStop hook (${preStop.description}) is not a recognised shutdown-manager hook and is kept ` +
        '(remove it from the pod template for drainguard to drain Envoy)',
    };
  }
  if (preStop.kind === 'drainguard') {
    const { reading } = preStop;
    if ('settings' in reading) return { previous: reading.settings, undoneSinceLastPass: [], unreadable: [] };
    return {
      previous: undefined,
      undoneSinceLastPass: [],
      unreadable: [`container ${envoy.name}: drainguard's own preStop from an earlier run cannot be read (${reading.unreadable}); it is planned afresh`],
    };
  }
  const undoneSinceLastPass: string[] = [];
  if (drainWasInstalled) {
    undoneSinceLastPass.push(
      preStop.kind === 'none'
        ? `container ${envoy.name}: drainguard's drain preStop, ${RECORDED}, is gone; restored`
        : `container ${envoy.name}: drainguard's drain preStop, ${RECORDED}, was replaced by ${preStop.description} (a later webhook?); restored`,
    );
  }
  return { previous: undefined, undoneSinceLastPass, unreadable: [] };
}
