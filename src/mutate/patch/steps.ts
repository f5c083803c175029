/**
 * The steps: every change of a plan that protects an Envoy pod, in the order they are made. Each step
 * writes what the plan decided through the one PatchBuilder, reading the draft only to leave alone what
 * already holds (a re-invocation, a template that carries it), and is recorded as an action when it
 * added an operation. What each change is and why: docs/pod-changes.md and docs/design.md, "What the
 * webhook changes, and why".
 */
import type { Container, Pod, Volume, VolumeMount } from '../../k8s';
import { normalizeMountPath } from '../facts';
import { jsonCovers, jsonEqual } from '../../json';
import { Annotations, PROTECTED_LABEL, PROTECTED_LABEL_VALUE, SAFE_TO_EVICT_LOCAL_VOLUMES } from '../parse';
import { PatchBuilder, type PathSegment } from './builder';
import type { MutationAction, PlannedOwnVolume, Protect, SidecarPlace } from '../plan';
import { VERSION } from '../../version';

function containerPath(place: SidecarPlace): PathSegment[] {
  return ['spec', place.list, place.index];
}

interface Step {
  action: MutationAction;
  write(plan: Protect, builder: PatchBuilder, envoyPath: readonly PathSegment[]): void;
  /** This pass takes the change back (nothing of it holds after it): the status annotation stops recording it. */
  retracts?(plan: Protect): boolean;
}

/** In run order. The status annotation follows them all, recording which of them changed the pod. */
const STEPS: readonly Step[] = [
  {
    // 1. cpu and memory requests for Envoy and for every sidecar that stays: one operation for a
    //    container without requests, one per resource otherwise.
    action: 'resource-requests',
    write: (plan, builder) => {
      for (const { list, index, additions, hasRequests } of plan.requests) {
        const requestsPath = ['spec', list, index, 'resources', 'requests'];
        if (!hasRequests) builder.set(requestsPath, additions);
        else for (const [resource, value] of Object.entries(additions)) builder.set([...requestsPath, resource], value);
      }
    },
  },
  // 2. a liveness probe on Envoy that recovers it when stuck, when it has none;
  {
    action: 'liveness-probe',
    write: (plan, builder, envoyPath) => {
      if (plan.livenessProbe !== undefined) builder.set([...envoyPath, 'livenessProbe'], plan.livenessProbe);
    },
  },
  //    and a startup probe on the same target, when Envoy had neither probe of its own.
  {
    action: 'startup-probe',
    write: (plan, builder, envoyPath) => {
      if (plan.startupProbe !== undefined) builder.set([...envoyPath, 'startupProbe'], plan.startupProbe);
    },
  },
  {
    // 3. copy: the init container that installs the drain program (and drainguard's emptyDir, when
    //    the bootstrap volume cannot take it);
    action: 'installer',
    write: (plan, builder, envoyPath) => {
      const { delivery, container, own, removeOwnVolume } = plan.installer;
      if (delivery !== 'copy' || container === undefined) return;
      if (removeOwnVolume !== undefined) removeVolume(builder, removeOwnVolume);
      if (own !== undefined) writeOwnVolume(builder, own, envoyPath);
      // Keyed by name: the installer drainguard wrote stays, as the API server stored it (with the fields
      // it defaults, and the ServiceAccount token's mount when the pod came with the installer); an
      // outdated one (another drainguard version's image, a moved bootstrap volume) is replaced in place
      // so it always matches Envoy's hook.
      const initContainers = builder.draft.spec.initContainers ?? [];
      const existing = initContainers.findIndex((c) => c.name === container.name);
      if (existing === -1) builder.append(['spec', 'initContainers'], container);
      else if (!jsonCovers(initContainers[existing], container)) builder.set(['spec', 'initContainers', existing], container);
    },
  },
  {
    //    image-volume: the drain program's image, mounted read-only into Envoy (an installer left from
    //    copy mode goes).
    action: 'image-volume',
    write: (plan, builder, envoyPath) => {
      const { delivery, own, containerName } = plan.installer;
      if (delivery !== 'image-volume' || own === undefined) return;
      removeInitContainer(builder, containerName);
      writeOwnVolume(builder, own, envoyPath);
    },
  },
  {
    // 4. Envoy's preStop runs the drain program;
    action: 'prestop',
    write: (plan, builder, envoyPath) => {
      const path = [...envoyPath, 'lifecycle', 'preStop'];
      if (!jsonEqual(builder.read(path), plan.preStop)) builder.set(path, plan.preStop);
    },
  },
  {
    //    and the pod is labelled protected (the reporter's selector), which it is exactly when it has the drain.
    action: 'protected-label',
    write: (_plan, builder) => {
      if (builder.draft.metadata?.labels?.[PROTECTED_LABEL] !== PROTECTED_LABEL_VALUE) builder.set(['metadata', 'labels', PROTECTED_LABEL], PROTECTED_LABEL_VALUE);
    },
  },
  {
    // 5. in disarm mode, the sidecar loses its preStop and liveness probe; a lifecycle that held only
    //    the preStop goes whole (an empty `lifecycle: {}` says nothing).
    action: 'sidecar-disarmed',
    write: (plan, builder) => {
      for (const sidecar of plan.disarm) {
        const path = containerPath(sidecar);
        builder.remove(sidecar.wholeLifecycle ? [...path, 'lifecycle'] : [...path, 'lifecycle', 'preStop']);
        builder.remove([...path, 'livenessProbe']);
      }
    },
  },
  {
    // 6. the autoscaler may evict the pod's emptyDirs.
    action: 'safe-to-evict',
    write: (plan, builder) => {
      const change = plan.safeToEvict;
      if (change === undefined) return;
      const path = ['metadata', 'annotations', SAFE_TO_EVICT_LOCAL_VOLUMES];
      if ('remove' in change) builder.remove(path);
      else builder.set(path, change.set);
    },
    // The list held only drainguard's emptyDir, which became the image volume: as if never written.
    // (A list that still holds other names stays recorded, although the user may have written all of
    // them before drainguard did: the status cannot tell, and the annotation is the same either way.)
    retracts: (plan) => plan.safeToEvict !== undefined && 'remove' in plan.safeToEvict,
  },
  {
    // 7. the opt-in grace period floor.
    action: 'grace-period',
    write: (plan, builder) => {
      if (plan.gracePeriodSeconds !== undefined) builder.set(['spec', 'terminationGracePeriodSeconds'], plan.gracePeriodSeconds);
    },
  },
  // 8. in remove mode, the sidecar goes. Last: removals shift indices, and nothing after them may
  //    address a container by index. A native sidecar that was the last init container takes the list
  //    with it (image-volume mode adds no installer), as the API server stores no empty list.
  {
    action: 'sidecar-removed',
    write: (plan, builder) => {
      for (const sidecar of plan.removals) {
        const list = builder.read(['spec', sidecar.list]) as unknown[];
        builder.remove(list.length === 1 ? ['spec', sidecar.list] : containerPath(sidecar));
      }
    },
  },
];

