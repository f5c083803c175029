/**
 * The pure core: `mutate(pod, config)` decides what drainguard does to one Pod (or pod template)
 * and returns a verified JSON Patch. No I/O, no clock, no state: any replica, the CLI and the tests
 * get the same answer for the same input.
 *
 * The pod goes through five modules, in this order:
 *   k8s/    the pod model: its shape is checked before anything reads it;
 *   envoy/  the reading of an Envoy pod: which container is Envoy, its arguments, hooks, ports,
 *           admin address, where the drain program can live;
 *   plan/   the annotations' overrides, the grace period and timing, all of it decided as one Plan;
 *   steps/  the changes, one ordered list, written through a PatchBuilder;
 *   patch/  the builder, and the verification of the patch before it is answered.
 */
import type { Config } from '../config/types';
import { findEnvoy } from './envoy/detect';
import type { Container, Pod } from './k8s';
import { podShapeProblems } from './k8s/shape';
import { verifyPatch } from './patch/verify';
import { Annotations, invalidAnnotationMessage, quoteValue, readOverrides } from './plan/annotations';
import { makePlan } from './plan/plan';
import { shutdownTimeline } from './plan/timeline';
import type { MutationResult } from './result';
import { applySteps } from './steps';

export * from './result';
export * from './k8s';
export { validatePod } from './k8s/validate';
export { podShapeProblems } from './k8s/shape';
export { PatchVerificationError } from './patch/verify';
// Read-only views of a pod, for `drainguard check`: which container is Envoy, which are shutdown-manager
// sidecars, whether a preStop is drainguard's drain, and the status annotation, decided exactly as the
// webhook decides them.
export { Annotations, PROTECTED_LABEL, PROTECTED_LABEL_VALUE } from './plan/annotations';
export { findEnvoy, findShutdownManagers, type SidecarRef } from './envoy/detect';
export { isDrainguardHook } from './envoy/hooks';
export { readStatus, type StatusRecord } from './plan/status';

function isOptedOut(pod: Pod): boolean {
  const annotations: unknown = (pod as { metadata?: { annotations?: unknown } } | null)?.metadata?.annotations;
  return typeof annotations === 'object' && annotations !== null && (annotations as Record<string, unknown>)[Annotations.inject] === 'disabled';
}

export function mutate(pod: Pod, config: Config): MutationResult {
  // A pod opted out is left alone, however it is written.
  if (isOptedOut(pod)) return { status: 'skipped', reason: 'opted-out', patch: [], warnings: [] };
  const problems = podShapeProblems(pod);
  if (problems.length > 0) return { status: 'invalid', problems, patch: [], warnings: [] };
  const annotations = pod.metadata?.annotations ?? {};
  const reading = readOverrides(annotations);
  const denied = (annotationProblems: readonly string[]): MutationResult => ({
    status: 'denied',
    message: annotationProblems.join('; '),
    patch: [],
    warnings: reading.warnings,
  });
  // drainguard.io/inject and drainguard.io/envoy-container decide whether drainguard acts at all: an
  // invalid one denies even a pod drainguard would otherwise skip.
  const decidesScope = (key: string) => reading.problems.some((problem) => problem.startsWith(`annotation ${key}:`));
  const scopeInvalid = decidesScope(Annotations.inject) || decidesScope(Annotations.envoyContainer);
  if (!Array.isArray(pod.spec?.containers) || pod.spec.containers.length === 0) {
    return scopeInvalid ? denied(reading.problems) : { status: 'skipped', reason: 'no-containers', patch: [], warnings: [] };
  }

  const envoyOverride = reading.overrides.envoyContainer;
  const detection = findEnvoy(pod, config, envoyOverride);
  if (!detection.found && detection.missingOverride !== undefined) {
    const names = pod.spec.containers.map((c) => quoteValue(c.name)).join(', ');
    return denied([
      ...reading.problems,
      invalidAnnotationMessage(Annotations.envoyContainer, detection.missingOverride, `the name of one of the pod's containers (${names})`),
    ]);
  }
  if (!detection.found) {
    // The other overrides of a pod without Envoy would change nothing: they do not deny it.
    return scopeInvalid ? denied(reading.problems) : { status: 'skipped', reason: 'not-envoy', patch: [], warnings: [] };
  }
  if (reading.problems.length > 0) return denied(reading.problems);

  // Every pass computes the desired pod, also when drainguard's status is already there: a later
  // webhook may have undone part of it (re-invocation). When everything holds, no operation at all.
  const plan = makePlan(pod, config, reading.overrides, detection.index);
  const envoy = pod.spec.containers[detection.index] as Container;
  const { builder, actions } = applySteps(pod, plan);
  const patch = builder.patch;
  // Envoy as the steps left it: the timeline reports the probes it ends up with.
  const finalEnvoy = builder.draft.spec.containers.find((c) => c.name === envoy.name) ?? envoy;
  // Not unshift(...warnings): one warning per unknown annotation can exceed the argument limit.
  const warnings = reading.warnings.concat(plan.warnings);
  if (patch.length === 0) return { status: 'unchanged', patch: [], warnings, timeline: shutdownTimeline(plan, finalEnvoy) };
  verifyPatch(pod, patch, builder.draft);
  return { status: 'mutated', patch, warnings, actions, timeline: shutdownTimeline(plan, finalEnvoy) };
}
