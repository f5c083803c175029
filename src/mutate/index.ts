/**
 * The pure core: `mutate(pod, config)` decides what drainguard does to one Pod (or pod template)
 * and returns a verified JSON Patch. No I/O, no clock, no state: any replica, the CLI and the tests
 * get the same answer for the same input.
 *
 * The pod goes through these modules, in this order:
 *   parse/  the pod's shape is checked (src/k8s/shape.ts) and the drainguard.io annotations read;
 *   facts/  the pod read once: which container is Envoy, its sidecars, commands, hooks, mounts, ports;
 *   plan/   decided from the facts and the configuration: admin address, timing, probes, install target;
 *   steps/  the changes, one ordered list, written through a PatchBuilder;
 *   patch/  the builder, and the verification of the patch before it is answered.
 */
import type { Config } from '../config/types';
import type { Pod } from '../k8s';
import { readFacts } from './facts';
import { parsePod, PROTECTED_LABEL } from './parse';
import { verifyPatch } from './patch/verify';
import { PatchBuilder } from './patch/builder';
import { optedOut, planPod } from './plan';
import type { MutationResult } from './result';
import { applySteps } from './steps';

export * from './result';
export * from '../k8s';
export { validatePod } from '../k8s/validate';
export { podShapeProblems } from '../k8s/shape';
export { PatchVerificationError } from './patch/verify';
// Read-only views of a pod, for `drainguard check` and `drainguard report`: which container is Envoy,
// which are shutdown-manager sidecars, whether a preStop is drainguard's drain, and the status
// annotation, decided exactly as the webhook decides them.
export { Annotations, PROTECTED_LABEL, PROTECTED_LABEL_VALUE, readStatus, type StatusRecord } from './parse';
export { findEnvoy, findShutdownManagers, isDrainguardHook, type SidecarRef } from './facts';

export function mutate(pod: Pod, config: Config): MutationResult {
  const parsed = parsePod(pod);
  if (parsed.kind === 'invalid') return { status: 'invalid', problems: parsed.problems, patch: [], warnings: [] };
  // Every pass computes the desired pod, also when drainguard's status is already there: a later
  // webhook may have undone part of it (re-invocation). When everything holds, no operation at all.
  const plan = parsed.kind === 'opted-out' ? optedOut() : planPod(readFacts(parsed, config), config);
  switch (plan.kind) {
    case 'skip':
      return { status: 'skipped', reason: plan.reason, message: plan.message, patch: [], warnings: plan.warnings };
    case 'deny':
      return { status: 'denied', message: plan.message, patch: [], warnings: plan.warnings };
    case 'leave-whole': {
      const builder = new PatchBuilder(pod);
      if (plan.removeProtectedLabel) builder.remove(['metadata', 'labels', PROTECTED_LABEL]);
      if (builder.size > 0) verifyPatch(pod, builder.patch, builder.draft);
      return { status: 'skipped', reason: 'drain-not-installed', message: plan.message, patch: builder.patch, warnings: plan.warnings };
    }
    case 'protect': {
      const { builder, actions } = applySteps(pod, plan);
      const patch = builder.patch;
      if (patch.length === 0) return { status: 'unchanged', patch: [], warnings: plan.warnings, timeline: plan.timeline };
      verifyPatch(pod, patch, builder.draft);
      return { status: 'mutated', patch, warnings: plan.warnings, actions, timeline: plan.timeline };
    }
  }
}
