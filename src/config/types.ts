/**
 * The one configuration type shared by `drainguard serve`, `drainguard inject` and the tests.
 * Defaults live in `defaults.ts` (the single documented place); a YAML file may override any subset.
 */

/** Kubernetes resource quantities, e.g. `{ cpu: "100m", memory: "128Mi" }`. */
export interface ResourceRequests {
  cpu: string;
  memory: string;
}

/** What to do with a recognised shutdown-manager sidecar. */
export type SidecarMode = 'remove' | 'disarm';

/**
 * How the drain program reaches Envoy (docs/pod-changes.md, "How the drain program reaches Envoy"):
 * `copy`, an init container copies it into a volume Envoy mounts; `image-volume`, Envoy mounts the
 * drain program's image itself as an image volume (Kubernetes 1.35 or newer, docs/configuration.md).
 */
export type Delivery = 'copy' | 'image-volume';

export interface InstallerConfig {
  delivery: Delivery;
  /** Name of the init container drainguard appends (copy). */
  containerName: string;
  /**
   * The drain program's image, which holds the executable and nothing else: the init container's image
   * (copy) or the image volume's reference (image-volume). The chart sets it to its release's image, by digest.
   */
  image: string;
  /** The init container's imagePullPolicy, and the image volume's pullPolicy. */
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** Absolute path of the `envoy-shutdown` executable inside `image`. */
  programPath: string;
  /** Directory created inside the bootstrap volume that receives the program (copy). */
  installDirectory: string;
  /**
   * drainguard's own volume: the emptyDir the program is copied into when the bootstrap volume cannot
   * take it (copy), or the image volume (image-volume).
   */
  volumeName: string;
  /** Where Envoy mounts drainguard's own volume, read-only (and the installer, for the emptyDir). */
  mountPath: string;
}

/**
 * The liveness and startup probes drainguard gives an Envoy that has no liveness probe. They are for
 * recovering a stuck Envoy quickly; the kubelet stops them before running preStop, so they need not
 * outlast the grace period (docs/design.md, "The liveness probe").
 */
export interface LivenessConfig {
  /** Period of both probes. */
  periodSeconds: number;
  /** Generous: CPU throttling caused the original probe failures. */
  timeoutSeconds: number;
  /** Liveness failures before a restart: periodSeconds × this is how long a stuck Envoy lasts. */
  failureThreshold: number;
  /** Startup failures allowed: periodSeconds × this is how long Envoy may wait for its first configuration. */
  startupFailureThreshold: number;
  /** Probe-level grace period: restarting a stuck Envoy must not wait out the pod's whole grace period. */
  terminationGracePeriodSeconds: number;
}

/**
 * The drain settings the operator set in the configuration (`--config`, the chart's `config.drain.*`),
 * each absent unless set. Absent is not "the default": a setting the operator set outranks the
 * replaced component's default at its release, and drainguard's own default
 * (`DRAIN_SETTING_DEFAULTS` in defaults.ts) does not (docs/configuration.md, "Where a drain setting
 * comes from"). So the value and whether it was set are one field, which no code can set without it
 * counting as set; the plan (src/mutate/plan/timing.ts) is the one reader, and it records where each
 * value came from.
 */
export interface DrainConfig {
  /** preStop deadline = effective grace period - this margin (leaves room for Envoy's own exit). */
  deadlineMarginSeconds?: number;
  /** Wait before failing health checks (load balancer deregistration). */
  drainDelaySeconds?: number;
  /** Never finish the drain earlier than this. */
  minDrainSeconds?: number;
  /** The drain is complete when active downstream connections are at or below this. */
  minConnections?: number;
  /** Poll interval of the drain program, in seconds. */
  pollIntervalSeconds?: number;
}

export interface GracePeriodFloorConfig {
  /** Off by default: raising a user's grace period changes how long node drains take. */
  enabled: boolean;
  minimumSeconds: number;
}

export interface Config {
  /** Container name that marks an Envoy pod. */
  envoyContainerName: string;
  /** Image repositories (registry and tag ignored) that mark an Envoy container. */
  envoyImageRepositories: string[];
  /** Container name of the shutdown-manager sidecar. */
  shutdownManagerContainerName: string;
  sidecarMode: SidecarMode;
  installer: InstallerConfig;
  requests: {
    envoy: ResourceRequests;
    installer: ResourceRequests;
    sidecar: ResourceRequests;
  };
  /** Memory the drain program needs inside Envoy's cgroup during preStop (warn when the limit leaves less). */
  shutdownProgramMemory: string;
  liveness: LivenessConfig;
  drain: DrainConfig;
  gracePeriodFloor: GracePeriodFloorConfig;
}
