/**
 * The pure core: `mutate(pod, config)` decides what drainguard does to one Pod (or pod template)
 * and returns a verified JSON Patch. No I/O, no clock, no state: any replica, the CLI and the tests
 * get the same answer for the same input.
 */
import type { Config } from '../config/types';
import { analyse } from './analysis';
import { Annotations } from './annotations';
import { findEnvoy } from './detect';
import type { Container, Pod } from './k8s';
import { applyMutations } from './mutations';
import { hasCurrentStatus } from './mutations/status';
import { INJECT_FORM, invalidAnnotationMessage, quoteValue, readOverrides } from './overrides';
import { podShapeProblems } from './pod-shape';
import type { MutationResult } from './result';
import { shutdownTimeline } from './timeline';
import { verifyPatch } from './verify';

export * from './result';
export * from './k8s';
export { validatePod } from './validate-pod';
export { podShapeProblems } from './pod-shape';
export { PatchVerificationError } from './errors';

function isOptedOut(pod: Pod): boolean {
  const annotations: unknown = (pod as { metadata?: { annotations?: unknown } } | null)?.metadata?.annotations;
  return typeof annotations === 'object' && annotations !== null && (annotations as Record<string, unknown>)[Annotations.inject] === 'disabled';
}

function finalEnvoy(pod: Pod, envoyName: string, fallbackIndex: number): Container {
  return pod.spec.containers.find((c) => c.name === envoyName) ?? (pod.spec.containers[fallbackIndex] as Container);
}

export function mutate(pod: Pod, config: Config): MutationResult {
  // A pod opted out is left alone, however it is written.
  if (isOptedOut(pod)) return { status: 'skipped', reason: 'opted-out', patch: [], warnings: [] };
  const problems = podShapeProblems(pod);
  if (problems.length > 0) return { status: 'invalid', problems, patch: [], warnings: [] };
  const annotations = pod.metadata?.annotations ?? {};
  const inject = annotations[Annotations.inject];
  if (inject !== undefined && inject !== 'enabled') {
    return { status: 'denied', message: invalidAnnotationMessage(Annotations.inject, String(inject), INJECT_FORM), patch: [], warnings: [] };
  }
  if (!Array.isArray(pod.spec?.containers) || pod.spec.containers.length === 0) {
    return { status: 'skipped', reason: 'no-containers', patch: [], warnings: [] };
  }

  const envoyOverride = annotations[Annotations.envoyContainer];
  const detection = findEnvoy(pod, config, envoyOverride);
  if (!detection.found && detection.missingOverride !== undefined) {
    const names = pod.spec.containers.map((c) => quoteValue(c.name)).join(', ');
    return {
      status: 'denied',
      message: invalidAnnotationMessage(Annotations.envoyContainer, detection.missingOverride, `the name of one of the pod's containers (${names})`),
      patch: [],
      warnings: [],
    };
  }
  if (!detection.found) return { status: 'skipped', reason: 'not-envoy', patch: [], warnings: [] };

  const reading = readOverrides(annotations);
  if (!reading.ok) return { status: 'denied', message: reading.message, patch: [], warnings: reading.warnings };

  const analysis = analyse(pod, config, reading.overrides, detection.index);
  // Not unshift(...warnings): one warning per unknown annotation can exceed the argument limit.
  analysis.warnings = reading.warnings.concat(analysis.warnings);
  const envoy = pod.spec.containers[detection.index] as Container;

  if (hasCurrentStatus(pod)) {
    const timeline = shutdownTimeline(envoy, analysis.grace, analysis.timing, analysis.admin, analysis.installDrain, config);
    return { status: 'unchanged', patch: [], warnings: analysis.warnings, timeline };
  }

  const { builder, actions } = applyMutations(pod, analysis);
  const patch = builder.patch;
  verifyPatch(pod, patch, builder.draft);
  const timeline = shutdownTimeline(
    finalEnvoy(builder.draft, envoy.name, detection.index),
    analysis.grace,
    analysis.timing,
    analysis.admin,
    analysis.installDrain,
    config,
  );
  return { status: 'mutated', patch, warnings: analysis.warnings, actions, timeline };
}
