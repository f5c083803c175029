/** Every annotation drainguard reads or writes, in one place. */

export const ANNOTATION_PREFIX = 'drainguard.io/';

export const Annotations = {
  /** `enabled` | `disabled`: per-pod opt-out inside an opted-in namespace. */
  inject: 'drainguard.io/inject',
  /** Written by drainguard: `{"version":…,"actions":[…]}`. */
  status: 'drainguard.io/status',
  envoyContainer: 'drainguard.io/envoy-container',
  envoyCpuRequest: 'drainguard.io/envoy-cpu-request',
  envoyMemoryRequest: 'drainguard.io/envoy-memory-request',
  drainDelay: 'drainguard.io/drain-delay',
  minDrain: 'drainguard.io/min-drain',
  minConnections: 'drainguard.io/min-connections',
  adminAddress: 'drainguard.io/admin-address',
  sidecarMode: 'drainguard.io/sidecar-mode',
} as const;

export const KNOWN_ANNOTATIONS: ReadonlySet<string> = new Set(Object.values(Annotations));

/** The cluster autoscaler's list of local volumes it may discard when evicting the pod. */
export const SAFE_TO_EVICT_LOCAL_VOLUMES = 'cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes';
