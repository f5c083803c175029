/**
 * Resource requests for Envoy and for every shutdown-manager sidecar that stays. Unthrottled,
 * unevicted shutdown handling needs requests; a user's value is never overwritten, and cpu and
 * memory are filled separately. (The installer gets its requests with the rest of its container.)
 */
import type { Config, ResourceRequests } from '../../config/types';
import type { Quantity, ResourceRequirements } from '../../k8s';
import { compareExact, compareQuantities, parseQuantity, subtractExact } from '../../k8s/quantity';
import type { EnvoyPod } from '../facts';

const RESOURCES: readonly (keyof ResourceRequests)[] = ['cpu', 'memory'];

/** The requests one container gets: added to what it has (`hasRequests`) or, without any, as a whole. */
export interface PlannedRequests {
  list: 'containers' | 'initContainers';
  index: number;
  additions: Record<string, Quantity>;
  hasRequests: boolean;
}

/**
 * The missing cpu/memory requests of container `name`.
 *
 * When a limit exists and the request does not, the request becomes the limit: that is what the
 * API server would default it to, so the pod keeps its QoS class (a lower default request would
 * silently turn a Guaranteed pod Burstable). A limit below drainguard's request gets a warning.
 */
function missingRequests(name: string, resources: ResourceRequirements | undefined, wanted: ResourceRequests, warnings: string[]): Record<string, Quantity> {
  const additions: Record<string, Quantity> = {};
  for (const resource of RESOURCES) {
    if (resources?.requests?.[resource] !== undefined) continue;
    const limit: Quantity | undefined = resources?.limits?.[resource];
    if (limit === undefined) {
      additions[resource] = wanted[resource];
      continue;
    }
    if (parseQuantity(limit) === undefined) continue; // the API server reports an invalid limit itself
    additions[resource] = limit;
    if ((compareQuantities(limit, wanted[resource]) ?? 0) < 0) {
      warnings.push(
        `container ${name}: ${resource} limit ${String(limit)} is below drainguard's request ${wanted[resource]}; ` +
          `the ${resource} request is set to the limit`,
      );
    }
  }
  return additions;
}

/**
 * The drain program runs inside Envoy's cgroup during preStop: warn when Envoy's memory limit
 * leaves less room above its request (its own, or the one drainguard adds) than the program needs.
 */
function memoryHeadroomWarning(name: string, limit: Quantity | undefined, request: Quantity | undefined, programMemory: string): string | undefined {
  if (limit === undefined || request === undefined) return undefined;
  const parsedLimit = parseQuantity(limit);
  const parsedRequest = parseQuantity(request);
  const needed = parseQuantity(programMemory);
  if (parsedLimit === undefined || parsedRequest === undefined || needed === undefined) return undefined;
  if (compareExact(subtractExact(parsedLimit, parsedRequest), needed) >= 0) return undefined;
  return (
    `container ${name}: memory limit ${String(limit)} leaves less than ${programMemory} above the request ${String(request)} ` +
    'for the drain program, which runs in Envoy\'s cgroup during preStop; Envoy may be OOM-killed mid-drain'
  );
}

/** Envoy's requests (the annotations' over the configuration's), and those of the sidecars that stay (`keptSidecars`). */
export function resourceRequests(pod: EnvoyPod, config: Config, keptSidecars: boolean): { requests: PlannedRequests[]; warnings: string[] } {
  const warnings: string[] = [];
  const { envoy } = pod;
  const { overrides } = pod.annotations;
  const wanted = { cpu: overrides.envoyCpuRequest ?? config.requests.envoy.cpu, memory: overrides.envoyMemoryRequest ?? config.requests.envoy.memory };
  const envoyAdditions = missingRequests(envoy.name, envoy.resources, wanted, warnings);
  const memoryRequest = envoy.resources?.requests?.memory ?? envoyAdditions.memory;
  const headroom = memoryHeadroomWarning(envoy.name, envoy.resources?.limits?.memory, memoryRequest, config.shutdownProgramMemory);
  if (headroom !== undefined) warnings.push(headroom);
  const requests: PlannedRequests[] = [{ list: 'containers', index: envoy.index, additions: envoyAdditions, hasRequests: envoy.resources?.requests !== undefined }];
  if (keptSidecars) {
    for (const sidecar of pod.sidecars) {
      const additions = missingRequests(sidecar.name, sidecar.resources, config.requests.sidecar, warnings);
      requests.push({ list: sidecar.list, index: sidecar.index, additions, hasRequests: sidecar.resources?.requests !== undefined });
    }
  }
  return { requests: requests.filter((planned) => Object.keys(planned.additions).length > 0), warnings };
}
