/**
 * The cluster the docs show, built for real, and the docs' blocks that need a cluster held to what the
 * commands print against it: every block whose comment names a `cluster:` scenario
 * (test/support/held-blocks.ts) in README.md, the chart's README and docs/*.md, run as the built CLI
 * (a process, as a user runs it, the cluster found through ~/.kube/config). Its names must be the docs'
 * (release `drainguard` in `drainguard-system`, namespaces `projectcontour` and `gateway`), so the
 * cluster is this suite's own: `helm install drainguard` with the chart's defaults (two webhook and
 * two reporter replicas), as a user installs it.
 *
 * Its two nodes run different container runtimes: node-a containerd 2.1.4, node-b containerd 1.7.27,
 * which cannot mount image volumes. With drainguard switched to `installer.delivery: image-volume`,
 * `drainguard check` says so for node-b and fails the Envoy pod placed there (issue 32).
 *
 * The Envoy pods' kubelet is the test (test/support/cluster/played-pods): it starts them, and ends the
 * drained ones with the drain records the docs show, so the reporters write the Events the docs' check
 * reads; node-b's pod in image-volume mode is left as it was scheduled (what containerd 1.7 does with an
 * image volume is not the stand-in's to play: k3s-io/k3s#14323 reports one mounting it empty).
 *
 * What must vary from run to run is replaced, explicitly and only there, before the comparison: the
 * API server's address (each cluster has its own), the pods' random name suffixes, the CA's expiry and
 * the kubelet's finishedAt of each drain (the docs show fixed ones). Nothing else is normalised.
 */
import { X509Certificate } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import type { CheckReport, CheckResult } from '../../src/check/report';
import type { Pod as PodTemplate } from '../../src/mutate';
import { templates, VERSION } from '../support/check-pods';
import type { TestCluster } from '../support/cluster/cluster';
import { eventually, grantUser, runAsync, startPrivateCluster } from '../support/cluster/lane';
import type { Pod } from '../support/cluster/pod-spec';
import { runPlayedPod } from '../support/cluster/played-pods';
import { finishedRecord } from '../support/generators/drain-records';
import { commandWords, heldBlocks, outputMismatch, type HeldBlock } from '../support/held-blocks';
import { CHART_DIR, helmBinary } from '../support/helm';
import { REPO_ROOT } from '../support/repo';
import { temporaryDirectory } from '../integration/server/webhook-test-kit';
import { spawnDrainguard, stopAll } from '../e2e/cli/spawn-cli';
import { CHECK_READS, prepareNamespace } from './check-workloads';
import { drainedExit, endPod, playedWorkload, runningPods, type PlayedWorkload } from './played-workloads';
import { podEventsOnce, privateCluster, type ClusterHandle } from './report/workloads';

const NODES = [
  { name: 'node-a', containerRuntimeVersion: 'containerd://2.1.4' },
  { name: 'node-b', containerRuntimeVersion: 'containerd://1.7.27' },
];
const RELEASE_NAMESPACE = 'drainguard-system';
/** The chart's default opt-in label. */
const OPT_IN = { 'drainguard.io/inject': 'enabled' };
/** The docs' context name and API server address. */
const CONTEXT = 'prod';
const DOCS_SERVER_ADDRESS = '10.0.0.1';

/** The scenarios a block's `cluster:` names, in the order this suite builds them. */
const SCENARIOS = {
  example: 'the example cluster',
  jane: 'the example cluster, as user jane, who may not list pods or nodes',
  imageVolume: 'the example cluster in image-volume mode',
  stopped: 'the example cluster with its API server stopped',
} as const;

