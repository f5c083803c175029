/**
 * The pod model: the subset of the Kubernetes core/v1 Pod schema drainguard reads or writes. Every
 * field is optional, as in the API: the core must cope with anything a valid pod may omit. Unknown
 * fields are preserved because the core only ever emits targeted JSON Patch operations.
 *
 * Beside the types: shape.ts checks the JSON shape of what drainguard reads, validate.ts the API
 * server's rules a patch could break (and the names it accepts), quantity.ts resource quantities.
 * Nothing here imports anything else of drainguard, so the configuration (src/config) and the core
 * (src/mutate) both use it without depending on each other.
 */

export type Quantity = string | number;
export type IntOrString = number | string;

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [key: string]: unknown;
}

export interface ResourceRequirements {
  requests?: Record<string, Quantity>;
  limits?: Record<string, Quantity>;
  [key: string]: unknown;
}

export interface HTTPGetAction {
  path?: string;
  port: IntOrString;
  host?: string;
  scheme?: 'HTTP' | 'HTTPS';
  httpHeaders?: { name: string; value: string }[];
}

export interface ExecAction {
  command?: string[];
}

export interface TCPSocketAction {
  port: IntOrString;
  host?: string;
}

export interface GRPCAction {
  port: number;
  service?: string;
}

export interface LifecycleHandler {
  exec?: ExecAction;
  httpGet?: HTTPGetAction;
  tcpSocket?: TCPSocketAction;
  sleep?: { seconds: number };
}

export interface Lifecycle {
  preStop?: LifecycleHandler;
  postStart?: LifecycleHandler;
  [key: string]: unknown;
}

export interface Probe {
  exec?: ExecAction;
  httpGet?: HTTPGetAction;
  tcpSocket?: TCPSocketAction;
  grpc?: GRPCAction;
  initialDelaySeconds?: number;
  periodSeconds?: number;
  timeoutSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
  terminationGracePeriodSeconds?: number;
}

export interface ContainerPort {
  containerPort: number;
  name?: string;
  protocol?: string;
  hostPort?: number;
  hostIP?: string;
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  subPath?: string;
  subPathExpr?: string;
  readOnly?: boolean;
  [key: string]: unknown;
}

export interface SecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  privileged?: boolean;
  capabilities?: { add?: string[]; drop?: string[] };
  seccompProfile?: { type: string; localhostProfile?: string };
  [key: string]: unknown;
}

export interface Container {
  name: string;
  image?: string;
  imagePullPolicy?: string;
  command?: string[];
  args?: string[];
  env?: unknown[];
  ports?: ContainerPort[];
  resources?: ResourceRequirements;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: Lifecycle;
  volumeMounts?: VolumeMount[];
  securityContext?: SecurityContext;
  /** `Always` on an init container makes it a native sidecar. */
  restartPolicy?: string;
  /** Where the kubelet mounts the file whose content becomes the termination message (API default /dev/termination-log). */
  terminationMessagePath?: string;
  [key: string]: unknown;
}

/** An image volume (KEP-4639): an OCI image mounted read-only. */
export interface ImageVolumeSource {
  reference?: string;
  pullPolicy?: string;
}

export interface Volume {
  name: string;
  emptyDir?: { medium?: string; sizeLimit?: Quantity };
  image?: ImageVolumeSource;
  configMap?: unknown;
  secret?: unknown;
  [key: string]: unknown;
}

export interface PodSecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  fsGroup?: number;
  [key: string]: unknown;
}

export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  ephemeralContainers?: Container[];
  volumes?: Volume[];
  securityContext?: PodSecurityContext;
  terminationGracePeriodSeconds?: number;
  [key: string]: unknown;
}

/** A Pod, or the `template` of a workload (same shape minus apiVersion/kind). */
export interface Pod {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec: PodSpec;
  [key: string]: unknown;
}
