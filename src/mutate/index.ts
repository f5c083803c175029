/**
 * The pure core: `mutate(pod, config)` decides what drainguard does to one Pod (or pod template)
 * and returns a verified JSON Patch. No I/O, no clock, no state: any replica, the CLI and the tests
 * get the same answer for the same input.
 *
 * The pod's shape is checked first (src/k8s, the pod model), then it goes through four modules, in
 * this order:
 *   envoy/  the reading of an Envoy pod: which container is Envoy, its arguments, hooks, ports,
 *           admin address, where the drain program can live;
 *   plan/   the annotations' overrides, the grace period and timing, all of it decided as one Plan;
 *   steps/  the changes, one ordered list, written through a PatchBuilder;
 *   patch/  the builder, and the verification of the patch before it is answered.
 */
import type { Config } from '../config/types';
import { findEnvoy, lookedFor, type EnvoyDetection } from './envoy/detect';
import type { Container, Pod } from '../k8s';
import { podShapeProblems } from '../k8s/shape';
import { verifyPatch } from './patch/verify';
import { PatchBuilder } from './patch/builder';
import { Annotations, invalidAnnotationMessage, quoteValue, readOverrides } from './plan/annotations';
import { makePlan } from './plan/plan';
import { shutdownTimeline } from './plan/timeline';
import type { MutationResult, SkipReason } from './result';
import { applySteps } from './steps';
import { removeProtectedLabel } from './steps/pod';

export * from './result';
export * from '../k8s';
export { validatePod } from '../k8s/validate';
export { podShapeProblems } from '../k8s/shape';
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

/** A pod left alone: nothing to patch, and a message saying why. */
function skipped(reason: SkipReason, message: string, warnings: string[] = []): MutationResult {
  return { status: 'skipped', reason, message, patch: [], warnings };
}

/** Why a pod whose Envoy runs under a supervisor is left alone, and (when the annotation forced it) the warning. */
function supervisedMessage(detection: Extract<EnvoyDetection, { kind: 'supervised' }>): string {
  const { supervisor } = detection;
  const forced = detection.forced
    ? `; the ${Annotations.envoyContainer} annotation names it, but a drain beside ${supervisor.name}'s own would race it: remove the annotation`
    : '';
  return `${detection.evidence}: Envoy runs under ${supervisor.name}, and ${supervisor.why}; drainguard leaves the pod alone${forced}`;
}

export function mutate(pod: Pod, config: Config): MutationResult {
  // A pod opted out is left alone, however it is written.
  if (isOptedOut(pod)) return skipped('opted-out', `annotated ${Annotations.inject}: disabled`);
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
    return scopeInvalid ? denied(reading.problems) : skipped('no-containers', 'the pod has no containers');
  }

  const envoyOverride = reading.overrides.envoyContainer;
  const detection = findEnvoy(pod, config, envoyOverride);
  if (!detection.found && detection.kind === 'missing-override') {
    const names = pod.spec.containers.map((c) => quoteValue(c.name)).join(', ');
    return denied([
      ...reading.problems,
      invalidAnnotationMessage(Annotations.envoyContainer, detection.missingOverride, `the name of one of the pod's containers (${names})`),
    ]);
  }
  // The other overrides of a pod without Envoy of drainguard's would change nothing: they do not deny it.
  if (!detection.found && scopeInvalid) return denied(reading.problems);
  if (!detection.found && detection.kind === 'supervised') {
    const message = supervisedMessage(detection);
    // Only a pod the annotation tried to force is worth a warning: there, the user asked for a drain.
    return skipped('envoy-supervised', message, detection.forced ? [message] : []);
  }
  if (!detection.found) {
    const named = detection.namedOnly;
    if (named === undefined) return skipped('not-envoy', `no container running Envoy: ${lookedFor(config)}`);
    const message =
      `container ${named} has Envoy's name, but neither its command, its image nor the pod's shape shows that it runs Envoy ` +
      `(${lookedFor(config)}); set the ${Annotations.envoyContainer} annotation to ${named} if it does`;
    return skipped('not-envoy', message, [message]);
  }
  if (reading.problems.length > 0) return denied(reading.problems);

  // Every pass computes the desired pod, also when drainguard's status is already there: a later
  // webhook may have undone part of it (re-invocation). When everything holds, no operation at all.
  const plan = makePlan(pod, config, reading.overrides, detection.index, detection.evidence);
  if (plan.drain === undefined) {
    // No half protection: without the drain, requests and probes alone would have the pod reported as
    // handled. The pod is left whole and the warning says what keeps the drain out; only a protected
    // label it carries (a template copied from an injected one) goes, or the reporter would count
    // every termination as an unreported drain.
    const message = `${plan.drainBlocked}: the drain cannot be installed, so drainguard leaves the pod whole (no drain, probes, requests or installer; a shutdown-manager stays as it is)`;
    const builder = new PatchBuilder(pod);
    const warnings = reading.warnings.concat(message);
    removeProtectedLabel(builder, (warning) => warnings.push(warning));
    if (builder.size > 0) verifyPatch(pod, builder.patch, builder.draft);
    return { status: 'skipped', reason: 'drain-not-installed', message, patch: builder.patch, warnings };
  }
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