/** The docs' names for the pods the scenario makes (each run's own names are random). */
const DOCS_PODS = {
  gateway: 'envoy-5wj2d',
  projectcontour: 'envoy-7xk2p',
  /** projectcontour's drained pods, oldest first: the deadline is the fourth. */
  drained: ['envoy-2kfq7', 'envoy-9zt4c', 'envoy-h6m8r', 'envoy-8f51b', 'envoy-cc520'],
};
/** The docs' time of the first drain, and the drains (the kubelet's finishedAt, seconds after it). */
const DOCS_FIRST_DRAIN = Date.parse('2026-12-01T23:54:33Z');
const DRAINS = [
  { after: 0, record: () => finishedRecord('drained', { durationMs: 12_000 }) },
  { after: 3, record: () => finishedRecord('drained', { durationMs: 11_000 }) },
  { after: 5, record: () => finishedRecord('drained', { durationMs: 13_000 }) },
  { after: 8, record: () => finishedRecord('deadline', { durationMs: 290_000, connectionsAtEnd: 17, openListeners: [{ name: 'ingress_https', connections: 17 }] }) },
  { after: 10, record: () => finishedRecord('drained', { durationMs: 14_000 }) },
];
/** The docs' expiry of drainguard's CA. */
const DOCS_CA_EXPIRY = '2027-03-01T10:00:00.000Z';

const directory = temporaryDirectory();
let cluster: TestCluster;
let handle: ClusterHandle;
/** HOME directories whose ~/.kube/config is the admin's, and jane's, each with the context `prod`. */
const homes: Record<'admin' | 'jane', string> = { admin: '', jane: '' };
/** What must vary, replaced by what the docs show: [actual, shown]. */
const replacements: [RegExp, string][] = [];

/** A HOME whose ~/.kube/config is `kubeconfig` with its one context named `prod`. */
function homeWith(name: string, kubeconfig: string): string {
  const home = join(directory.path, name);
  mkdirSync(join(home, '.kube'), { recursive: true });
  const config = parse(readFileSync(kubeconfig, 'utf8')) as { contexts: { name: string }[]; 'current-context': string };
  config.contexts[0]!.name = CONTEXT;
  config['current-context'] = CONTEXT;
  writeFileSync(join(home, '.kube', 'config'), stringify(config), { mode: 0o600 });
  return home;
}

const wordBound = (text: string) => new RegExp(`\\b${text.replaceAll('.', '\\.')}\\b`, 'g');

/** The built CLI as a user runs it: `drainguard ARGS` with HOME (and so ~/.kube/config) of `home`. */
async function drainguard(args: readonly string[], home: string) {
  return spawnDrainguard(args, { env: { HOME: home } });
}

function normalised(text: string): string {
  return replacements.reduce((out, [actual, shown]) => out.replace(actual, shown), text);
}

async function createNamespace(name: string, labels: Record<string, string> = {}): Promise<void> {
  await handle.api.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
  await eventually(`the default ServiceAccount of ${name}`, () => handle.api.find(`/api/v1/namespaces/${name}/serviceaccounts/default`));
  await prepareNamespace(handle.api, name);
}

/** Contour's Envoy pod template, on node-a alone (one pod per DaemonSet, as the docs show). */
function onNodeA(template: PodTemplate): PodTemplate {
  return { ...template, spec: { ...template.spec, nodeSelector: { 'kubernetes.io/hostname': 'node-a' } } };
}

