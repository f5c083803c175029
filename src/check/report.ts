/**
 * What `drainguard check` found: one `CheckResult` per line of the text output, the commands that fix
 * unprotected workloads, and a summary. `-o json` prints this object as it is, so its field names are
 * an interface for scripts (docs/check.md).
 */

import type { Delivery } from '../config';
import type { OpenListener, OpenUdpProxy } from '../drain-record';
import type { NodeImageVolumes } from './image-volumes';
import type { DrainOutcome } from '../report/drain-event';

/** `info` lines report a fact (the failure policy, an opted-out pod) and never fail the run. */
export type Verdict = 'pass' | 'fail' | 'info';

export type Category = 'installation' | 'coverage' | 'nodes' | 'pods' | 'pre-install' | 'drains';

export type CheckId =
  | 'webhook-configuration'
  | 'webhook-policy'
  | 'ca-bundle'
  | 'ca-bundle-secret'
  | 'service-endpoints'
  | 'deployment'
  | 'configuration'
  | 'namespace'
  | 'pod-list'
  | 'pod'
  // whether nodes can mount image volumes (installer.delivery: image-volume), in check and check --pre
  | 'image-volumes'
  | 'node'
  // check --pre
  | 'kubernetes-version'
  | 'match-conditions'
  | 'cert-manager'
  | 'webhook-name'
  | 'install-namespace'
  | 'permissions'
  // recent drains (drainguard report's Events)
  | 'reporter'
  | 'drain-events'
  | 'drains';

export interface CheckResult {
  category: Category;
  id: CheckId;
  verdict: Verdict;
  /** One line: what was found. */
  message: string;
  /** For a failure: what to do about it. */
  hint?: string;
  /** For `pod` lines: everything found about the pod. */
  pod?: EnvoyPodReport;
  /** For `drains` lines: the workload's recent drains. */
  drains?: WorkloadDrains;
}

/** How one drain ended, as the reporter's Event records it (src/report/drain-event.ts). */
export interface DrainReport {
  pod: string;
  outcome: DrainOutcome;
  finishedAt: string | null;
  durationMs: number | null;
  connectionsAtEnd: number | null;
  openListeners: OpenListener[];
  /** UDP sessions left, and their UDP proxies; absent when the drain did not count them. */
  udpSessionsAtEnd?: number | null;
  openUdpProxies?: OpenUdpProxy[];
}

/** A workload's recent drains (the newest ten within the Events' lifetime), newest first. */
export interface WorkloadDrains {
  namespace: string;
  /** `daemonset/envoy`, `deployment/envoy`, `none` (the metrics' `workload` label). */
  workload: string;
  /** How many of the drains shown ended each way. */
  outcomes: Partial<Record<DrainOutcome, number>>;
  /** The median duration of those that drained. */
  medianDrainedSeconds?: number;
  /** Envoy exits not caused by a drain (crash, OOM kill), not counted among the drains. */
  envoyExits: number;
  /** Every drain shown drained. */
  ok: boolean;
  drains: DrainReport[];
}

/** A controller as kubectl names it: `daemonset/envoy` in `projectcontour`. */
export interface WorkloadRef {
  /** The owner's kind (`DaemonSet`, `Deployment`, …), or `Pod` for a pod no controller owns. */
  kind: string;
  name: string;
  namespace: string;
}

export interface DrainSettingsReport {
  admin: string;
  deadlineSeconds: number;
  drainDelaySeconds: number;
  minDrainSeconds: number;
  minConnections: number;
  pollIntervalSeconds: number;
  requestTimeoutSeconds: number;
  /** Patterns of listeners the drain does not count (probe and metrics ports). */
  excludeListeners: string[];
  inboundOnly: boolean;
}

export interface SidecarReport {
  name: string;
  /** It still has a preStop hook: a restart of the sidecar drains a healthy Envoy. */
  armed: boolean;
  /** From the pod's container statuses; null when the pod has none yet. */
  running: boolean | null;
}

/**
 * How drainguard's status annotation describes the pod: `current` (written by the installed version,
 * in the delivery mode it is configured with), `other-version`, `other-delivery` (the installed version,
 * in the other delivery mode), `none` (never rewritten), or `opted-out` (`drainguard.io/inject: disabled`).
 */
export type Protection = 'current' | 'other-version' | 'other-delivery' | 'none' | 'opted-out';

export interface EnvoyPodReport {
  namespace: string;
  name: string;
  protection: Protection;
  /** The version in the status annotation, when there is one. */
  drainguardVersion?: string;
  envoyContainer: string;
  /** Envoy's preStop runs drainguard's drain program. */
  drainInstalled: boolean;
  /** Why the webhook leaves this Envoy pod whole (a preStop it cannot replace, no place for the program): not protected. */
  leftWhole?: string;
  /** How the drain program reached it, as the status annotation records: `installer` (copy) or `image-volume`. */
  delivery?: Delivery;
  /** Delivered as an image volume, but nothing mounts one where the preStop runs the program (this path): the API server dropped it. */
  imageVolumeMissing?: string;
  /** The node it runs on (`spec.nodeName`), once scheduled. */
  node?: string;
  /** The drain settings the preStop carries, as the drain program reads them. */
  drain?: DrainSettingsReport;
  /** Why the drain program would refuse the preStop's arguments. */
  drainError?: string;
  sidecars: SidecarReport[];
  /** The pod's controller, following ReplicaSet to Deployment; absent when it could not be read. */
  owner?: WorkloadRef;
  /** Being deleted: it drains with whatever it has, and its replacement is what matters. */
  terminating: boolean;
}

export interface Fix {
  workload: WorkloadRef;
  /** Names of the pods this fixes. */
  pods: string[];
  /** `2 pods not rewritten by drainguard`. */
  why: string;
  /** Shell commands, in order. Empty when no command can fix it (see `note`). */
  commands: string[];
  note?: string;
}

export type Scope = { allNamespaces: true } | { allNamespaces: false; namespace: string };

export interface CheckReport {
  context: string;
  server: string;
  scope: Scope;
  installation: {
    release: string;
    namespace: string;
    webhookConfiguration: string;
    /** The version pods are compared with; `versionSource` says where it came from. */
    version: string;
    /** `deployment`: the Deployment's `app.kubernetes.io/version` label; `check`: this program's own version. */
    versionSource: 'deployment' | 'check';
  };
  checks: CheckResult[];
  /** Every node, and whether it can mount image volumes; absent when the nodes could not be listed. */
  nodes?: NodeImageVolumes[];
  fixes: Fix[];
  summary: { passed: number; failed: number; info: number; ok: boolean };
  /** With `--wait`: how many times the installation was checked before this report. */
  wait?: WaitOutcome;
}

export interface WaitOutcome {
  attempts: number;
  elapsedSeconds: number;
  /** The installation checks still failed when --wait ran out. */
  timedOut: boolean;
}

/** A maker of one category's lines: `line(id, verdict, message, hint?)`. */
export function linesOf(category: Category): (id: CheckId, verdict: Verdict, message: string, hint?: string) => CheckResult {
  return (id, verdict, message, hint) => ({ category, id, verdict, message, ...(hint ? { hint } : {}) });
}

export function summarise(checks: readonly CheckResult[]): CheckReport['summary'] {
  const count = (verdict: Verdict) => checks.filter((check) => check.verdict === verdict).length;
  const failed = count('fail');
  return { passed: count('pass'), failed, info: count('info'), ok: failed === 0 };
}
