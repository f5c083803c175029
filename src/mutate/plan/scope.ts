/**
 * Whether drainguard acts on the pod at all (docs/design.md, "Which pods"): a pod without Envoy of
 * drainguard's is skipped with a message saying what was looked for or found, and an invalid
 * drainguard.io annotation denies the pod, naming every invalid one.
 */
import type { Config } from '../../config/types';
import { lookedFor, type EnvoyPod, type PodFacts, type PodWithoutEnvoy } from '../facts';
import { Annotations, invalidAnnotationMessage, quoteValue } from '../parse';

/**
 * Why a pod was let through untouched (metrics label, log field): no Envoy container, opted out, no
 * containers at all, Envoy run by another supervisor (docs/design.md, "Which pods"), or an Envoy pod
 * whose drain drainguard cannot install, which it leaves whole rather than half protected.
 */
export type SkipReason = 'not-envoy' | 'opted-out' | 'no-containers' | 'envoy-supervised' | 'drain-not-installed';

/** A pod left alone: `message` says what drainguard looked for or found, and why. */
export interface Skip {
  kind: 'skip';
  reason: Exclude<SkipReason, 'drain-not-installed'>;
  message: string;
  warnings: string[];
}

/** An invalid override annotation: the pod is denied with this message. */
export interface Deny {
  kind: 'deny';
  message: string;
  warnings: string[];
}

function skip(reason: Skip['reason'], message: string, warnings: string[] = []): Skip {
  return { kind: 'skip', reason, message, warnings };
}

function deny(pod: PodFacts, problems: readonly string[]): Deny {
  return { kind: 'deny', message: problems.join('; '), warnings: pod.annotations.warnings };
}

/** The pod opted out with `drainguard.io/inject: disabled`, however else it is written. */
export function optedOut(): Skip {
  return skip('opted-out', `annotated ${Annotations.inject}: disabled`);
}

function notEnvoy(pod: PodWithoutEnvoy, config: Config): Skip {
  const { detection } = pod;
  if (detection.kind === 'supervised') {
    const { supervisor } = detection;
    const forced = detection.forced
      ? `; the ${Annotations.envoyContainer} annotation names it, but a drain beside ${supervisor.name}'s own would race it: remove the annotation`
      : '';
    const message = `${detection.evidence}: Envoy runs under ${supervisor.name}, and ${supervisor.why}; drainguard leaves the pod alone${forced}`;
    // Only a pod the annotation tried to force is worth a warning: there, the user asked for a drain.
    return skip('envoy-supervised', message, detection.forced ? [message] : []);
  }
  if (detection.kind !== 'none') return skip('no-containers', 'the pod has no containers');
  const named = detection.namedOnly;
  if (named === undefined) return skip('not-envoy', `no container running Envoy: ${lookedFor(config)}`);
  const message =
    `container ${named} has Envoy's name, but neither its command, its image nor the pod's shape shows that it runs Envoy ` +
    `(${lookedFor(config)}); set the ${Annotations.envoyContainer} annotation to ${named} if it does`;
  return skip('not-envoy', message, [message]);
}

/** An Envoy pod with an invalid drainguard.io annotation is denied, naming every invalid one. */
export function invalidAnnotations(pod: EnvoyPod): Deny | undefined {
  const { problems } = pod.annotations;
  return problems.length > 0 ? deny(pod, problems) : undefined;
}

/** A pod without Envoy of drainguard's: skipped, or denied for an annotation that decides whether drainguard acts. */
export function withoutEnvoy(pod: PodWithoutEnvoy, config: Config): Skip | Deny {
  const { problems } = pod.annotations;
  const { detection } = pod;
  if (detection.kind === 'missing-override') {
    const names = pod.containerNames.map((name) => quoteValue(name)).join(', ');
    return deny(pod, [
      ...problems,
      invalidAnnotationMessage(Annotations.envoyContainer, detection.missingOverride, `the name of one of the pod's containers (${names})`),
    ]);
  }
  // drainguard.io/inject and drainguard.io/envoy-container decide whether drainguard acts at all: an
  // invalid one denies even a pod drainguard would otherwise skip. The other overrides of a pod
  // without Envoy of drainguard's would change nothing: they do not deny it.
  const decidesScope = (key: string) => problems.some((problem) => problem.startsWith(`annotation ${key}:`));
  if (decidesScope(Annotations.inject) || decidesScope(Annotations.envoyContainer)) return deny(pod, problems);
  return notEnvoy(pod, config);
}
