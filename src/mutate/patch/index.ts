/**
 * Stage 4, patch: the plan written as a JSON Patch, verified, and answered. The steps (steps.ts) turn
 * the plan's changes into operations through one PatchBuilder (builder.ts); before the answer leaves,
 * the patch is applied to a copy of the input by an independent applier and the result validated
 * (verify.ts). Any failure there is a drainguard bug and throws.
 */
import type { Pod } from '../../k8s';
import { PROTECTED_LABEL } from '../parse';
import type { MutationAction, Plan, ShutdownTimeline, SkipReason } from '../plan';
import { PatchBuilder, type PatchOperation } from './builder';
import { applySteps } from './steps';
import { verifyPatch } from './verify';

export { PatchBuilder, type PatchOperation, type PathSegment } from './builder';
export { applySteps } from './steps';
export { PatchVerificationError, verifyPatch } from './verify';

/** What `mutate(pod, config)` answers. The webhook, the CLI and the tests only ever switch on `status`. */
export type MutationResult =
  | {
      status: 'mutated';
      patch: PatchOperation[];
      warnings: string[];
      actions: MutationAction[];
      timeline: ShutdownTimeline;
    }
  /** Everything drainguard would do is already done (the pod carries the current status): zero operations. */
  | { status: 'unchanged'; patch: []; warnings: string[]; timeline: ShutdownTimeline }
  /**
   * `message` says what drainguard looked for or found, and why it left the pod alone (`--explain`,
   * logs). The patch is empty, except that a pod left whole (`drain-not-installed`) loses a
   * `drainguard.io/protected` label it carries.
   */
  | { status: 'skipped'; reason: SkipReason; message: string; patch: PatchOperation[]; warnings: string[] }
  /** An invalid override annotation: the pod must be denied with this message. */
  | { status: 'denied'; message: string; patch: []; warnings: string[] }
  /**
   * Not a well-formed Pod: a field drainguard reads has the wrong JSON type (`problems` names each
   * one). The API server never sends such a pod; `drainguard inject` may read one from a file.
   */
  | { status: 'invalid'; problems: string[]; patch: []; warnings: string[] };

/** The answer for `plan` on `pod`: its patch (verified) and what to say. */
export function writePlan(pod: Pod, plan: Plan): MutationResult {
  switch (plan.kind) {
    case 'skip':
      return { status: 'skipped', reason: plan.reason, message: plan.message, patch: [], warnings: plan.warnings };
    case 'deny':
      return { status: 'denied', message: plan.message, patch: [], warnings: plan.warnings };
    case 'leave-whole': {
      // The one change made to a pod left whole: a protected label it carries goes, since nothing there drains.
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
