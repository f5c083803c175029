/**
 * One pod, judged with the webhook's own code: `mutate(pod, config)` decides whether it is an Envoy
 * pod (skipped as `not-envoy` means it is not), drainguard's status annotation says who rewrote it,
 * and the drain program's own argument parser reads the drain settings out of Envoy's preStop. No rule
 * here is a second copy of one the webhook or the drain program applies. Pure: no I/O, no clock.
 */
import type { Config, Delivery } from '../config';
import {
  Annotations,
  findEnvoy,
  findShutdownManagers,
  isDrainguardHook,
  mutate,
  readStatus,
  type Container,
  type MutationResult,
  type Pod,
} from '../mutate';
import { parseDrainArguments } from '../drain-contract';
import type { NodeImageVolumes } from './image-volumes';
import type { DrainSettingsReport, EnvoyPodReport, Protection, SidecarReport } from './report';

export type PodAssessment =
  | { kind: 'not-envoy' }
  | { kind: 'envoy'; report: EnvoyPodReport }
  /** The webhook would refuse this pod (an invalid drainguard.io annotation), or cannot read it. */
  | { kind: 'refused'; namespace: string; name: string; message: string };

interface PodStatusView {
  metadata?: { deletionTimestamp?: unknown };
  status?: { containerStatuses?: ContainerStatusView[]; initContainerStatuses?: ContainerStatusView[] };
}
interface ContainerStatusView {
  name?: string;
  state?: { running?: unknown };
}

function evaluate(pod: Pod, config: Config): MutationResult | { status: 'crashed'; message: string } {
  try {
    return mutate(pod, config);
  } catch (error) {
    // A pod from the API server that the core cannot evaluate is a drainguard bug; report it on its
    // line rather than abandoning every other pod.
    return { status: 'crashed', message: `drainguard failed to evaluate this pod (a bug, please report it): ${(error as Error).message}` };
  }
}

/** The pod without `drainguard.io/inject`: lets the core say whether an opted-out pod is an Envoy pod. */
function withoutOptOut(pod: Pod): Pod {
  const annotations = { ...(pod.metadata?.annotations ?? {}) };
  delete annotations[Annotations.inject];
  return { ...pod, metadata: { ...pod.metadata, annotations } };
}

export function assessPod(pod: Pod, config: Config, installedVersion: string): PodAssessment {
  const namespace = pod.metadata?.namespace ?? '';
  const name = pod.metadata?.name ?? '';
  let result = evaluate(pod, config);
  let optedOut = false;
  if (result.status === 'skipped' && result.reason === 'opted-out') {
    optedOut = true;
    result = evaluate(withoutOptOut(pod), config);
  }
  // An opted-out pod is left alone by the webhook whatever else it carries: only an Envoy pod is worth a line.
  if (optedOut && result.status !== 'mutated' && result.status !== 'unchanged') return { kind: 'not-envoy' };
  // An Envoy pod whose drain the webhook cannot install is left whole by it: not protected, and a
  // restart would not change that (docs/design.md, "Which pods").
  let leftWhole: string | undefined;
  switch (result.status) {
    case 'skipped':
      if (result.reason !== 'drain-not-installed') return { kind: 'not-envoy' };
      leftWhole = result.message;
      break;
    case 'denied':
      return { kind: 'refused', namespace, name, message: `the webhook denies this pod: ${result.message}` };
    case 'invalid':
      return { kind: 'refused', namespace, name, message: `drainguard cannot read this pod: ${result.problems.join('; ')}` };
    case 'crashed':
      return { kind: 'refused', namespace, name, message: result.message };
    case 'mutated':
    case 'unchanged':
      break;
  }

  const detection = findEnvoy(pod, config, pod.metadata?.annotations?.[Annotations.envoyContainer]);
  // mutate found Envoy with this same function, so this cannot fail; the guard keeps the types honest.
  if (!detection.found) return { kind: 'refused', namespace, name, message: 'drainguard found no Envoy container on a second look (a bug, please report it)' };
  const envoy = pod.spec.containers[detection.index] as Container;
  const status = readStatus(pod);
  const delivery = deliveryOf(status?.actions);
  const protection: Protection = optedOut
    ? 'opted-out'
    : !status
      ? 'none'
      : status.version !== installedVersion
        ? 'other-version'
        : delivery !== undefined && delivery !== config.installer.delivery
          ? 'other-delivery'
          : 'current';
  const hook = envoy.lifecycle?.preStop;
  const drainInstalled = isDrainguardHook(hook);
  const drain = drainInstalled ? readDrainSettings(hook?.exec?.command ?? []) : undefined;
  const program = hook?.exec?.command?.[0];
  const imageVolumeMissing = delivery === 'image-volume' && drainInstalled && program !== undefined && !mountedFromImage(pod, envoy, program) ? program : undefined;
  const node = typeof pod.spec.nodeName === 'string' && pod.spec.nodeName !== '' ? pod.spec.nodeName : undefined;

  return {
    kind: 'envoy',
    report: {
      namespace,
      name,
      protection,
      ...(status ? { drainguardVersion: status.version } : {}),
      envoyContainer: envoy.name,
      drainInstalled,
      ...(delivery !== undefined ? { delivery } : {}),
      ...(imageVolumeMissing !== undefined ? { imageVolumeMissing } : {}),
      ...(node !== undefined ? { node } : {}),
      ...(leftWhole !== undefined ? { leftWhole } : {}),
      ...(drain && 'settings' in drain ? { drain: drain.settings } : {}),
      ...(drain && 'error' in drain ? { drainError: drain.error } : {}),
      sidecars: findShutdownManagers(pod, config, detection.index).map((sidecar) => ({
        name: sidecar.container.name,
        armed: sidecar.container.lifecycle?.preStop !== undefined,
        running: isRunning(pod, sidecar.list, sidecar.container.name),
      })),
      terminating: (pod as PodStatusView).metadata?.deletionTimestamp !== undefined,
    },
  };
}

