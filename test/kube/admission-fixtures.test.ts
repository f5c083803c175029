/**
 * Every workload of the golden corpus (test/fixtures/upstream), of Contour's own manifests
 * (test/fixtures/contour) and every fixture Pod (test/fixtures/pods, the pods the webhook's other
 * suites send), applied as itself to the real kube-apiserver in a namespace opted in to a
 * drainguard release (the chart installed by the real helm, the webhook a real `drainguard serve`
 * reached through the chart's Service). Each file gets a namespace of its own, with the ServiceAccounts
 * its pods name; only the namespace is rewritten (and, where the API server refuses a fixture as
 * shipped, the port names: see asApplied). The controllers create the pods (a Pod is created as it
 * is); the API server runs its
 * admission chain on each (the ServiceAccount plugin, drainguard, then the built-in plugins again and
 * drainguard once more, as reinvocationPolicy IfNeeded asks), defaults and validates it, and stores it.
 *
 * What is compared, for every pod a controller created (S, as stored) and the same workload through
 * `drainguard inject` (the built CLI as a process, with the release's own configuration):
 *
 * - W, the fields drainguard writes: the paths where inject's pod template differs from the input's,
 *   lists of named items (containers, volumes, env, mounts, …) keyed by name;
 * - D, the API server's own reading of inject's pod: a server-side dry run creating inject's pod
 *   template as a Pod in a namespace no webhook sees (defaulting, validation and the built-in
 *   admission plugins, no drainguard);
 * - at every path of W, D holds what inject wrote: every scalar and list element unchanged; fields only
 *   D has are allowed inside the objects drainguard wrote (defaulting), elements only D has in a list
 *   drainguard wrote are not, but for the ServiceAccount token's volume and mounts. Anything else is
 *   the API server changing what drainguard writes (a finding);
 * - S equals D in every field but those the pod's controller and the scheduler set (the pod's identity,
 *   the controllers' hash labels, the node's topology labels copied at binding, spec.nodeName, and for
 *   a DaemonSet's pods the node affinity and tolerations its controller adds), none of which is in W;
 *   the token volume's random name and its place among the volumes and mounts (it is appended before
 *   or after drainguard's, by the order the two ran) are the only normalisation. So the webhook wrote
 *   exactly what inject writes, no more and no less, and the API server kept it;
 * - drainguard's second look changes nothing: the pure core on each stored pod (what a re-invocation
 *   receives), and the webhook on inject's pod (a dry run in the opted-in namespace) against D.
 *
 * The pods need not run (their Secrets and ConfigMaps are not created, so most wait in
 * ContainerCreating) nor be scheduled (Contour's host ports fit one pod per node), and each file's
 * namespace is force-deleted as soon as its pods are read.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { loadConfigFile, type Config } from '../../src/config';
import { mutate, type Pod } from '../../src/mutate';
import { asSentByApiServer } from '../support/upstream-fixtures';
import { repoPath } from '../support/repo';
import { drainguard } from '../e2e/cli/run-cli';
import { resourcePath, type KubeObject } from '../support/cluster/api';
import { adminApi, createNamespace, deleteNamespace, eventually, installDrainguard, uninstallDrainguard, type DrainguardRelease } from '../support/cluster/lane';
import { isRewritten, type StoredPod } from './admission-kit';
import { coverage, keyed, named, pathText, valueAt, writesBetween, type Path, type Write } from './pod-comparison';

const FIXTURE_DIRS = ['test/fixtures/upstream', 'test/fixtures/contour', 'test/fixtures/pods'];
/** Files admitted at once: each may run a few pods, so the cluster's two nodes are never flooded. */
const CONCURRENT_FILES = 4;

type Template = { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: StoredPod['spec'] };

interface Workload {
  kind: 'Deployment' | 'DaemonSet' | 'Pod';
  name: string;
  /** The manifest as applied: the fixture's, in the file's namespace. */
  object: KubeObject & { spec: { replicas?: number; template: Template } & Partial<Template['spec']> };
  /** The pod template (a Pod's own metadata and spec). */
  template: Template;
  /** drainguard inject's output for it. */
  injected: Template;
}

