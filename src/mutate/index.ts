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
import type { Container, Pod } from '../k8s';
import { lookedFor, readFacts, type EnvoyDetection } from './facts';
import { Annotations, invalidAnnotationMessage, parsePod, quoteValue } from './parse';
import { verifyPatch } from './patch/verify';
import { PatchBuilder } from './patch/builder';
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
// Read-only views of a pod, for `drainguard check` and `drainguard report`: which container is Envoy,
// which are shutdown-manager sidecars, whether a preStop is drainguard's drain, and the status
// annotation, decided exactly as the webhook decides them.
export { Annotations, PROTECTED_LABEL, PROTECTED_LABEL_VALUE, readStatus, type StatusRecord } from './parse';
export { findEnvoy, findShutdownManagers, isDrainguardHook, type SidecarRef } from './facts';

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
  const parsed = parsePod(pod);
  // A pod opted out is left alone, however it is written.
  if (parsed.kind === 'opted-out') return skipped('opted-out', `annotated ${Annotations.inject}: disabled`);
  if (parsed.kind === 'invalid') return { status: 'invalid', problems: parsed.problems, patch: [], warnings: [] };
  const facts = readFacts(parsed, config);
  const reading = facts.annotations;
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
  if (facts.kind === 'without-envoy') {
    const { detection } = facts;
    if (detection.kind === 'no-containers') return scopeInvalid ? denied(reading.problems) : skipped('no-containers', 'the pod has no containers');
    if (detection.kind === 'missing-override') {
      const names = facts.containerNames.map((name) => quoteValue(name)).join(', ');
      return denied([
        ...reading.problems,
        invalidAnnotationMessage(Annotations.envoyContainer, detection.missingOverride, `the name of one of the pod's containers (${names})`),
      ]);
    }
    // The other overrides of a pod without Envoy of drainguard's would change nothing: they do not deny it.
    if (scopeInvalid) return denied(reading.problems);
    if (detection.kind === 'supervised') {
      const message = supervisedMessage(detection);
      // Only a pod the annotation tried to force is worth a warning: there, the user asked for a drain.
      return skipped('envoy-supervised', message, detection.forced ? [message] : []);
    }
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
  const plan = makePlan(facts, config);
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
  const envoy = pod.spec.containers[facts.envoy.index] as Container;
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
