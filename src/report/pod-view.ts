/**
 * What the reporter reads of a pod: its identity, the controller that owns it, whether it is ending,
 * and the Envoy containers' terminations, nothing else. Every pod the watch receives is reduced to its
 * view before anything else sees it, and the watch keeps of each only a `WatchedPod`, a few hundred
 * bytes. Read from the wire JSON of a list item or a watch event (timestamps as RFC 3339 text; a Date,
 * as client-node's typed objects give them, is read too). Pure.
 */
import { isDrainguardHook, type LifecycleHandler } from '../mutate';

/** A container's ended state, as `state.terminated` or `lastState.terminated` gives it. */
export interface EndedContainer {
  /** `containerd://…`; '' when the runtime gave none (the container never started). */
  containerID: string;
  exitCode: number;
  /** The runtime's reason: `Completed`, `Error`, `OOMKilled`, `ContainerStatusUnknown`, … */
  reason: string;
  /** The termination message as the kubelet stored it ('' for none). */
  message: string;
  startedAtMs: number | null;
  finishedAtMs: number | null;
}

export interface EnvoyContainerView {
  name: string;
  /** `File` (the default) or `FallbackToLogsOnError`. */
  terminationMessagePolicy: string;
  restartCount: number;
  /** `state.terminated`: the container has ended and was not restarted (yet). */
  ended?: EndedContainer;
  /** `lastState.terminated`: the container before the last restart. */
  previous?: EndedContainer;
}

/** The controller of the pod, as its controller owner reference names it. */
export interface ControllerRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

export interface PodView {
  /** The watch tells pods apart by namespace and name, and changes by resourceVersion. */
  metadata: { name: string; namespace: string; uid: string; resourceVersion: string };
  controller?: ControllerRef;
  /** The `pod-template-hash` label: a ReplicaSet carrying it belongs to a Deployment. */
  podTemplateHash?: string;
  /** `metadata.deletionTimestamp` is set: the pod is being deleted. */
  deleting: boolean;
  phase: string;
  /** `status.reason` (`Evicted`, `Shutdown`, `Terminated`, …). */
  statusReason: string;
  envoy: EnvoyContainerView[];
}

/**
 * What the watch remembers of a pod between its events (./kube.ts): who it is, and which of its Envoy
 * containers it last saw running, so that when a relist no longer lists it (it ended and was deleted
 * while the watch was down) the reporter can say which terminations it never saw.
 */
export interface WatchedPod {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  /** The workload's metric label (`daemonset/envoy`, `none`). */
  workload: string;
  /** Envoy containers not ended in the last view. */
  running: readonly string[];
}

type Loose = Record<string, unknown>;

const objectAt = (value: unknown): Loose => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Loose) : {});
const listAt = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const textAt = (value: unknown): string => (typeof value === 'string' ? value : '');
const wholeAt = (value: unknown): number => (typeof value === 'number' && Number.isInteger(value) ? value : 0);

/** A timestamp as the wire (RFC 3339 text) or the typed client (Date) gives it; null when absent or invalid. */
function timeAt(value: unknown): number | null {
  const ms = value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : Number.NaN;
  return Number.isFinite(ms) ? ms : null;
}

function ended(value: unknown): EndedContainer | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const state = value as Loose;
  return {
    containerID: textAt(state.containerID),
    exitCode: wholeAt(state.exitCode),
    reason: textAt(state.reason),
    message: textAt(state.message),
    startedAtMs: timeAt(state.startedAt),
    finishedAtMs: timeAt(state.finishedAt),
  };
}

function controllerOf(metadata: Loose): ControllerRef | undefined {
  for (const entry of listAt(metadata.ownerReferences)) {
    const reference = objectAt(entry);
    if (reference.controller !== true) continue;
    const ref = { apiVersion: textAt(reference.apiVersion), kind: textAt(reference.kind), name: textAt(reference.name), uid: textAt(reference.uid) };
    return ref.kind !== '' && ref.name !== '' ? ref : undefined;
  }
  return undefined;
}

/**
 * The view of a pod, or undefined for an object that is not one (no name, namespace or uid). Envoy
 * containers are the ones whose preStop hook is drainguard's drain, decided as the webhook decides it.
 */
export function viewPod(raw: unknown): PodView | undefined {
  const pod = objectAt(raw);
  const metadata = objectAt(pod.metadata);
  const name = textAt(metadata.name);
  const namespace = textAt(metadata.namespace);
  const uid = textAt(metadata.uid);
  if (name === '' || namespace === '' || uid === '') return undefined;
  const spec = objectAt(pod.spec);
  const status = objectAt(pod.status);
  const statuses = new Map(listAt(status.containerStatuses).map((entry) => [textAt(objectAt(entry).name), objectAt(entry)]));
  const envoy: EnvoyContainerView[] = [];
  for (const entry of listAt(spec.containers)) {
    const container = objectAt(entry);
    const preStop = objectAt(objectAt(container.lifecycle).preStop) as LifecycleHandler;
    if (!isDrainguardHook(preStop)) continue;
    const containerName = textAt(container.name);
    const containerStatus = statuses.get(containerName) ?? {};
    // The typed client's property names are the wire's (`state`, `lastState`, `terminated`).
    const current = ended(objectAt(containerStatus.state).terminated);
    const previous = ended(objectAt(containerStatus.lastState).terminated);
    envoy.push({
      name: containerName,
      terminationMessagePolicy: textAt(container.terminationMessagePolicy) || 'File',
      restartCount: wholeAt(containerStatus.restartCount),
      ...(current ? { ended: current } : {}),
      ...(previous ? { previous } : {}),
    });
  }
  const labels = objectAt(metadata.labels);
  const hash = textAt(labels['pod-template-hash']);
  const controller = controllerOf(metadata);
  return {
    metadata: { name, namespace, uid, resourceVersion: textAt(metadata.resourceVersion) },
    ...(controller ? { controller } : {}),
    ...(hash !== '' ? { podTemplateHash: hash } : {}),
    deleting: metadata.deletionTimestamp !== undefined && metadata.deletionTimestamp !== null,
    phase: textAt(status.phase),
    statusReason: textAt(status.reason),
    envoy,
  };
}

/** The pod's top controller as the metrics name it: `<kind>/<name>` in lower case, `none` for a bare pod. */
export interface Workload {
  /** `daemonset/envoy`, `deployment/envoy`, `none`. */
  label: string;
  /** The object the workload Event is about; absent for a bare pod. */
  kind?: string;
  name?: string;
}

/**
 * The workload of a pod from the pod alone: its controller, except that a ReplicaSet named
 * `<deployment>-<pod-template-hash>` whose pod carries that hash is its Deployment's (the Deployment
 * controller names them so). No API call: the label is the same in every replica and after restarts.
 */
export function workloadOf(pod: Pick<PodView, 'controller' | 'podTemplateHash'>): Workload {
  const controller = pod.controller;
  if (!controller) return { label: 'none' };
  const suffix = pod.podTemplateHash !== undefined ? `-${pod.podTemplateHash}` : undefined;
  if (controller.kind === 'ReplicaSet' && suffix !== undefined && controller.name.endsWith(suffix) && controller.name.length > suffix.length) {
    const name = controller.name.slice(0, -suffix.length);
    return { label: `deployment/${name}`, kind: 'Deployment', name };
  }
  return { label: `${controller.kind.toLowerCase()}/${controller.name}`, kind: controller.kind, name: controller.name };
}