/**
 * drainguard's own volume as planned, and Envoy's read-only mount of it: added, or put in place of
 * what the other delivery mode left there. An emptyDir already there stays as it is.
 */
function writeOwnVolume(builder: PatchBuilder, own: PlannedOwnVolume, envoyPath: readonly PathSegment[]): void {
  const volumes = builder.draft.spec.volumes ?? [];
  const index = volumes.findIndex((v) => v.name === own.volume.name);
  if (index === -1) builder.append(['spec', 'volumes'], own.volume);
  else {
    const current = volumes[index] as Volume;
    const holds = own.volume.emptyDir !== undefined ? current.emptyDir !== undefined : jsonEqual(current, own.volume);
    if (!holds) builder.set(['spec', 'volumes', index], own.volume);
  }
  const { envoyMount } = own;
  const mounts = (builder.read([...envoyPath, 'volumeMounts']) as Container['volumeMounts']) ?? [];
  if (!mounts.some((m) => m.name === envoyMount.name && normalizeMountPath(m.mountPath) === envoyMount.mountPath)) {
    builder.append([...envoyPath, 'volumeMounts'], envoyMount);
  }
}

/** Removes the element of the list at `path` that `matches`; the list goes with its last element, as the API server stores no empty list. */
function removeFromList<T>(builder: PatchBuilder, path: readonly PathSegment[], matches: (item: T) => boolean): void {
  const list = (builder.read(path) as T[] | undefined) ?? [];
  for (let index = list.length - 1; index >= 0; index -= 1) {
    if (!matches(list[index] as T)) continue;
    const remaining = (builder.read(path) as T[]).length;
    builder.remove(remaining === 1 ? path : [...path, index]);
  }
}

/** The installer copy mode left, in a pod now rewritten in image-volume mode. */
function removeInitContainer(builder: PatchBuilder, name: string): void {
  removeFromList<Container>(builder, ['spec', 'initContainers'], (c) => c.name === name);
}

/** The image volume image-volume mode left, with every mount of it, in a pod now rewritten in copy mode into the bootstrap volume. */
function removeVolume(builder: PatchBuilder, name: string): void {
  for (const list of ['containers', 'initContainers'] as const) {
    (builder.draft.spec[list] ?? []).forEach((_container, index) => {
      removeFromList<VolumeMount>(builder, ['spec', list, index, 'volumeMounts'], (m) => m.name === name);
    });
  }
  removeFromList<Volume>(builder, ['spec', 'volumes'], (v) => v.name === name);
}

/** Compact JSON, keys in a fixed order: byte-identical output for identical actions. */
export function statusValue(actions: readonly MutationAction[]): string {
  return JSON.stringify({ version: VERSION, actions: [...actions] });
}

/** Runs every step of `plan` on `pod`; the builder holds the patch and the resulting pod. */
export function applySteps(pod: Pod, plan: Protect): { builder: PatchBuilder; actions: MutationAction[] } {
  const builder = new PatchBuilder(pod);
  const envoyPath: PathSegment[] = ['spec', 'containers', plan.envoyIndex];
  const actions: MutationAction[] = [];
  for (const step of STEPS) {
    const before = builder.size;
    step.write(plan, builder, envoyPath);
    if (builder.size > before) actions.push(step.action);
  }
  // 9. the status annotation: what this pass and the earlier ones did, in step order. Unchanged when a
  //    re-invocation found everything in place, so such a pass adds no operation at all.
  //    In step order, less what this pass takes back. Looked up in the two short lists rather than
  //    merged into a Set: there are a dozen steps, and a pass records a dozen actions at most.
  const recorded: MutationAction[] = [];
  for (const step of STEPS) {
    const { action } = step;
    if ((actions.includes(action) || plan.previousActions.includes(action)) && step.retracts?.(plan) !== true) recorded.push(action);
  }
  const value = statusValue(recorded);
  if (builder.draft.metadata?.annotations?.[Annotations.status] === value) return { builder, actions };
  builder.set(['metadata', 'annotations', Annotations.status], value);
  return { builder, actions: [...actions, 'status'] };
}
