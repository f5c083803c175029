import { isAlias, isMap, isScalar, isSeq, type Document, type YAMLMap } from 'yaml';

/**
 * Finds the pods and pod templates in a YAML document: a Pod itself, the `spec.template` of the
 * workload controllers, a CronJob's `spec.jobTemplate.spec.template`, and the same inside a `List`.
 */

interface WorkloadKind {
  /** API groups the kind belongs to ('' is the core group); a same-named kind of another group (a CRD) is not ours. */
  groups: readonly string[];
  /** Keys from the object to its pod template; empty for a Pod, which is its own template. */
  templatePath: readonly string[];
}

const WORKLOAD_KINDS: Readonly<Record<string, WorkloadKind>> = {
  Pod: { groups: [''], templatePath: [] },
  Deployment: { groups: ['apps', 'extensions'], templatePath: ['spec', 'template'] },
  DaemonSet: { groups: ['apps', 'extensions'], templatePath: ['spec', 'template'] },
  StatefulSet: { groups: ['apps'], templatePath: ['spec', 'template'] },
  ReplicaSet: { groups: ['apps', 'extensions'], templatePath: ['spec', 'template'] },
  Job: { groups: ['batch'], templatePath: ['spec', 'template'] },
  CronJob: { groups: ['batch'], templatePath: ['spec', 'jobTemplate', 'spec', 'template'] },
};

export interface Workload {
  kind: string;
  /** `namespace/name`, or just the name when the object has no namespace. */
  name: string;
  /** 1-based position inside a `List`, or null for a top-level object. */
  item: number | null;
  /** The pod template's map in the document, or null when the workload has none (nothing to mutate). */
  template: YAMLMap | null;
  /** The template is reached through a YAML alias (`*name`), so editing it in place would edit the anchor. */
  aliased: boolean;
}

export function findWorkloads(document: Document.Parsed): Workload[] {
  const root = document.contents;
  if (!isMap(root)) return [];
  if (scalarAt(root, 'kind') === 'List') {
    const items = root.get('items', true);
    if (!isSeq(items)) return [];
    return items.items.flatMap((item, index) => {
      const workload = isMap(item) ? asWorkload(item, index + 1) : null;
      return workload ? [workload] : [];
    });
  }
  const workload = asWorkload(root, null);
  return workload ? [workload] : [];
}

function asWorkload(object: YAMLMap, item: number | null): Workload | null {
  const kind = scalarAt(object, 'kind');
  const workloadKind = typeof kind === 'string' ? WORKLOAD_KINDS[kind] : undefined;
  if (typeof kind !== 'string' || !workloadKind) return null;
  const apiVersion = scalarAt(object, 'apiVersion');
  if (typeof apiVersion === 'string' && !workloadKind.groups.includes(apiGroup(apiVersion))) return null;

  let template: unknown = object;
  for (const key of workloadKind.templatePath) {
    template = isMap(template) ? template.get(key, true) : undefined;
    if (isAlias(template)) return { kind, name: displayName(object), item, template: null, aliased: true };
  }
  return {
    kind,
    name: displayName(object),
    item,
    template: isMap(template) && isMap(template.get('spec', true)) ? template : null,
    aliased: false,
  };
}

function apiGroup(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash === -1 ? '' : apiVersion.slice(0, slash);
}

function displayName(object: YAMLMap): string {
  const name = scalarAt(object, 'metadata', 'name') ?? withSuffix(scalarAt(object, 'metadata', 'generateName'), '*');
  const namespace = scalarAt(object, 'metadata', 'namespace');
  const shown = typeof name === 'string' ? name : '(unnamed)';
  return typeof namespace === 'string' ? `${namespace}/${shown}` : shown;
}

function withSuffix(value: unknown, suffix: string): string | undefined {
  return typeof value === 'string' ? `${value}${suffix}` : undefined;
}

function scalarAt(map: YAMLMap, ...path: string[]): unknown {
  const node = map.getIn(path, true);
  return isScalar(node) ? node.value : undefined;
}
