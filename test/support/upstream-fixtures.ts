/**
 * The corpus of real upstream manifests (test/fixtures/upstream, each file's header names its source)
 * and the pods their workloads create, built the way the API server receives them from a controller:
 * the pod template's metadata and spec, the workload's namespace, and `generateName` from the
 * workload's name. Read independently of the CLI's own workload discovery, so the golden test compares
 * two adapters with a third reading of the same YAML.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

import type { Pod } from '../../src/k8s';
import { REPO_ROOT } from './repo';

export const UPSTREAM_FIXTURES_DIR = join(REPO_ROOT, 'test/fixtures/upstream');

/** Where each workload kind keeps its pod template. */
const TEMPLATE_PATHS: Record<string, readonly string[]> = {
  Pod: [],
  Deployment: ['spec', 'template'],
  DaemonSet: ['spec', 'template'],
  StatefulSet: ['spec', 'template'],
  ReplicaSet: ['spec', 'template'],
  Job: ['spec', 'template'],
  CronJob: ['spec', 'jobTemplate', 'spec', 'template'],
};

interface KubeObject {
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  [key: string]: unknown;
}

export interface UpstreamWorkload {
  /** 1-based number of the YAML document, as `drainguard inject` counts them. */
  document: number;
  kind: string;
  name: string;
  namespace: string;
  /** `DaemonSet projectcontour/envoy`, named as the CLI names it (the namespace only when declared). */
  label: string;
  /** The pod the API server is asked to create for this workload. */
  pod: Pod;
}

export interface UpstreamFixture {
  /** File name without `.yaml`; the golden files are named after it. */
  name: string;
  file: string;
  /** The path as given to the CLI (relative to the repository, which is the CLI's working directory). */
  relativePath: string;
  text: string;
  workloads: UpstreamWorkload[];
}

function templateOf(object: KubeObject, path: readonly string[]): Record<string, unknown> | undefined {
  let node: unknown = object;
  for (const key of path) node = typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[key] : undefined;
  return typeof node === 'object' && node !== null ? (node as Record<string, unknown>) : undefined;
}

/** The pod a controller creates from `object` (a workload or a Pod), or undefined for other kinds. */
export function podFromObject(object: KubeObject): Pod | undefined {
  const path = object.kind === undefined ? undefined : TEMPLATE_PATHS[object.kind];
  if (path === undefined) return undefined;
  const namespace = object.metadata?.namespace ?? 'default';
  if (path.length === 0) return { ...(object as Pod), metadata: { ...(object as Pod).metadata, namespace } };
  const template = templateOf(object, path);
  if (template === undefined) return undefined;
  const metadata = (template.metadata ?? {}) as Pod['metadata'];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { ...metadata, namespace, generateName: `${object.metadata?.name ?? 'pod'}-` },
    spec: template.spec as Pod['spec'],
  };
}

/**
 * The pod as the API server puts it into an AdmissionReview: it has decoded the request into a typed Pod,
 * so every `null` a manifest wrote (`env:` with nothing after it, `podAffinity: null`) came out as an
 * absent field. Defaulting, which the API server also applies before admission, is not imitated.
 */
export function asSentByApiServer<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item: unknown) => asSentByApiServer(item)) as T;
  if (typeof value !== 'object' || value === null) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) if (field !== null) copy[key] = asSentByApiServer(field);
  return copy as T;
}

/** Every workload of a YAML stream, in document order. */
export function workloadsIn(text: string): UpstreamWorkload[] {
  const workloads: UpstreamWorkload[] = [];
  parseAllDocuments(text).forEach((document, index) => {
    if (document.errors.length > 0) throw new Error(`document ${index + 1} does not parse: ${document.errors[0]!.message}`);
    const object = document.toJS() as KubeObject | null;
    if (object === null || typeof object !== 'object') return;
    const pod = podFromObject(object);
    if (pod === undefined) return;
    const name = object.metadata?.name ?? '';
    const declaredNamespace = object.metadata?.namespace;
    workloads.push({
      document: index + 1,
      kind: object.kind as string,
      name,
      namespace: declaredNamespace ?? 'default',
      label: `${object.kind} ${declaredNamespace === undefined ? '' : `${declaredNamespace}/`}${name}`,
      pod,
    });
  });
  return workloads;
}

export function upstreamFixtures(): UpstreamFixture[] {
  return readdirSync(UPSTREAM_FIXTURES_DIR)
    .filter((file) => file.endsWith('.yaml'))
    .sort()
    .map((file) => {
      const text = readFileSync(join(UPSTREAM_FIXTURES_DIR, file), 'utf8');
      return {
        name: file.slice(0, -'.yaml'.length),
        file: join(UPSTREAM_FIXTURES_DIR, file),
        relativePath: `test/fixtures/upstream/${file}`,
        text,
        workloads: workloadsIn(text),
      };
    });
}
