/**
 * Envoy workloads for the `drainguard check` suites, made of the fixture pods (test/support/check-pods)
 * and created in the real cluster, where the controllers make their pods and the webhook rewrites those
 * of opted-in namespaces. A pod whose state is all a check reads is held back from the scheduler by a
 * scheduling gate: it is stored as the controller and the webhook made it, and never runs (nothing of it
 * costs a process).
 */
import type { Pod } from '../../src/mutate';
import type { KubeApi, KubeObject } from '../support/cluster/api';
import type { PolicyRule } from '../support/cluster/lane';
import { jsonCopy } from '../support/independent-patch';

/** The scheduling gate that keeps a pod unscheduled: it is admitted and stored, never run. */
export const NEVER_SCHEDULED = 'test.drainguard.io/never-scheduled';

export type WorkloadKind = 'DaemonSet' | 'Deployment' | 'StatefulSet';
const PLURAL: Record<WorkloadKind, string> = { DaemonSet: 'daemonsets', Deployment: 'deployments', StatefulSet: 'statefulsets' };

export interface WorkloadOptions {
  /** Labels of the pods (and the selector); the template's own when absent. */
  labels?: Record<string, string>;
  /** Held back from the scheduler (NEVER_SCHEDULED). */
  gated?: boolean;
  replicas?: number;
}

/**
 * `template` as a pod template of the cluster: no host ports (the suites' DaemonSets share two nodes),
 * the given labels, and the gate when asked.
 */
export function podTemplate(template: Pod, options: Pick<WorkloadOptions, 'labels' | 'gated'> = {}): Pod {
  const pod = jsonCopy(template);
  const { name: _name, namespace: _namespace, generateName: _generateName, ...metadata } = pod.metadata ?? {};
  pod.metadata = { ...metadata, labels: options.labels ?? metadata.labels ?? {} };
  withoutHostPorts(pod.spec);
  if (options.gated) (pod.spec as { schedulingGates?: { name: string }[] }).schedulingGates = [{ name: NEVER_SCHEDULED }];
  return pod;
}

/** The part of a pod spec that asks for ports. */
export interface ContainersWithPorts {
  containers: { ports?: object[] }[];
  initContainers?: { ports?: object[] }[];
}

/**
 * Drops every host port of `spec`'s containers: the suites share the cluster's two nodes, and two
 * DaemonSets asking for the same host port (Contour's asks for 80 and 443) cannot both run on a node,
 * so one suite's pods would stay Pending until another suite's were gone.
 */
export function withoutHostPorts(spec: ContainersWithPorts): void {
  for (const container of [...spec.containers, ...(spec.initContainers ?? [])]) {
    for (const port of (container.ports ?? []) as { hostPort?: number }[]) delete port.hostPort;
  }
}

/** Creates a DaemonSet, Deployment or StatefulSet of `template` in `namespace`. */
export async function createWorkload(api: KubeApi, namespace: string, kind: WorkloadKind, name: string, template: Pod, options: WorkloadOptions = {}): Promise<void> {
  const podSpec = podTemplate(template, options);
  const labels = podSpec.metadata!.labels!;
  const { apiVersion: _apiVersion, kind: _kind, status: _status, ...templateBody } = podSpec as Pod & { status?: unknown };
  const spec: Record<string, unknown> = { selector: { matchLabels: labels }, template: templateBody };
  if (kind !== 'DaemonSet') spec.replicas = options.replicas ?? 1;
  if (kind === 'StatefulSet') spec.serviceName = name;
  await api.create(`/apis/apps/v1/namespaces/${namespace}/${PLURAL[kind]}`, { apiVersion: 'apps/v1', kind, metadata: { name }, spec });
}

/** Creates a pod no controller owns. */
export async function createPod(api: KubeApi, namespace: string, name: string, template: Pod, options: Pick<WorkloadOptions, 'labels' | 'gated'> = {}): Promise<void> {
  const pod = podTemplate(template, options);
  await api.create(`/api/v1/namespaces/${namespace}/pods`, { ...pod, apiVersion: 'v1', kind: 'Pod', metadata: { ...pod.metadata, name } });
}

/**
 * What the fixture templates' pods need in their namespace to be admitted and started: their
 * ServiceAccounts (real admission refuses a pod whose account does not exist), and the Secrets and
 * ConfigMap their volumes name (a pod waits in ContainerCreating until each exists).
 */
export async function prepareNamespace(api: KubeApi, namespace: string): Promise<void> {
  for (const account of ['envoy', 'envoy-default-37a8eec1']) {
    await api.create(`/api/v1/namespaces/${namespace}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: account } });
  }
  // Contour's and Envoy Gateway's certificates (nothing here reads them), Envoy Gateway's SDS files.
  for (const secret of ['envoycert', 'envoy']) {
    await api.create(`/api/v1/namespaces/${namespace}/secrets`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: secret },
      stringData: { 'ca.crt': 'unused', 'tls.crt': 'unused', 'tls.key': 'unused' },
    });
  }
  await api.create(`/api/v1/namespaces/${namespace}/configmaps`, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'envoy-default-37a8eec1' },
    data: { 'xds-trusted-ca.json': '{}', 'xds-certificate.json': '{}' },
  });
}

/** The pods of `namespace`, by name. */
export async function podsOf(api: KubeApi, namespace: string): Promise<Map<string, KubeObject & { spec: Pod['spec']; status?: { phase?: string } }>> {
  const list = await api.list<KubeObject & { spec: Pod['spec']; status?: { phase?: string } }>(`/api/v1/namespaces/${namespace}/pods`);
  return new Map(list.items.map((pod) => [pod.metadata.name, pod]));
}

/**
 * What `drainguard check` reads of an installation (docs/check.md, "Permissions"): cluster-wide, the
 * webhook configuration and the namespaces; in the release's namespace, its Deployments, Service,
 * ConfigMap and EndpointSlices (the Secret is the suites' choice). A suite adds what its user may also do.
 */
export const CHECK_READS: { cluster: PolicyRule[]; release: PolicyRule[] } = {
  cluster: [
    { apiGroups: ['admissionregistration.k8s.io'], resources: ['mutatingwebhookconfigurations'], verbs: ['get'] },
    { apiGroups: [''], resources: ['namespaces'], verbs: ['get'] },
  ],
  release: [
    { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get'] },
    { apiGroups: [''], resources: ['services', 'configmaps'], verbs: ['get'] },
    { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list'] },
  ],
};