interface FixtureFile {
  name: string;
  namespace: string;
  workloads: Workload[];
  /** The workloads with only the namespace changed, when the API server refuses them so (see asApplied). */
  asShipped?: KubeObject[];
}

/** What the API server made of one workload. */
interface Admitted {
  pods: StoredPod[];
  /** inject's pod template as the API server reads it (dry run, no webhook). */
  reference: StoredPod;
  /** The same, sent to drainguard again (dry run in the opted-in namespace). */
  again: StoredPod;
  /** The API server's answer to the workload as shipped, when asApplied had to change more than the namespace. */
  refusedAsShipped?: string;
}

let release: DrainguardRelease;
let plainNamespace: string;
let files: FixtureFile[] = [];
/** The release's configuration (its ConfigMap), which inject runs with too. */
let config: Config;
const admitted = new Map<string, Promise<Admitted[]>>();
const scratch = mkdtempSync(join(tmpdir(), 'drainguard-admission-fixtures-'));

function fixtureTexts(): { name: string; text: string }[] {
  return FIXTURE_DIRS.flatMap((dir) =>
    readdirSync(repoPath(dir))
      .filter((file) => file.endsWith('.yaml'))
      .sort()
      .map((file) => ({ name: `${dir.replace('test/fixtures/', '')}/${file.replace(/\.yaml$/, '')}`, text: readFileSync(repoPath(dir, file), 'utf8') })),
  );
}

/** A container port name the API server accepts (IANA_SVC_NAME: lower case letters, digits, inner hyphens, at most 15). */
const PORT_NAME = /^(?=.{1,15}$)(?=.*[a-z])[a-z0-9]+(-[a-z0-9]+)*$/;

/**
 * The file as applied: every document's namespace set to `namespace`. And one more change, only where
 * the API server refuses the fixture itself: Envoy Gateway's testdata (v0.5.0 to v1.2.0) names the
 * container ports as its test input names the listeners (`EnvoyHTTPPort`), which no real Gateway
 * produces and the API server rejects; those names are lowercased. `refusedAsShipped` says whether that
 * was needed (the test then shows the API server's refusal of the file as shipped).
 */
function asApplied(text: string, namespace: string): { text: string; refusedAsShipped: boolean } {
  let renamed = false;
  const documents = parseAllDocuments(text)
    .filter((document) => document.contents !== null)
    .map((document) => {
      document.setIn(['metadata', 'namespace'], namespace);
      const containers = (document.getIn(['spec', 'template', 'spec', 'containers']) as { items?: unknown[] } | undefined)?.items ?? [];
      containers.forEach((_, c) => {
        const ports = (document.getIn(['spec', 'template', 'spec', 'containers', c, 'ports']) as { items?: unknown[] } | undefined)?.items ?? [];
        ports.forEach((__, p) => {
          const path = ['spec', 'template', 'spec', 'containers', c, 'ports', p, 'name'];
          const name = document.getIn(path);
          if (typeof name === 'string' && !PORT_NAME.test(name)) {
            document.setIn(path, name.toLowerCase());
            renamed = true;
          }
        });
      });
      return document.toString();
    });
  return { text: documents.join('---\n'), refusedAsShipped: renamed };
}

function inNamespace(text: string, namespace: string): string {
  return parseAllDocuments(text)
    .filter((document) => document.contents !== null)
    .map((document) => {
      document.setIn(['metadata', 'namespace'], namespace);
      return document.toString();
    })
    .join('---\n');
}

function workloadObjects(text: string): Workload['object'][] {
  return parseAllDocuments(text)
    .map((document) => document.toJS() as Workload['object'] | null)
    .filter((object): object is Workload['object'] => object?.kind !== undefined && object.kind in RESOURCE);
}

/** Where each kind is created, and where a Pod's template is: the Pod itself. */
const RESOURCE = { Deployment: ['apps/v1', 'deployments'], DaemonSet: ['apps/v1', 'daemonsets'], Pod: ['v1', 'pods'] } as const;

