/**
 * Envoy workloads on the API double, for the suites that have not moved to the real API server yet
 * (test/integration/check/recent-drains.test.ts, test/integration/chart/helm-test-hook.test.ts): the
 * reporter's own suites run on the real one (test/kube/report-*.test.ts, monitoring-live.test.ts). The pods are Contour's Envoy DaemonSet pod (the upstream fixture)
 * rewritten by drainguard's own `mutate` and patched with an independent RFC 6902 implementation,
 * labelled as the webhook labels the pods it protects, owned by a DaemonSet (or a Deployment's
 * ReplicaSet) with real uids, and run by the kubelet simulator. Reporters run in this process against
 * the API double, through the real client-node.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import pino from 'pino';
import { defaultConfig } from '../../../src/config';
import { mutate, PROTECTED_LABEL, type Pod } from '../../../src/mutate';
import { startReporter, type RunningReporter } from '../../../src/report/start';
import { fixturePods } from '../../support/generators/pods';
import { applyIndependently, jsonCopy } from '../../support/independent-patch';
import type { KubeApiDouble, KubeObject } from '../../support/kube-api-double';
import { KubeletSimulator, type ContainerExit } from '../../support/kube/kubelet';

export const ENVOY = 'envoy';

/** Contour's Envoy pod template as drainguard rewrites it (drain preStop on `envoy`, the protected label). */
export function protectedTemplate(): Pod {
  const template = jsonCopy(fixturePods().find((entry) => entry.name === 'contour/03-envoy-v1.33.6.yaml')!.pod);
  const result = mutate(template, defaultConfig());
  if (result.status !== 'mutated') throw new Error(`expected mutate to rewrite Contour's pod, got ${result.status}`);
  const rewritten = applyIndependently(template, result.patch);
  if (rewritten.metadata?.labels?.[PROTECTED_LABEL] !== 'true') throw new Error('expected the webhook to label the pod it protects');
  return rewritten;
}

export interface Workload {
  kind: 'DaemonSet' | 'Deployment';
  name: string;
  namespace: string;
  uid: string;
  /** The object each pod's controller reference names (the DaemonSet, or the Deployment's ReplicaSet). */
  owner: { apiVersion: string; kind: string; name: string; uid: string };
  /** For a Deployment: its pods' `pod-template-hash`. */
  hash?: string;
}

/** A DaemonSet (or Deployment with its ReplicaSet) stored in the double, in a namespace it creates. */
export function envoyWorkload(double: KubeApiDouble, options: { namespace: string; name: string; kind?: 'DaemonSet' | 'Deployment' }): Workload {
  const { namespace, name, kind = 'DaemonSet' } = options;
  if (!double.get('namespaces', undefined, namespace)) double.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  const stored = double.put({ apiVersion: 'apps/v1', kind, metadata: { name, namespace }, spec: { selector: { matchLabels: { app: name } } } });
  const uid = stored.metadata.uid!;
  if (kind === 'DaemonSet') return { kind, name, namespace, uid, owner: { apiVersion: 'apps/v1', kind, name, uid } };
  const hash = '5f7c9d8b6';
  const replicaSet = double.put({
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: {
      name: `${name}-${hash}`,
      namespace,
      labels: { 'pod-template-hash': hash },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name, uid, controller: true, blockOwnerDeletion: true }],
    },
  });
  return { kind, name, namespace, uid, hash, owner: { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: replicaSet.metadata.name, uid: replicaSet.metadata.uid! } };
}

/** A new pod of the workload, created as its controller creates it and started by the kubelet. */
export function runPod(kubelet: KubeletSimulator, workload: Workload, template: Pod = protectedTemplate()): KubeObject {
  const suffix = randomUUID().slice(0, 5);
  const name = workload.hash ? `${workload.name}-${workload.hash}-${suffix}` : `${workload.name}-${suffix}`;
  const { generateName: _generateName, ...metadata } = template.metadata ?? {};
  const labels = { ...(metadata.labels ?? {}), ...(workload.hash ? { 'pod-template-hash': workload.hash } : {}) };
  return kubelet.run({
    ...(template as unknown as KubeObject),
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...metadata,
      labels,
      name,
      namespace: workload.namespace,
      ownerReferences: [{ ...workload.owner, controller: true, blockOwnerDeletion: true }],
    },
  });
}

export { finishedRecord, startedRecord } from '../../support/generators/drain-records';

/** Envoy's exit after its preStop hook: SIGTERM from the kubelet, exit 0, the hook's record in the file. */
export function drainedExit(message: string): ContainerExit {
  return { exitCode: 0, reason: 'Completed', message };
}

/** Deletes a pod as a rollout does and lets Envoy end with `exit`. Returns the DELETED object. */
export function rollPod(kubelet: KubeletSimulator, pod: KubeObject, exit: ContainerExit): KubeObject {
  return kubelet.deletePod(pod.metadata.namespace!, pod.metadata.name, { [ENVOY]: exit });
}

export interface Reporters {
  replicas: RunningReporter[];
  /** Every replica has seen every change up to `resourceVersion` and finished reporting it. */
  caughtUp(resourceVersion: string | number): Promise<void>;
  stop(): Promise<void>;
}

/** `count` reporter replicas in this process, each with its own instance name, against the double. */
export async function startReporters(double: KubeApiDouble, count: number, options: { webhookConfigName: string; maxReportAgeMs?: number }): Promise<Reporters> {
  const replicas: RunningReporter[] = [];
  for (let index = 0; index < count; index++) {
    replicas.push(
      await startReporter({
        kubeConfig: await double.kubeConfig(),
        host: '127.0.0.1',
        port: 0,
        logger: pino({ level: process.env.REPORTER_TEST_LOG ?? 'silent' }),
        reporter: { instance: `reporter-${index}`, id: `reporter-${index}/${randomUUID().slice(0, 12)}` },
        webhookConfigName: options.webhookConfigName,
        maxReportAgeMs: options.maxReportAgeMs ?? 45 * 60_000,
        requestTimeoutMs: 10_000,
        // Short retry and restart delays, so a test of failures does not wait seconds for each retry.
        retryDelayMs: 20,
      }),
    );
  }
  // Started means listed: what happens from here on is seen.
  await Promise.all(replicas.map((replica) => replica.watch.reached(1)));
  return {
    replicas,
    caughtUp: async (resourceVersion) => {
      await Promise.all(replicas.map((replica) => replica.caughtUp(Number(resourceVersion))));
    },
    stop: async () => {
      await Promise.all(replicas.splice(0).map((replica) => replica.shutdown()));
    },
  };
}

/** GET /metrics of a reporter, as Prometheus scrapes it. */
export function scrape(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

export interface StoredEvent {
  metadata: { name: string; namespace: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  reason: string;
  message: string;
  type: string;
  involvedObject: { apiVersion: string; kind: string; name: string; namespace: string; uid: string; fieldPath?: string };
  reportingInstance: string;
  firstTimestamp: string;
}

/** The Events the double holds, in one namespace or all. */
export function events(double: KubeApiDouble, namespace?: string) {
  return double.list<StoredEvent>('events', namespace);
}

export { KubeletSimulator };
