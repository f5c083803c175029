/**
 * The parts of the Pod API the kubelet stand-in (and a test playing a kubelet) reads and writes
 * (k8s.io/api core/v1), typed only as far as they use them, and the runtime's IDs they report.
 */
import { randomBytes } from 'node:crypto';
import type { KubeObject } from './api';

export interface ProbeSpec {
  httpGet?: { path?: string; port: number | string; scheme?: 'HTTP' | 'HTTPS'; host?: string };
  tcpSocket?: { port: number | string; host?: string };
  exec?: { command: string[] };
  initialDelaySeconds?: number;
  periodSeconds?: number;
  timeoutSeconds?: number;
  failureThreshold?: number;
  successThreshold?: number;
}

export interface HandlerSpec {
  exec?: { command: string[] };
  httpGet?: { path?: string; port: number | string; scheme?: 'HTTP' | 'HTTPS'; host?: string };
  sleep?: { seconds: number };
}

export interface SecurityContextSpec {
  runAsUser?: number;
  runAsGroup?: number;
  readOnlyRootFilesystem?: boolean;
}

export interface EnvVarSpec {
  name: string;
  value?: string;
  valueFrom?: {
    fieldRef?: { fieldPath: string };
    resourceFieldRef?: { resource: string; divisor?: string };
    configMapKeyRef?: { name: string; key: string; optional?: boolean };
    secretKeyRef?: { name: string; key: string; optional?: boolean };
  };
}

export interface ContainerSpec {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: EnvVarSpec[];
  envFrom?: { configMapRef?: { name: string; optional?: boolean }; secretRef?: { name: string; optional?: boolean }; prefix?: string }[];
  ports?: { name?: string; containerPort: number; protocol?: string }[];
  volumeMounts?: { name: string; mountPath: string; subPath?: string; readOnly?: boolean }[];
  lifecycle?: { preStop?: HandlerSpec; postStart?: HandlerSpec };
  readinessProbe?: ProbeSpec;
  livenessProbe?: ProbeSpec;
  securityContext?: SecurityContextSpec;
  terminationMessagePath?: string;
  terminationMessagePolicy?: string;
  /** `Always` on an init container: a native sidecar. */
  restartPolicy?: string;
}

export interface KeyToPath {
  key: string;
  path: string;
  mode?: number;
}

export interface VolumeSpec {
  name: string;
  emptyDir?: Record<string, unknown>;
  configMap?: { name: string; items?: KeyToPath[]; defaultMode?: number; optional?: boolean };
  secret?: { secretName: string; items?: KeyToPath[]; defaultMode?: number; optional?: boolean };
  downwardAPI?: { items: { path: string; fieldRef?: { fieldPath: string } }[]; defaultMode?: number };
  projected?: {
    defaultMode?: number;
    sources: {
      serviceAccountToken?: { path: string; expirationSeconds?: number; audience?: string };
      configMap?: { name: string; items?: KeyToPath[]; optional?: boolean };
      secret?: { name: string; items?: KeyToPath[]; optional?: boolean };
      downwardAPI?: { items: { path: string; fieldRef?: { fieldPath: string } }[] };
    }[];
  };
  image?: { reference: string; pullPolicy?: string };
  hostPath?: { path: string };
}

export interface PodSpec {
  nodeName?: string;
  hostNetwork?: boolean;
  serviceAccountName?: string;
  restartPolicy?: string;
  terminationGracePeriodSeconds?: number;
  securityContext?: SecurityContextSpec;
  initContainers?: ContainerSpec[];
  containers: ContainerSpec[];
  volumes?: VolumeSpec[];
}

export interface TerminatedState {
  exitCode: number;
  signal?: number;
  reason: string;
  message?: string;
  startedAt: string;
  finishedAt: string;
  containerID: string;
}

export interface ContainerStatus {
  name: string;
  state: { running?: { startedAt: string }; terminated?: TerminatedState; waiting?: { reason: string; message?: string } };
  lastState: { terminated?: TerminatedState };
  ready: boolean;
  started: boolean;
  restartCount: number;
  image: string;
  imageID: string;
  containerID?: string;
}

export interface Pod extends KubeObject {
  spec: PodSpec;
  status?: { phase?: string; podIP?: string; [key: string]: unknown };
}

/** metav1.Time: RFC 3339 in whole seconds. */
export function kubeTime(date = new Date()): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** metav1.MicroTime: RFC 3339 with microseconds. */
export function kubeMicroTime(date = new Date()): string {
  return date.toISOString().replace(/Z$/, '000Z');
}

/** A container's ID as containerd reports it: `containerd://` and 64 hex digits, new for each container started. */
export function newContainerId(): string {
  return `containerd://${randomBytes(32).toString('hex')}`;
}

/** The `imageID` a runtime reports for `image`: its repository and a digest. */
export function imageId(image: string): string {
  return `${image.split('@')[0]!.replace(/:[^/:]+$/, '')}@sha256:${randomBytes(32).toString('hex')}`;
}
