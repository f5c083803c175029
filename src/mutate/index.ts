/**
 * The pure core: `mutate(pod, config)` decides what drainguard does to one Pod (or pod template)
 * and returns a verified JSON Patch. No I/O, no clock, no state: any replica, the CLI and the tests
 * get the same answer for the same input.
 *
 * The pod goes through four stages, each a module with one face (its index.ts), in this order:
 *   parse/  the pod as drainguard accepts it: its shape checked (src/k8s/shape.ts), opted out or not,
 *           the drainguard.io annotations read strictly, the status of an earlier pass;
 *   facts/  the pod read once into a snapshot: which container is Envoy and why, its sidecars, every
 *           upstream command and flag, the replaced component's release and defaults, hooks, mounts,
 *           probes, ports, volumes. Nothing after it reads the pod;
 *   plan/   decided from the facts and the configuration alone, rule by rule, in one ordered list:
 *           skip, deny, leave whole, or protect with these changes and this timeline;
 *   patch/  the plan written as operations through one PatchBuilder, verified, and answered.
 * A stage imports only the faces of the stages before it (test/unit/import-graph.test.ts).
 */
import type { Config } from '../config/types';
import type { Pod } from '../k8s';
import { readFacts } from './facts';
import { parsePod } from './parse';
import { writePlan, type MutationResult } from './patch';
import { optedOut, planPod } from './plan';

export * from './result';
export * from '../k8s';
export { validatePod } from '../k8s/validate';
export { podShapeProblems } from '../k8s/shape';
export { PatchVerificationError } from './patch';
// Read-only views of a pod, for `drainguard check` and `drainguard report`: which container is Envoy,
// which are shutdown-manager sidecars, whether a preStop is drainguard's drain, and the status
// annotation, decided exactly as the webhook decides them.
export { Annotations, PROTECTED_LABEL, PROTECTED_LABEL_VALUE, readStatus, type StatusRecord } from './parse';
export { findEnvoy, findShutdownManagers, isDrainguardHook, type SidecarRef } from './facts';

export function mutate(pod: Pod, config: Config): MutationResult {
  const parsed = parsePod(pod);
  if (parsed.kind === 'invalid') return { status: 'invalid', problems: parsed.problems, patch: [], warnings: [] };
  // Every pass plans the whole pod, also when drainguard's status is already there: a later webhook
  // may have undone part of it (re-invocation). When everything holds, the patch is empty.
  const plan = parsed.kind === 'opted-out' ? optedOut() : planPod(readFacts(parsed, config), config);
  return writePlan(pod, plan);
}