function templateOf(object: Workload['object']): Template {
  return object.kind === 'Pod' ? { metadata: object.metadata, spec: object.spec as Template['spec'] } : object.spec.template;
}

function collection(kind: Workload['kind'], namespace: string, name?: string): string {
  return resourcePath(RESOURCE[kind][0], RESOURCE[kind][1], namespace, name);
}

/** The ServiceAccounts a file's pods run as. */
function serviceAccounts(file: FixtureFile): string[] {
  const accountOf = (spec: Template['spec']): string => String(spec.serviceAccountName ?? (spec as { serviceAccount?: string }).serviceAccount ?? 'default');
  return [...new Set(file.workloads.map((w) => accountOf(w.template.spec)))].filter((name) => name !== 'default');
}

async function createServiceAccounts(namespace: string, names: string[]): Promise<void> {
  for (const name of names) await adminApi().create(`/api/v1/namespaces/${namespace}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } });
}

/** A pod template as a Pod, created by a server-side dry run: the API server's reading of it, nothing stored. */
async function dryRunPod(namespace: string, template: Template, generateName: string): Promise<StoredPod> {
  const { name: _name, ...metadata } = (template.metadata ?? {}) as Template['metadata'] & { name?: string };
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { ...metadata, generateName, namespace }, spec: template.spec };
  return adminApi().create<StoredPod>(`/api/v1/namespaces/${namespace}/pods?dryRun=All`, pod);
}

/** The pods the workload's controller created, once all of them are there; a refused create fails at once. */
async function podsOf(namespace: string, workload: Workload): Promise<StoredPod[]> {
  const api = adminApi();
  if (workload.kind === 'Pod') return [await api.get<StoredPod>(collection('Pod', namespace, workload.name))];
  return eventually(`the pods of ${workload.kind} ${namespace}/${workload.name}`, async () => {
    const events = await api.list<KubeObject & { reason: string; message: string }>(`/api/v1/namespaces/${namespace}/events?fieldSelector=reason%3DFailedCreate`);
    if (events.items.length > 0) throw new Error(`the controller could not create pods: ${events.items.map((e) => e.message).join('; ')}`);
    const live = await api.get<{ spec: { replicas?: number }; status?: { desiredNumberScheduled?: number; observedGeneration?: number } }>(
      collection(workload.kind, namespace, workload.name),
    );
    const expected = workload.kind === 'Deployment' ? (live.spec.replicas ?? 1) : live.status?.observedGeneration ? live.status.desiredNumberScheduled : undefined;
    if (expected === undefined) return undefined;
    const pods = (await api.list<StoredPod>(`/api/v1/namespaces/${namespace}/pods`)).items.filter((pod) =>
      pod.metadata.ownerReferences?.some((owner) => (workload.kind === 'DaemonSet' ? owner.kind === 'DaemonSet' && owner.name === workload.name : owner.kind === 'ReplicaSet' && owner.name.startsWith(`${workload.name}-`))),
    );
    // Admitted is enough: whether the scheduler places them (Contour's host ports are one per node) is not the subject.
    return pods.length === expected ? pods : undefined;
  }, 300_000);
}

async function admit(file: FixtureFile): Promise<Admitted[]> {
  try {
    await createServiceAccounts(file.namespace, serviceAccounts(file));
    for (const workload of file.workloads) await adminApi().create(collection(workload.kind, file.namespace), workload.object);
    const results: Admitted[] = [];
    for (const [index, workload] of file.workloads.entries()) {
      const pods = await podsOf(file.namespace, workload);
      const reference = await dryRunPod(plainNamespace, workload.injected, `${workload.name}-`);
      const again = await dryRunPod(file.namespace, workload.injected, `${workload.name}-`);
      let refusedAsShipped: string | undefined;
      if (file.asShipped) {
        const answer = await adminApi().raw('POST', `${collection(workload.kind, file.namespace)}?dryRun=All`, file.asShipped[index]);
        refusedAsShipped = `${answer.status} ${(answer.body as { message?: string }).message ?? ''}`;
      }
      results.push({ pods, reference, again, ...(refusedAsShipped ? { refusedAsShipped } : {}) });
    }
    return results;
  } finally {
    await deleteNamespace(file.namespace);
  }
}

/** Runs `work` over `items`, at most `limit` at a time, started in order; one promise per item. */
function limited<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R>[] {
  let active = 0;
  const waiting: (() => void)[] = [];
  const acquire = () => {
    if (active < limit) {
      active++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => waiting.push(resolve));
  };
  // A finished item hands its slot to the next one waiting.
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else active--;
  };
  return items.map((item) => acquire().then(() => work(item)).finally(release));
}

beforeAll(async () => {
  release = await installDrainguard('adm-fixtures');
  plainNamespace = await createNamespace('adm-fixtures-plain');
  // inject runs with the configuration the release's webhook runs with (the chart's ConfigMap).
  const configMaps = await adminApi().list<KubeObject & { data: Record<string, string> }>(`/api/v1/namespaces/${release.namespace}/configmaps?labelSelector=app.kubernetes.io%2Finstance%3D${release.release}`);
  const configMap = configMaps.items.find((c) => c.metadata.name.endsWith('-config'))!;
  const configPath = join(scratch, 'config.yaml');
  writeFileSync(configPath, configMap.data['config.yaml']!);
  config = loadConfigFile(configPath);

  const texts = fixtureTexts();
  const namespaces = await Promise.all(texts.map(() => createNamespace('adm-fixture', release.optIn)));
  const applied = texts.map(({ text }, index) => asApplied(text, namespaces[index]!));
  const rewritten = applied.map(({ text }) => text);
  // One inject process for the whole corpus: its output keeps every document, in order.
  const injected = drainguard(['inject', '-f', '-', '--config', configPath, '-o', 'json'], rewritten.join('---\n'));
  if (injected.status !== 0) throw new Error(`drainguard inject failed (${injected.status}): ${injected.stderr}`);
  const output = (JSON.parse(injected.stdout) as { items: Workload['object'][] }).items;
  const injectedOf = (kind: string, namespace: string, name: string) =>
    output.find((item) => item.kind === kind && item.metadata.namespace === namespace && item.metadata.name === name)!;

  files = texts.map(({ name }, index) => {
    const namespace = namespaces[index]!;
    const workloads = workloadObjects(rewritten[index]!).map((object) => ({
      kind: object.kind as Workload['kind'],
      name: object.metadata.name,
      object,
      template: templateOf(object),
      injected: templateOf(injectedOf(object.kind!, namespace, object.metadata.name)),
    }));
    const asShipped = applied[index]!.refusedAsShipped ? workloadObjects(inNamespace(texts[index]!.text, namespace)) : undefined;
    return { name, namespace, workloads, ...(asShipped ? { asShipped } : {}) };
  });
  await createServiceAccounts(plainNamespace, [...new Set(files.flatMap(serviceAccounts))]);
  const results = limited(files, CONCURRENT_FILES, admit);
  files.forEach((file, index) => {
    // Each test awaits its own; none is left unhandled when a test fails before reaching it.
    results[index]!.catch(() => undefined);
    admitted.set(file.name, results[index]!);
  });
}, 600_000);

afterAll(async () => {
  await Promise.allSettled([...admitted.values()]);
  for (const file of files) await deleteNamespace(file.namespace);
  if (plainNamespace) await deleteNamespace(plainNamespace);
  if (release) await uninstallDrainguard(release);
  rmSync(scratch, { recursive: true, force: true });
}, 300_000);

// ---- what is compared ----------------------------------------------------------------------------

/** Labels the pod's controller sets, and the node's topology labels the API server copies at binding. */
const CONTROLLER_LABELS = ['pod-template-hash', 'controller-revision-hash', 'pod-template-generation', 'topology.kubernetes.io/zone', 'topology.kubernetes.io/region'];
/** The ServiceAccount admission plugin's token volume: a random suffix per pod. */
const TOKEN_VOLUME = /^kube-api-access-[a-z0-9]{5}$/;

/** The fields of a stored pod that only the controllers and the scheduler set, as paths of the keyed view. */
function controllerOwned(kind: Workload['kind']): Path[] {
  return [
    ...CONTROLLER_LABELS.map((label) => ['metadata', 'labels', label]),
    ['spec', 'nodeName'],
    ...(kind === 'DaemonSet' ? [['spec', 'affinity'], ['spec', 'tolerations']] : []),
  ];
}

/**
 * What the comparison reads of a pod (labels, annotations, spec), without the controller-owned fields.
 * The ServiceAccount token volume gets a random name per pod, so its name is made equal; and it is
 * appended by an admission plugin that runs before the webhooks, so whether it comes before or after a
 * volume or mount drainguard appends depends only on which ran first: it is put last in both.
 */
function compared(pod: StoredPod | Template, kind: Workload['kind']): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify({ metadata: { labels: pod.metadata?.labels ?? {}, annotations: pod.metadata?.annotations ?? {} }, spec: pod.spec })) as { spec: StoredPod['spec'] };
  const tokenLast = <T extends { name: string }>(list: T[] | undefined) =>
    list && [...list.filter((item) => !TOKEN_VOLUME.test(item.name)), ...list.filter((item) => TOKEN_VOLUME.test(item.name)).map((item) => ({ ...item, name: 'kube-api-access-(generated)' }))];
  if (copy.spec.volumes) copy.spec.volumes = tokenLast(copy.spec.volumes);
  for (const container of [...copy.spec.containers, ...(copy.spec.initContainers ?? [])]) if (container.volumeMounts) container.volumeMounts = tokenLast(container.volumeMounts);
  for (const path of controllerOwned(kind)) {
    const parent = valueAt(copy, path.slice(0, -1)) as Record<string, unknown> | undefined;
    if (parent) delete parent[path.at(-1)!];
  }
  return copy;
}

function isTokenVolumeOrMount(path: Path): boolean {
  const last = path.at(-1) ?? '';
  return last.startsWith('[name=') && TOKEN_VOLUME.test(last.slice('[name='.length, -1));
}

const startsWith = (path: Path, prefix: Path) => prefix.every((segment, index) => path[index] === segment);

/** What drainguard writes to a workload's pods: inject's template against the input's, as the API server receives them. */
function writesOf(workload: Workload): Write[] {
  const input = asSentByApiServer(workload.template);
  const output = asSentByApiServer(workload.injected);
  return writesBetween(keyed({ metadata: input.metadata ?? {}, spec: input.spec }), keyed({ metadata: output.metadata ?? {}, spec: output.spec }));
}

/** Where the API server's reading of inject's pod departs from what inject wrote (findings), and what it defaulted. */
function apiServerChanges(workload: Workload, reference: StoredPod): { changed: string[]; defaulted: string[] } {
  const stored = keyed(reference);
  const written = keyed(asSentByApiServer(workload.injected));
  const changed: string[] = [];
  const defaulted: string[] = [];
  for (const write of writesOf(workload)) {
    if (write.kind === 'removed') {
      if (valueAt(stored, write.path) !== undefined) changed.push(`${pathText(write.path)}: drainguard removed it, the API server stores ${JSON.stringify(valueAt(stored, write.path))}`);
      continue;
    }
    const result = coverage(valueAt(stored, write.path), valueAt(written, write.path), write.path, isTokenVolumeOrMount);
    changed.push(...result.changed);
    defaulted.push(...result.added);
  }
  return { changed, defaulted };
}

/** Fields where two pods differ, for a readable failure (the assertion after it compares them whole, order included). */
function differences(actual: unknown, expected: unknown): string[] {
  return writesBetween(keyed(expected), keyed(actual)).map(
    (write) => `${pathText(write.path)}: expected ${JSON.stringify(valueAt(keyed(expected), write.path))}, stored ${JSON.stringify(valueAt(keyed(actual), write.path))}`,
  );
}

test('the corpus: every fixture file has a workload; inject leaves alone exactly the upstream files whose golden equals the fixture, and the one pod that is not Envoy', () => {
  expect(files.map((file) => file.name)).toEqual(fixtureTexts().map(({ name }) => name));
  for (const file of files) expect(file.workloads.length).toBeGreaterThan(0);
  const untouched = files.filter((file) => file.workloads.every((workload) => writesOf(workload).length === 0)).map((file) => file.name);
  const goldenUnchanged = fixtureTexts()
    .filter(({ name }) => name.startsWith('upstream/'))
    .filter(({ name, text }) => readFileSync(repoPath('test/golden', `${name.replace('upstream/', '')}.injected.yaml`), 'utf8') === text)
    .map(({ name }) => name);
  expect(untouched).toEqual([...goldenUnchanged, 'pods/not-envoy']);
});

test('the comparison finds a value drainguard wrote that the API server changed, and an element it added to a list drainguard wrote', () => {
  const written = keyed([{ name: 'envoy', lifecycle: { preStop: { exec: { command: ['drain', '--deadline', '290s'] } } } }]);
  const rewrittenValue = keyed([{ name: 'envoy', lifecycle: { preStop: { exec: { command: ['drain', '--deadline', '30s'] } } } }]);
  expect(coverage(rewrittenValue, written, ['containers'], () => false).changed).toEqual([
    'containers[name=envoy].lifecycle.preStop.exec.command.2: drainguard wrote "290s", the API server stores "30s"',
  ]);
  const defaulted = keyed([{ name: 'envoy', terminationMessagePath: '/dev/termination-log', lifecycle: { preStop: { exec: { command: ['drain', '--deadline', '290s'] } } } }]);
  expect(coverage(defaulted, written, ['containers'], () => false)).toEqual({ changed: [], added: ['containers[name=envoy].terminationMessagePath'] });
  expect(coverage(keyed([{ name: 'envoy' }, { name: 'sidecar' }]), keyed([{ name: 'envoy' }]), ['containers'], () => false).changed).toEqual([
    'containers[name=sidecar]: an element the API server added to a list drainguard wrote',
  ]);
  expect(named('envoy')).toBe('[name=envoy]');
});

describe.each(fixtureTexts().map(({ name }) => name))('%s', (name) => {
  test('the pods the controllers create are what drainguard inject writes, as the API server stores them', async () => {
    const file = files.find((f) => f.name === name)!;
    const results = await admitted.get(name)!;
    file.workloads.forEach((workload, index) => {
      const { pods, reference, again, refusedAsShipped } = results[index]!;
      if (file.asShipped) expect(refusedAsShipped).toMatch(/^422 .*spec\.template\.spec\.containers\[\d+\]\.ports\[\d+\]\.name: Invalid value/);
      const writes = writesOf(workload);
      // The controllers' and the scheduler's fields are never drainguard's.
      for (const owned of controllerOwned(workload.kind)) expect(writes.filter((write) => startsWith(write.path, owned) || startsWith(owned, write.path))).toEqual([]);

      expect(apiServerChanges(workload, reference).changed).toEqual([]);
      const expected = compared(reference, workload.kind);
      for (const pod of pods) {
        expect(isRewritten(pod)).toBe(writes.length > 0);
        expect(differences(compared(pod, workload.kind), expected)).toEqual([]);
        expect(compared(pod, workload.kind)).toEqual(expected);
      }
      // drainguard on its own result, as the API server stored it: nothing more to write (the pure core on
      // the stored pod, as a re-invocation sees it; and the webhook on inject's pod, through the API server).
      for (const pod of pods) expect(mutate(pod as Pod, config)).toMatchObject({ status: writes.length > 0 ? 'unchanged' : 'skipped', patch: [] });
      expect(differences(compared(again, workload.kind), compared(reference, workload.kind))).toEqual([]);
    });
  }, 300_000);
});