const docsBlocks = (): HeldBlock[] =>
  ['README.md', 'charts/drainguard/README.md', ...readdirSync(join(REPO_ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)]
    .flatMap((page) => heldBlocks(page, readFileSync(join(REPO_ROOT, page), 'utf8')))
    .filter((block) => block.cluster !== undefined);
const blocksOf = (scenario: string) => docsBlocks().filter((block) => block.cluster === scenario);
const where = (block: HeldBlock) => `${block.page}:${block.line}`;

/** The block's command, run against the cluster as `home`'s user: what the block shows, normalised. */
async function expectHeld(block: HeldBlock, home: string): Promise<void> {
  const [program, ...args] = commandWords(block.what);
  expect(program).toBe('drainguard');
  const result = await drainguard(args, home);
  const text = normalised(block.kind === 'stderr of' ? result.stderr : result.stdout);
  const problem = outputMismatch(block, text);
  // On a mismatch, what the command printed (normalised), to paste into the page.
  expect({ at: where(block), status: result.status, problem, output: problem === undefined ? undefined : text }).toEqual({
    at: where(block),
    status: block.exitStatus,
    problem: undefined,
    output: undefined,
  });
}

/** A test for each block of `scenario`, its command run as the user whose HOME `home()` gives. */
function holdBlocks(scenario: string, home: () => string): void {
  test.each(blocksOf(scenario).map((block) => [`${where(block)}: ${block.what}`, block] as const))('%s', async (_title, block) => {
    await expectHeld(block, home());
  });
}

beforeAll(async () => {
  cluster = await startPrivateCluster({ nodes: NODES, installDrainguard: true });
  handle = privateCluster(cluster);
  homes.admin = homeWith('admin', cluster.info.adminKubeconfig);
  homes.jane = homeWith('jane', cluster.kubeconfigFor({ user: 'jane' }));
  replacements.push([wordBound(cluster.info.hostAddress), DOCS_SERVER_ADDRESS]);
  const secret = await handle.api.get<{ data: Record<string, string> }>(`/api/v1/namespaces/${RELEASE_NAMESPACE}/secrets/drainguard-tls`);
  const expiry = new Date(new X509Certificate(Buffer.from(secret.data['ca.crt']!, 'base64')).validTo).toISOString();
  replacements.push([wordBound(expiry), DOCS_CA_EXPIRY]);

  // Jane reads what check reads (docs/check.md, "Permissions"), but pods and nodes.
  await grantUser(handle.api, 'jane', {
    cluster: [...CHECK_READS.cluster, { apiGroups: [''], resources: ['events'], verbs: ['list'] }, { apiGroups: ['apps'], resources: ['replicasets'], verbs: ['get'] }],
    namespaces: { [RELEASE_NAMESPACE]: [...CHECK_READS.release, { apiGroups: [''], resources: ['secrets'], verbs: ['get'] }] },
  });

  // gateway, not opted in: Contour's DaemonSet, its pod not rewritten. projectcontour, opted in: the
  // same, its pod drained five times (the reporters' Events), the sixth running.
  await createNamespace('gateway');
  await createNamespace('projectcontour', OPT_IN);
  const gateway = await playedWorkload(handle, 'gateway', 'DaemonSet', 'envoy', onNodeA(templates.contour()));
  const contour = await playedWorkload(handle, 'projectcontour', 'DaemonSet', 'envoy', onNodeA(templates.contour()));
  const start = Math.floor((Date.now() - 5 * 60_000) / 1000) * 1000;
  for (const [index, drain] of DRAINS.entries()) {
    const finishedAt = new Date(start + drain.after * 1000);
    const name = await endPod(handle, contour, drainedExit(drain.record()), finishedAt);
    replacements.push([wordBound(name), DOCS_PODS.drained[index]!], [wordBound(finishedAt.toISOString()), new Date(DOCS_FIRST_DRAIN + drain.after * 1000).toISOString()]);
  }
  const named = async (workload: PlayedWorkload, shown: string) => {
    const [pod] = await runningPods(handle, workload, 1);
    replacements.push([wordBound(pod!.metadata.name), shown]);
    return pod!;
  };
  await named(gateway, DOCS_PODS.gateway);
  const current = await named(contour, DOCS_PODS.projectcontour);
  expect(current.metadata.labels?.['drainguard.io/protected']).toBe('true');
  await podEventsOnce(handle, 'projectcontour', DRAINS.length);
}, 600_000);

afterAll(async () => {
  stopAll();
  handle?.api.close();
  await cluster?.stop();
  directory.remove();
}, 120_000);

test('every block held against a cluster names a scenario this suite builds, and each scenario holds a block', () => {
  const named = new Set<string>(Object.values(SCENARIOS));
  expect(docsBlocks().filter((block) => !named.has(block.cluster!)).map((block) => `${where(block)}: ${block.cluster}`)).toEqual([]);
  for (const scenario of named) expect({ scenario, blocks: blocksOf(scenario).length > 0 }).toEqual({ scenario, blocks: true });
});

describe(SCENARIOS.example, () => {
  holdBlocks(SCENARIOS.example, () => homes.admin);

  test('the check behind the docs: the drains the reporters recorded, in JSON', async () => {
    const result = await drainguard(['check', '-A', '-o', 'json'], homes.admin);
    const report = JSON.parse(result.stdout) as CheckReport;
    const drains = report.checks.find((line) => line.id === 'drains')!;
    expect(drains.drains).toMatchObject({ workload: 'daemonset/envoy', outcomes: { drained: 4, deadline: 1 }, medianDrainedSeconds: 12.5, ok: false });
    expect(drains.drains!.drains.map((drain) => drain.outcome)).toEqual(['drained', 'deadline', 'drained', 'drained', 'drained']);
    expect(result.status).toBe(1);
  });
});

describe(SCENARIOS.jane, () => {
  holdBlocks(SCENARIOS.jane, () => homes.jane);

  test('refused reads fail only their own checks; nodes that cannot be listed leave a note', async () => {
    const result = await drainguard(['check', '-A', '-o', 'json'], homes.jane);
    const report = JSON.parse(result.stdout) as CheckReport;
    // The pods' list fails (and the drains the Events report, which jane may read).
    expect(report.checks.filter((line) => line.verdict === 'fail').map((line) => line.id)).toEqual(['pod-list', 'drains']);
    expect(report.nodes).toBeUndefined();
    expect(report.checks.filter((line) => line.category === 'nodes')).toEqual([
      {
        category: 'nodes',
        id: 'image-volumes',
        verdict: 'info',
        message:
          'nodes: not allowed to list nodes (nodes is forbidden: User "jane" cannot list resource "nodes" in API group "" at the cluster scope): which nodes can mount image volumes is not known (installer.delivery: copy)',
      },
    ]);
  });
});

describe(SCENARIOS.imageVolume, () => {
  let text = '';
  let report: CheckReport;
  let code: number | null;
  const podLine = (namespace: string, node: string): CheckResult => report.checks.find((line) => line.id === 'pod' && line.pod?.namespace === namespace && line.pod.node === node)!;

  beforeAll(async () => {
    const upgraded = await runAsync(helmBinary(), [
      'upgrade', 'drainguard', CHART_DIR, '--namespace', RELEASE_NAMESPACE, '--reuse-values', '--set', 'config.installer.delivery=image-volume',
      '--wait', '--timeout', '4m', '--kubeconfig', cluster.info.adminKubeconfig,
    ]);
    if (upgraded.status !== 0) throw new Error(`helm upgrade failed:\n${upgraded.stderr}`);
    // edge, opted in: Contour's DaemonSet on both nodes, rewritten for image volumes. node-a's kubelet
    // starts its pod; node-b's pod stays as scheduled.
    await createNamespace('edge', OPT_IN);
    const edge = await playedWorkload(handle, 'edge', 'DaemonSet', 'envoy', templates.contour());
    const pods = await eventually('a pod of edge/envoy on each node', async () => {
      const list = await handle.api.list<Pod>(`/api/v1/namespaces/edge/pods?labelSelector=${encodeURIComponent(edge.selector)}`);
      return list.items.length === 2 && list.items.every((pod) => pod.spec.nodeName) ? list.items : undefined;
    });
    for (const pod of pods) {
      const volumes = (pod.spec.volumes ?? []).filter((volume) => volume.image !== undefined);
      expect(volumes).toEqual([{ name: 'drainguard', image: { reference: `ghcr.io/drainguard/envoy-shutdown:${VERSION}`, pullPolicy: 'IfNotPresent' } }]);
    }
    await runPlayedPod(handle.api, 'edge', pods.find((pod) => pod.spec.nodeName === 'node-a')!.metadata.name);
    const result = await drainguard(['check', '-A'], homes.admin);
    text = result.stdout;
    code = result.status;
    report = JSON.parse((await drainguard(['check', '-A', '-o', 'json'], homes.admin)).stdout) as CheckReport;
  }, 600_000);

  holdBlocks(SCENARIOS.imageVolume, () => homes.admin);

  test('check says node-b cannot mount image volumes and fails the Envoy pod placed there; node-a passes', () => {
    expect(report.nodes?.map(({ name, capability, reason }) => [name, capability, reason])).toEqual([
      ['node-a', 'yes', 'kubelet v1.37.2: ImageVolume GA; containerd 2.1.4'],
      ['node-b', 'no', 'containerd 1.7.27: image volumes need 2.1.0 or newer'],
    ]);
    expect(text).toContain(
      '\nnodes (image volumes)\n---------------------\nℹ 1 of 2 nodes can mount image volumes; 1 cannot (node-b) (installer.delivery: image-volume)\n' +
        '    an Envoy pod placed on a node that cannot mount them fails to start: keep Envoy on nodes that can (nodeSelector or affinity)\n' +
        'ℹ node node-b cannot mount image volumes: containerd 1.7.27: image volumes need 2.1.0 or newer (kubelet v1.37.2, containerd://1.7.27)\n',
    );
    const onB = podLine('edge', 'node-b');
    expect(onB).toMatchObject({
      verdict: 'fail',
      message: expect.stringMatching(
        new RegExp(`^edge/envoy-\\w{5}: protected by drainguard ${VERSION.replaceAll('.', '\\.')} \\(the drain program from an image volume\\); drain: .*; its node node-b cannot mount image volumes \\(containerd 1\\.7\\.27: image volumes need 2\\.1\\.0 or newer\\)$`),
      ),
      hint: 'keep Envoy off such nodes (nodeSelector or affinity) or upgrade them, or set installer.delivery: copy and restart the workload',
      pod: expect.objectContaining({ delivery: 'image-volume', node: 'node-b', protection: 'current' }),
    });
    expect(text).toContain(`\n× ${onB.message}\n    keep Envoy off such nodes`);
    expect(podLine('edge', 'node-a')).toMatchObject({ verdict: 'pass', pod: expect.objectContaining({ delivery: 'image-volume', node: 'node-a' }) });
    expect(podLine('edge', 'node-a').message).toMatch(/^edge\/envoy-\w{5}: protected by drainguard \S+ \(the drain program from an image volume\); drain: /);
    expect(code).toBe(1);
  });

  test('a pod rewritten in copy mode is not protected as now configured: it fails, with the restart that switches it', () => {
    expect(podLine('projectcontour', 'node-a')).toMatchObject({
      verdict: 'fail',
      message: expect.stringMatching(/rewritten by drainguard \S+ with the drain program copied by the installer, not an image volume as installer\.delivery now says/),
      pod: expect.objectContaining({ protection: 'other-delivery', delivery: 'copy' }),
    });
    const pod = podLine('projectcontour', 'node-a').pod!.name;
    expect(report.fixes).toContainEqual({
      workload: { kind: 'DaemonSet', name: 'envoy', namespace: 'projectcontour' },
      pods: [pod],
      why: '1 pod rewritten for installer.delivery: copy',
      commands: ['kubectl -n projectcontour rollout restart daemonset/envoy'],
    });
    expect(text).toContain(`\ndaemonset projectcontour/envoy: 1 pod rewritten for installer.delivery: copy (${pod})\n    kubectl -n projectcontour rollout restart daemonset/envoy\n`);
  });
});

describe(SCENARIOS.stopped, () => {
  beforeAll(() => cluster.stopApiServer(), 120_000);

  holdBlocks(SCENARIOS.stopped, () => homes.admin);
});