/** The delivery mode the status annotation's actions record (src/mutate/plan/changes.ts, DELIVERY_ACTIONS). */
function deliveryOf(actions: readonly string[] | undefined): Delivery | undefined {
  if (actions?.includes('image-volume')) return 'image-volume';
  return actions?.includes('installer') ? 'copy' : undefined;
}

/** Whether Envoy mounts an image volume at a directory holding `program`. */
function mountedFromImage(pod: Pod, envoy: Container, program: string): boolean {
  const imageVolumes = new Set((pod.spec.volumes ?? []).filter((volume) => volume.image !== undefined).map((volume) => volume.name));
  return (envoy.volumeMounts ?? []).some((mount) => {
    const directory = mount.mountPath.endsWith('/') ? mount.mountPath : `${mount.mountPath}/`;
    return imageVolumes.has(mount.name) && program.startsWith(directory);
  });
}

/** `[program, 'drain', ...arguments]` read by `envoy-shutdown drain`'s own parser. */
function readDrainSettings(command: readonly string[]): { settings: DrainSettingsReport } | { error: string } {
  try {
    const settings = parseDrainArguments(command.slice(2));
    const seconds = (ms: number) => ms / 1000;
    return {
      settings: {
        admin: settings.admin.text,
        deadlineSeconds: seconds(settings.deadlineMs),
        drainDelaySeconds: seconds(settings.drainDelayMs),
        minDrainSeconds: seconds(settings.minDrainMs),
        minConnections: settings.minConnections,
        pollIntervalSeconds: seconds(settings.pollIntervalMs),
        requestTimeoutSeconds: seconds(settings.requestTimeoutMs),
        excludeListeners: settings.excludeListeners,
        inboundOnly: settings.inboundOnly,
      },
    };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

function isRunning(pod: Pod, list: 'containers' | 'initContainers', name: string): boolean | null {
  const status = (pod as PodStatusView).status;
  const statuses = list === 'containers' ? status?.containerStatuses : status?.initContainerStatuses;
  if (!statuses) return null;
  return statuses.some((entry) => entry.name === name && entry.state?.running !== undefined);
}

export interface PodVerdict {
  verdict: 'pass' | 'fail' | 'info';
  message: string;
  hint?: string;
}

export function describeDrain(drain: DrainSettingsReport): string {
  const parts = [
    `admin ${drain.admin}`,
    `deadline ${drain.deadlineSeconds}s`,
    `drain delay ${drain.drainDelaySeconds}s`,
    `min drain ${drain.minDrainSeconds}s`,
    `min connections ${drain.minConnections}`,
  ];
  if (drain.inboundOnly) parts.push('inbound only');
  return parts.join(', ');
}

function describeSidecars(sidecars: readonly SidecarReport[]): string | undefined {
  if (sidecars.length === 0) return undefined;
  return sidecars
    .map((sidecar) => {
      const state = sidecar.running === false ? 'present but not running' : 'still runs';
      return sidecar.armed ? `sidecar ${sidecar.name} ${state} with its preStop (a sidecar restart drains Envoy)` : `sidecar ${sidecar.name} ${state}, disarmed`;
    })
    .join('; ');
}

/** What a pod is judged against: the installed version, its delivery mode, and the nodes (when they could be listed). */
export interface JudgeContext {
  installedVersion: string;
  delivery: Delivery;
  nodes?: ReadonlyMap<string, NodeImageVolumes>;
}

const DELIVERY_WORDS: Record<Delivery, string> = { copy: 'copied by the installer', 'image-volume': 'an image volume' };

/** The line for one Envoy pod. */
export function judgePod(pod: EnvoyPodReport, context: JudgeContext): PodVerdict {
  const { installedVersion } = context;
  const sidecars = describeSidecars(pod.sidecars);
  const armed = pod.sidecars.some((sidecar) => sidecar.armed);
  const drain = pod.drain ? `drain: ${describeDrain(pod.drain)}` : undefined;
  const join = (...parts: (string | undefined)[]) => parts.filter((part) => part !== undefined).join('; ');

  if (pod.protection === 'opted-out') {
    return { verdict: 'info', message: join(`opted out (${Annotations.inject}: disabled)`, sidecars) };
  }
  if (pod.leftWhole !== undefined) {
    const message = join(`not protected: ${pod.leftWhole}`, sidecars);
    if (pod.terminating) return { verdict: 'info', message: `terminating; ${message}` };
    return { verdict: 'fail', message, hint: 'change what keeps the drain out in the pod template, then restart the workload' };
  }
  let message: string;
  let hint: string | undefined;
  switch (pod.protection) {
    // Recreating fixes these two; the fixes section gives the command once per workload.
    case 'none':
      message = join('not rewritten by drainguard', sidecars);
      break;
    case 'other-version':
      message = join(`rewritten by drainguard ${pod.drainguardVersion}, not by the installed ${installedVersion}`, drain, sidecars);
      break;
    case 'other-delivery':
      message = join(
        `rewritten by drainguard ${pod.drainguardVersion} with the drain program ${DELIVERY_WORDS[pod.delivery ?? 'copy']}, not ${DELIVERY_WORDS[context.delivery]} as installer.delivery now says`,
        drain,
        sidecars,
      );
      break;
    case 'current':
      message = join(`protected by drainguard ${pod.drainguardVersion}${pod.delivery === 'image-volume' ? ' (the drain program from an image volume)' : ''}`, drain, sidecars);
      break;
  }
  // Delivered as an image volume: it must be there, and the node must be able to mount it.
  const node = pod.delivery === 'image-volume' && pod.node !== undefined ? context.nodes?.get(pod.node) : undefined;
  let broken = false;
  if (pod.imageVolumeMissing !== undefined) {
    broken = true;
    message = join(
      message,
      `its image volume is missing: the preStop runs ${pod.imageVolumeMissing}, which nothing mounts (an API server with the ImageVolume feature gate off drops image volumes after admission)`,
    );
    hint ??= 'turn the ImageVolume feature gate on in the API server (on by default from 1.35), or set installer.delivery: copy; then restart the workload';
  } else if (node?.capability === 'no') {
    broken = true;
    message = join(message, `its node ${node.name} cannot mount image volumes (${node.reason})`);
    hint ??= 'keep Envoy off such nodes (nodeSelector or affinity) or upgrade them, or set installer.delivery: copy and restart the workload';
  } else if (node?.capability === 'unknown') {
    message = join(message, `its node ${node.name} may not mount image volumes (${node.reason})`);
  }
  if (pod.drainError !== undefined) {
    message = join(message, `its preStop arguments are refused by the drain program: ${pod.drainError}`);
    hint ??= 'the drain would fail at shutdown; recreate the pod so the webhook writes the hook again';
  } else if (!pod.drainInstalled && pod.protection !== 'none') {
    message = join(message, `Envoy kept a preStop drainguard does not recognise, so no drain is installed`);
    hint ??= `remove or replace Envoy's own preStop in the pod template, then restart the workload`;
  }
  if (armed && pod.protection !== 'none') hint ??= 'a later webhook or controller gave the shutdown-manager back its preStop: remove it';

  if (pod.terminating) return { verdict: 'info', message: `terminating; ${message}` };
  const healthy = pod.protection === 'current' && pod.drainInstalled && pod.drainError === undefined && !armed && !broken;
  return healthy ? { verdict: 'pass', message } : { verdict: 'fail', message, ...(hint ? { hint } : {}) };
}
