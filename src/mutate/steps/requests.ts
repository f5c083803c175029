/**
 * Resource requests for Envoy and for every shutdown-manager sidecar that stays. Unthrottled,
 * unevicted shutdown handling needs requests; a user's value is never overwritten, and cpu and
 * memory are filled separately. (The installer gets its requests with the rest of its container.)
 */
import type { ResourceRequests } from '../../config/types';
import type { Container, Quantity } from '../../k8s';
import { compareExact, compareQuantities, parseQuantity, subtractExact } from '../../k8s/quantity';
import type { PatchBuilder, PathSegment } from '../patch/builder';
import { currentEnvoy, sidecarPath, type StepContext } from './context';

const RESOURCES: readonly (keyof ResourceRequests)[] = ['cpu', 'memory'];

/**
 * Fills the missing cpu/memory requests of `container` at `containerPath`.
 *
 * When a limit exists and the request does not, the request becomes the limit: that is what the
 * API server would default it to, so the pod keeps its QoS class (a lower default request would
 * silently turn a Guaranteed pod Burstable). A limit below drainguard's request gets a warning.
 */
export function fillRequests(
  builder: PatchBuilder,
  containerPath: readonly PathSegment[],
  container: Container,
  wanted: ResourceRequests,
  warn: (message: string) => void,
): void {
  const additions: Record<string, Quantity> = {};
  for (const resource of RESOURCES) {
    if (container.resources?.requests?.[resource] !== undefined) continue;
    const limit: Quantity | undefined = container.resources?.limits?.[resource];
    if (limit === undefined) {
      additions[resource] = wanted[resource];
      continue;
    }
    if (parseQuantity(limit) === undefined) continue; // the API server reports an invalid limit itself
    additions[resource] = limit;
    if ((compareQuantities(limit, wanted[resource]) ?? 0) < 0) {
      warn(
        `container ${container.name}: ${resource} limit ${String(limit)} is below drainguard's request ${wanted[resource]}; ` +
          `the ${resource} request is set to the limit`,
      );
    }
  }
  const requestsPath = [...containerPath, 'resources', 'requests'];
  // One operation when the container has no requests at all, one per resource otherwise.
  if (container.resources?.requests === undefined) {
    if (Object.keys(additions).length > 0) builder.set(requestsPath, additions);
    return;
  }
  for (const [resource, value] of Object.entries(additions)) builder.set([...requestsPath, resource], value);
}

/**
 * The drain program runs inside Envoy's cgroup during preStop: warn when Envoy's memory limit
 * leaves less room above its request than the program needs.
 */
export function memoryHeadroomWarning(envoy: Container, programMemory: string): string | undefined {
  const limit = envoy.resources?.limits?.memory;
  const request = envoy.resources?.requests?.memory;
  if (limit === undefined || request === undefined) return undefined;
  const parsedLimit = parseQuantity(limit);
  const parsedRequest = parseQuantity(request);
  const needed = parseQuantity(programMemory);
  if (parsedLimit === undefined || parsedRequest === undefined || needed === undefined) return undefined;
  if (compareExact(subtractExact(parsedLimit, parsedRequest), needed) >= 0) return undefined;
  return (
    `container ${envoy.name}: memory limit ${String(limit)} leaves less than ${programMemory} above the request ${String(request)} ` +
    'for the drain program, which runs in Envoy\'s cgroup during preStop; Envoy may be OOM-killed mid-drain'
  );
}

export function applyRequests(context: StepContext): void {
  const { builder, config, overrides } = context;
  const envoyRequests = {
    cpu: overrides.envoyCpuRequest ?? config.requests.envoy.cpu,
    memory: overrides.envoyMemoryRequest ?? config.requests.envoy.memory,
  };
  fillRequests(builder, context.envoyPath, currentEnvoy(context), envoyRequests, context.warn);
  const headroom = memoryHeadroomWarning(currentEnvoy(context), config.shutdownProgramMemory);
  if (headroom !== undefined) context.warn(headroom);

  // A sidecar stays when it is disarmed, or when the drain was not installed.
  if (context.drain !== undefined && context.sidecarMode === 'remove') return;
  for (const sidecar of context.sidecars) {
    const path = sidecarPath(sidecar);
    fillRequests(builder, path, builder.read(path) as Container, config.requests.sidecar, context.warn);
  }
}
