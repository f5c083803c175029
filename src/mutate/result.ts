/**
 * What `mutate(pod, config)` answers. The webhook, the CLI and the tests only ever switch on `status`.
 */

/** One RFC 6902 operation, as drainguard emits them (it never emits move/copy/test). */
export type PatchOperation =
  | { op: 'add'; path: string; value: unknown }
  | { op: 'replace'; path: string; value: unknown }
  | { op: 'remove'; path: string };

/** Why a pod was let through untouched (metrics label, log field). */
export type SkipReason = 'not-envoy' | 'opted-out' | 'no-containers';

/** What a mutation did (metrics label `action`). */
export type MutationAction =
  | 'resource-requests'
  | 'liveness-probe'
  | 'installer'
  | 'prestop'
  | 'sidecar-removed'
  | 'sidecar-disarmed'
  | 'safe-to-evict'
  | 'grace-period'
  | 'status';

export type MutationResult =
  | {
      status: 'mutated';
      patch: PatchOperation[];
      warnings: string[];
      actions: MutationAction[];
      timeline: ShutdownTimeline;
    }
  /** The pod already carries the current status annotation: zero operations. */
  | { status: 'unchanged'; patch: []; warnings: string[]; timeline: ShutdownTimeline }
  | { status: 'skipped'; reason: SkipReason; patch: []; warnings: string[] }
  /** An invalid override annotation: the pod must be denied with this message. */
  | { status: 'denied'; message: string; patch: []; warnings: string[] }
  /**
   * Not a well-formed Pod: a field drainguard reads has the wrong JSON type (`problems` names each
   * one). The API server never sends such a pod; `drainguard inject` may read one from a file.
   */
  | { status: 'invalid'; problems: string[]; patch: []; warnings: string[] };

/** The shutdown plan drainguard computed for an Envoy pod (`inject --explain`, logs). */
export interface ShutdownTimeline {
  /** Effective terminationGracePeriodSeconds (30 when unset). */
  gracePeriodSeconds: number;
  gracePeriodSource: 'pod' | 'kubernetes-default' | 'floor';
  drainDelaySeconds: number;
  minDrainSeconds: number;
  /** `--deadline` given to the drain program: grace period minus the configured margin. */
  deadlineSeconds: number;
  minConnections: number;
  adminAddress: string;
  /** initialDelaySeconds + periodSeconds × failureThreshold of Envoy's liveness probe, if any. */
  livenessBudgetSeconds: number | null;
  livenessSource: 'drainguard' | 'user' | 'none';
  // The three fields below are for `--explain` and logs. `mutate` always fills them; they are
  // optional only so that code building a timeline by hand keeps compiling.
  /** Where `adminAddress` came from (docs/design.md, "The admin address"). */
  adminAddressSource?: AdminAddressSource;
  /** Listener ports the drain ignores (probe and metrics traffic). */
  excludedListenerPorts?: number[];
  /** False when Envoy keeps an unrecognised user preStop (or no install location exists): no drain hook. */
  drainInstalled?: boolean;
}

/** Where the drain program's admin address came from, highest precedence first. */
export type AdminAddressSource =
  | 'annotation'
  | 'envoy-args'
  | 'drainguard-hook'
  | 'sidecar-flag'
  | 'contour-default'
  | 'envoy-gateway-default'
  | 'admin-volume'
  | 'default';
