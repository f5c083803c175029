/**
 * `drainguard check` against the real API server: drainguard installed from the chart (its webhook
 * rewriting the pods of opted-in namespaces for real), Envoy workloads whose pods the controllers make,
 * and the check judging them; RBAC refusals in the authorizer's own words; the installation broken one
 * way at a time by what an operator does (the webhook scaled away, a foreign caBundle), and `--wait`
 * started before the webhook is back. Each check runs in this process through the command's own
 * kubeconfig loading and @kubernetes/client-node; the CLI's text, exit codes and terminal output are
 * shown on the built process (check-cli.test.ts).
 *
 * The cluster is shared with other suites, so every check is scoped to a namespace of this suite's
 * (`-n`); `check -A` runs on a cluster of its own in check-rbac.test.ts.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCertificateAuthority } from '../../src/certs/pki';
import { runCheckCommand } from '../../src/cli/check';
import { InputError } from '../../src/cli/errors';
import type { CheckReport, CheckResult } from '../../src/check/report';
import { chartNames, type InstallationNames } from '../../src/check/names';
import { defaultConfig } from '../../src/config';
import { mutate, type Pod } from '../../src/mutate';
import { rewritten, templates, VERSION } from '../support/check-pods';
import type { KubeObject } from '../support/cluster/api';
import {
  adminApi,
  clusterInfo,
  createNamespace,
  deleteNamespace,
  eventually,
  installDrainguard,
  kubectl,
  uninstallDrainguard,
  uniqueSuffix,
  userKubeconfig,
  type DrainguardRelease,
} from '../support/cluster/lane';
import { temporaryDirectory } from '../integration/server/webhook-test-kit';
import { createPod, createWorkload, podsOf, prepareNamespace } from './check-workloads';

const DAY_MS = 24 * 60 * 60 * 1000;
const api = () => adminApi();
const directory = temporaryDirectory();

let release: DrainguardRelease;
let names: InstallationNames;
/** Opted in after its DaemonSet made two pods: one pod recreated since (protected), one not; and more. */
let contour: string;
/** Not opted in: an Envoy Gateway Deployment. */
let gateway: string;
/** Opted in, but excluded by the release's webhook.excludedNamespaces. */
let legacy: string;
/** Not opted in: a pod of an image only the release's configuration calls Envoy. */
let edge: string;
const cleanup: (() => Promise<unknown>)[] = [];

/** The optIn label's key and value, as the check's messages print them. */
const optInLabel = () => Object.entries(release.optIn).map(([key, value]) => `${key}=${value}`)[0]!;

beforeAll(async () => {
  legacy = await createNamespace('check-legacy');
  cleanup.push(() => deleteNamespace(legacy));
  release = await installDrainguard('check', {
    'webhook.objectSelector.matchLabels.app': 'envoy',
    'webhook.excludedNamespaces': `{${legacy}}`,
    'config.envoyImageRepositories': '{envoyproxy/envoy,envoyproxy/envoy-distroless,acme/edge-proxy}',
  });
  cleanup.push(() => uninstallDrainguard(release));
  names = chartNames(release.release, release.namespace);

  [contour, gateway, edge] = await Promise.all([createNamespace('check-contour'), createNamespace('check-gateway'), createNamespace('check-edge')]);
  cleanup.push(() => deleteNamespace(contour), () => deleteNamespace(gateway), () => deleteNamespace(edge));
  await Promise.all([contour, gateway, legacy].map((namespace) => prepareNamespace(api(), namespace)));

  // Before contour is opted in: a DaemonSet's two pods, a Deployment of drainguard 0.0.9's pods, a pod
  // made by hand; none reaches the webhook.
  await createWorkload(api(), contour, 'DaemonSet', 'envoy', templates.contour(), { labels: { app: 'envoy', workload: 'envoy' } });
  await createWorkload(api(), contour, 'Deployment', 'envoy-old', rewritten(templates.contour(), { version: '0.0.9' }), { labels: { app: 'envoy', workload: 'envoy-old' }, gated: true });
  await createPod(api(), contour, 'envoy-by-hand', templates.contour(), { labels: { app: 'envoy', workload: 'by-hand' }, gated: true });
  await eventually('the DaemonSet running its two pods', async () => {
    const pods = [...(await podsOf(api(), contour)).values()].filter((pod) => pod.metadata.name.startsWith('envoy-') && pod.status?.phase === 'Running');
    return pods.filter((pod) => pod.metadata.ownerReferences?.[0]?.kind === 'DaemonSet').length === 2 ? true : undefined;
  });
  await api().patch(`/api/v1/namespaces/${contour}`, { metadata: { labels: release.optIn } }, 'merge');
  // Opted in: the DaemonSet's replacement of a deleted pod is rewritten; a StatefulSet's pods lack the
  // webhook's objectSelector label; a plain Envoy pod opts itself out; nginx is no Envoy.
  const [first] = [...(await podsOf(api(), contour)).values()].filter((pod) => pod.metadata.ownerReferences?.[0]?.kind === 'DaemonSet');
  await api().delete(`/api/v1/namespaces/${contour}/pods/${first!.metadata.name}`, { gracePeriodSeconds: 0 });
  await createWorkload(api(), contour, 'StatefulSet', 'envoy-sts', templates.envoyGateway(), { labels: { workload: 'envoy-sts' }, gated: true });
  const optedOut = templates.plainEnvoy();
  optedOut.metadata = { ...optedOut.metadata, annotations: { 'drainguard.io/inject': 'disabled' } };
  await createPod(api(), contour, 'edge-proxy', optedOut, { gated: true });
  await createPod(api(), contour, 'web', templates.notEnvoy(), { gated: true });

  await createWorkload(api(), gateway, 'Deployment', 'envoy-gw', templates.envoyGateway(), { labels: { app: 'envoy', workload: 'envoy-gw' }, replicas: 2, gated: true });
  await api().patch(`/api/v1/namespaces/${legacy}`, { metadata: { labels: release.optIn } }, 'merge');
  await createWorkload(api(), legacy, 'Deployment', 'envoy', templates.contour(), { labels: { app: 'envoy', workload: 'envoy' }, gated: true });
  const acme = templates.notEnvoy();
  acme.spec.containers[0]!.image = 'registry.example.com/acme/edge-proxy:1.0';
  await createPod(api(), edge, 'acme-edge', acme, { gated: true });

  await eventually('every pod made: the DaemonSet with one protected and one unprotected pod running, the others stored', async () => {
    const pods = await podsOf(api(), contour);
    const daemon = [...pods.values()].filter((pod) => pod.metadata.ownerReferences?.[0]?.kind === 'DaemonSet' && !pod.metadata.deletionTimestamp);
    const running = (pod: KubeObject & { status?: { phase?: string; containerStatuses?: { state: { running?: unknown } }[] } }) =>
      pod.status?.phase === 'Running' && (pod.status.containerStatuses ?? []).every((c) => c.state.running !== undefined);
    const protectedPods = daemon.filter((pod) => pod.metadata.labels?.['drainguard.io/protected'] === 'true');
    const counts = [pods.size, (await podsOf(api(), gateway)).size, (await podsOf(api(), legacy)).size];
    if (daemon.length === 2 && protectedPods.length === 1 && daemon.every(running) && counts.join() === '7,2,1') return true;
    throw new Error(`DaemonSet pods ${JSON.stringify(daemon.map((pod) => [pod.metadata.name, pod.metadata.labels, pod.status]))}; pods per namespace ${counts.join()}`);
  });
}, 300_000);

afterAll(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
  directory.remove();
});

interface CheckRun {
  code: number;
  report: CheckReport;
}

/** `drainguard check ARGS -o json` for this suite's release, as the cluster's admin unless `kubeconfig` says otherwise. */
async function check(args: string[], kubeconfig = clusterInfo().adminKubeconfig): Promise<CheckRun> {
  let stdout = '';
  const code = await runCheckCommand([...args, '--release', release.release, '--drainguard-namespace', release.namespace, '--kubeconfig', kubeconfig, '-o', 'json'], {
    stdout: (text) => (stdout += text),
    env: {},
  });
  return { code, report: JSON.parse(stdout) as CheckReport };
}

function verdicts(report: CheckReport, id: CheckResult['id']): CheckResult[] {
  return report.checks.filter((result) => result.id === id);
}

function only(report: CheckReport, id: CheckResult['id']): CheckResult {
  const found = verdicts(report, id);
  expect(found).toHaveLength(1);
  return found[0]!;
}

function podLine(report: CheckReport, name: string): CheckResult {
  const found = report.checks.filter((result) => result.id === 'pod' && result.pod?.name === name);
  expect(found).toHaveLength(1);
  return found[0]!;
}

/** The one pod line whose pod matches `predicate`. */
function podLineWhere(report: CheckReport, predicate: (line: CheckResult) => boolean): CheckResult {
  const found = report.checks.filter((result) => result.id === 'pod' && predicate(result));
  expect(found).toHaveLength(1);
  return found[0]!;
}

function timelineOf(pod: Pod) {
  const result = mutate(pod, defaultConfig());
  if (result.status !== 'mutated') throw new Error(`expected a mutated result, got ${result.status}`);
  return result.timeline;
}

const selectorText = () => `${optInLabel()}, kubernetes.io/metadata.name NotIn (${release.namespace}, ${legacy})`;

describe('a healthy installation', () => {
  test('passes every installation check and reports the failure policy', async () => {
    const { report } = await check(['-n', contour]);
    expect(only(report, 'webhook-configuration')).toMatchObject({ verdict: 'pass', message: `MutatingWebhookConfiguration ${names.webhookConfiguration} exists (pods.drainguard.io)` });
    expect(only(report, 'webhook-policy')).toMatchObject({ verdict: 'info', message: expect.stringContaining('failurePolicy Ignore') });
    expect(only(report, 'webhook-policy').message).toContain(`timeoutSeconds 3, namespaceSelector ${selectorText()}`);
    expect(only(report, 'ca-bundle')).toMatchObject({ verdict: 'pass', message: expect.stringMatching(/1 CA certificate, the newest valid until .* \(36[45] days\)/) });
    expect(only(report, 'ca-bundle-secret')).toMatchObject({ verdict: 'pass', message: `self mode: caBundle contains the CA in Secret ${release.namespace}/${names.tlsSecret}` });
    expect(only(report, 'service-endpoints')).toMatchObject({ verdict: 'pass', message: `Service ${release.namespace}/${names.service} has 1 ready endpoint (EndpointSlices)` });
    expect(only(report, 'deployment')).toMatchObject({ verdict: 'pass', message: `Deployment ${release.namespace}/${names.deployment}: 1 of 1 replicas available (drainguard ${VERSION})` });
    expect(only(report, 'configuration')).toMatchObject({ verdict: 'pass', message: `Envoy pods are recognised with the webhook's own configuration (ConfigMap ${release.namespace}/${names.configMap})` });
    expect(only(report, 'reporter')).toMatchObject({ verdict: 'info', message: expect.stringContaining('not found (report.enabled false?)') });
    expect(report.installation).toEqual({ release: release.release, namespace: release.namespace, webhookConfiguration: names.webhookConfiguration, version: VERSION, versionSource: 'deployment' });
  });
});

describe('namespaces, pods and fixes', () => {
  test('each namespace holding Envoy pods is judged by the namespaceSelector in the cluster', async () => {
    const opted = only((await check(['-n', contour])).report, 'namespace');
    expect(opted).toMatchObject({ verdict: 'pass', message: `namespace ${contour} is opted in (${selectorText()}): 6 Envoy pods` });

    const notOpted = only((await check(['-n', gateway])).report, 'namespace');
    expect(notOpted).toMatchObject({ verdict: 'fail', message: `namespace ${gateway} is not opted in: it lacks ${optInLabel()} (2 Envoy pods)` });
    expect(notOpted.hint).toContain(`kubectl label namespace ${gateway} ${optInLabel()}`);

    const excluded = only((await check(['-n', legacy])).report, 'namespace');
    expect(excluded).toMatchObject({
      verdict: 'fail',
      message: `namespace ${legacy} is excluded by the webhook's namespaceSelector (kubernetes.io/metadata.name NotIn (${release.namespace}, ${legacy})): 1 Envoy pod drainguard never rewrites`,
    });
  });

  test('tells protected, stale, unprotected and opted-out Envoy pods apart, with their drain settings', async () => {
    const { report } = await check(['-n', contour]);
    expect(only(report, 'pod-list')).toMatchObject({ verdict: 'pass', message: `6 Envoy pods in 1 namespace among 7 pods in namespace ${contour}` });

    const expected = timelineOf(templates.contour());
    const protectedPod = podLineWhere(report, (line) => line.pod?.protection === 'current');
    expect(protectedPod.verdict).toBe('pass');
    expect(protectedPod.pod).toMatchObject({
      protection: 'current',
      drainguardVersion: VERSION,
      envoyContainer: 'envoy',
      drainInstalled: true,
      sidecars: [],
      owner: { kind: 'DaemonSet', name: 'envoy', namespace: contour },
      drain: {
        admin: expected.adminAddress,
        deadlineSeconds: expected.deadlineSeconds,
        drainDelaySeconds: expected.drainDelaySeconds,
        minDrainSeconds: expected.minDrainSeconds,
        minConnections: expected.minConnections,
      },
    });
    expect(protectedPod.message).toContain(`protected by drainguard ${VERSION}; drain: admin ${expected.adminAddress}, deadline ${expected.deadlineSeconds}s`);

    // The DaemonSet's pod from before the opt-in: its sidecar runs (the kubelet reports it running).
    const unprotected = podLineWhere(report, (line) => line.pod?.owner?.kind === 'DaemonSet' && line.pod.protection === 'none');
    expect(unprotected).toMatchObject({ verdict: 'fail', pod: { drainInstalled: false, sidecars: [{ name: 'shutdown-manager', armed: true, running: true }] } });
    expect(unprotected.message).toBe(
      `${contour}/${unprotected.pod!.name}: not rewritten by drainguard; sidecar shutdown-manager still runs with its preStop (a sidecar restart drains Envoy)`,
    );

    const stale = podLineWhere(report, (line) => line.pod?.owner?.name === 'envoy-old');
    expect(stale).toMatchObject({ verdict: 'fail', pod: { protection: 'other-version', drainguardVersion: '0.0.9', drainInstalled: true, owner: { kind: 'Deployment' } } });
    expect(stale.message).toContain(`rewritten by drainguard 0.0.9, not by the installed ${VERSION}`);

    expect(podLine(report, 'envoy-by-hand')).toMatchObject({ verdict: 'fail', pod: { protection: 'none', owner: { kind: 'Pod', name: 'envoy-by-hand' } } });
    expect(podLine(report, 'edge-proxy')).toMatchObject({ verdict: 'info', pod: { protection: 'opted-out', envoyContainer: 'proxy' } });
    // nginx is not an Envoy pod: the core skipped it as `not-envoy`, so it has no line.
    expect(report.checks.some((line) => line.message.includes(`${contour}/web`))).toBe(false);
  });

  test('groups the unprotected pods by workload with the commands that fix them, or says why a restart would not help; exit 1', async () => {
    const contourRun = await check(['-n', contour]);
    const pods = await podsOf(api(), contour);
    const podsOwnedBy = (kind: string) => [...pods.keys()].filter((name) => pods.get(name)!.metadata.ownerReferences?.[0]?.kind === kind);
    const unprotectedDaemonPod = [...pods.values()].find((pod) => pod.metadata.ownerReferences?.[0]?.kind === 'DaemonSet' && !pod.metadata.labels?.['drainguard.io/protected'])!;
    expect(contourRun.report.fixes).toEqual([
      {
        workload: { kind: 'DaemonSet', name: 'envoy', namespace: contour },
        pods: [unprotectedDaemonPod.metadata.name],
        why: '1 pod not rewritten by drainguard',
        commands: [`kubectl -n ${contour} rollout restart daemonset/envoy`],
      },
      {
        workload: { kind: 'Deployment', name: 'envoy-old', namespace: contour },
        pods: podsOwnedBy('ReplicaSet'),
        why: '1 pod rewritten by drainguard 0.0.9',
        commands: [`kubectl -n ${contour} rollout restart deployment/envoy-old`],
      },
      {
        workload: { kind: 'Pod', name: 'envoy-by-hand', namespace: contour },
        pods: ['envoy-by-hand'],
        why: '1 pod not rewritten by drainguard',
        commands: [],
        note: 'no controller owns it: delete it and create it again from its manifest',
      },
      {
        workload: { kind: 'StatefulSet', name: 'envoy-sts', namespace: contour },
        pods: ['envoy-sts-0'],
        why: '1 pod not rewritten by drainguard',
        commands: [],
        note: "the webhook's objectSelector does not select these pods' labels: change webhook.objectSelector, then restart the workload",
      },
    ]);
    expect(contourRun.code).toBe(1);

    const gatewayRun = await check(['-n', gateway]);
    expect(gatewayRun.report.fixes).toEqual([
      {
        workload: { kind: 'Deployment', name: 'envoy-gw', namespace: gateway },
        pods: [...(await podsOf(api(), gateway)).keys()].sort(),
        why: '2 pods not rewritten by drainguard',
        commands: [`kubectl label namespace ${gateway} ${optInLabel()}`, `kubectl -n ${gateway} rollout restart deployment/envoy-gw`],
      },
    ]);

    const legacyRun = await check(['-n', legacy]);
    expect(legacyRun.report.fixes).toEqual([
      {
        workload: { kind: 'Deployment', name: 'envoy', namespace: legacy },
        pods: [...(await podsOf(api(), legacy)).keys()],
        why: '1 pod not rewritten by drainguard',
        commands: [],
        note: `namespace ${legacy} is excluded by the webhook's namespaceSelector (kubernetes.io/metadata.name NotIn (${release.namespace}, ${legacy})): drainguard never rewrites pods there`,
      },
    ]);
  });

  test("limits pods to the context's namespace by default, and to -n", async () => {
    // The admin's kubeconfig with gateway as its context's namespace.
    const inGateway = join(directory.path, 'gateway-context');
    const admin = kubectl(['config', 'view', '--raw', '--minify', '-o', 'json']);
    const config = JSON.parse(admin.stdout) as { contexts: { context: Record<string, string> }[] };
    config.contexts[0]!.context.namespace = gateway;
    writeFileSync(inGateway, JSON.stringify(config));
    const byDefault = await check([], inGateway);
    expect(byDefault.report.scope).toEqual({ allNamespaces: false, namespace: gateway });
    expect(byDefault.report.checks.filter((line) => line.id === 'pod').map((line) => line.pod?.namespace)).toEqual([gateway, gateway]);
    expect(only(byDefault.report, 'pod-list').message).toBe(`2 Envoy pods in 1 namespace among 2 pods in namespace ${gateway}`);
  });

  test('an image the configuration in the cluster calls Envoy makes its pod an Envoy pod; without that configuration it is none', async () => {
    const { report } = await check(['-n', edge]);
    expect(only(report, 'configuration').verdict).toBe('pass');
    expect(podLine(report, 'acme-edge').pod).toMatchObject({ protection: 'none', envoyContainer: 'nginx' });

    // Another release's names: no configuration to read, so drainguard's built-in defaults decide.
    let stdout = '';
    await runCheckCommand(['-n', edge, '--release', 'absent', '--kubeconfig', clusterInfo().adminKubeconfig, '-o', 'json'], { stdout: (text) => (stdout += text), env: {} });
    const withDefaults = JSON.parse(stdout) as CheckReport;
    expect(only(withDefaults, 'configuration').verdict).toBe('fail');
    expect(withDefaults.checks.filter((line) => line.id === 'pod')).toEqual([]);
  });
});

describe('what RBAC refuses, in the authorizer’s words', () => {
  const user = `check-operator-${uniqueSuffix()}`;
  let kubeconfig: string;
  const clusterRole = `${user}-reads`;

  beforeAll(async () => {
    // What the chart's helm test hook grants, less: pods only in gateway, no Secret, no ReplicaSet.
    const rbac = '/apis/rbac.authorization.k8s.io/v1';
    const subjects = [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: user }];
    await api().create(`${rbac}/clusterroles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: clusterRole },
      rules: [
        { apiGroups: ['admissionregistration.k8s.io'], resources: ['mutatingwebhookconfigurations'], verbs: ['get'] },
        { apiGroups: [''], resources: ['namespaces'], verbs: ['get'] },
        { apiGroups: [''], resources: ['events'], verbs: ['list'] },
      ],
    });
    cleanup.push(() => api().delete(`${rbac}/clusterroles/${clusterRole}`), () => api().delete(`${rbac}/clusterrolebindings/${clusterRole}`));
    await api().create(`${rbac}/clusterrolebindings`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: clusterRole }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole }, subjects });
    const role = async (namespace: string, rules: unknown[]) => {
      await api().create(`${rbac}/namespaces/${namespace}/roles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: user }, rules });
      await api().create(`${rbac}/namespaces/${namespace}/rolebindings`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: user }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: user }, subjects });
    };
    await role(release.namespace, [
      { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get'] },
      { apiGroups: [''], resources: ['services', 'configmaps'], verbs: ['get'] },
      { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list'] },
    ]);
    await role(gateway, [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }]);
    kubeconfig = userKubeconfig({ user });
  });

  test('a pod list refused at the cluster scope fails its check naming the verb, resource and scope, and the other checks still run; so does a refused Secret', async () => {
    const { code, report } = await check(['-A'], kubeconfig);
    expect(only(report, 'pod-list')).toMatchObject({
      verdict: 'fail',
      message: `pods in all namespaces: not allowed to list pods in all namespaces (pods is forbidden: User "${user}" cannot list resource "pods" in API group "" at the cluster scope)`,
    });
    expect(only(report, 'webhook-configuration').verdict).toBe('pass');
    expect(only(report, 'ca-bundle-secret')).toMatchObject({
      verdict: 'fail',
      message: `self mode: Secret ${release.namespace}/${names.tlsSecret}: not allowed to get secrets "${names.tlsSecret}" in namespace "${release.namespace}" (secrets "${names.tlsSecret}" is forbidden: User "${user}" cannot get resource "secrets" in API group "" in the namespace "${release.namespace}")`,
    });
    expect(code).toBe(1);
  });

  test('a pod list refused in one namespace names that namespace', async () => {
    const { report } = await check(['-n', contour], kubeconfig);
    expect(only(report, 'pod-list').message).toBe(
      `pods in namespace ${contour}: not allowed to list pods in namespace "${contour}" (pods is forbidden: User "${user}" cannot list resource "pods" in API group "" in the namespace "${contour}")`,
    );
  });

  test('a refused ReplicaSet read leaves the pods grouped by ReplicaSet, with a hint saying why', async () => {
    const { report } = await check(['-n', gateway], kubeconfig);
    const podNames = [...(await podsOf(api(), gateway)).keys()].sort();
    const replicaSet = podNames[0]!.replace(/-[a-z0-9]+$/, '');
    const line = podLine(report, podNames[0]!);
    expect(line.pod?.owner).toEqual({ kind: 'ReplicaSet', name: replicaSet, namespace: gateway });
    expect(line.hint).toContain(
      `not allowed to get replicasets.apps "${replicaSet}" in namespace "${gateway}" (replicasets.apps "${replicaSet}" is forbidden: User "${user}" cannot get resource "replicasets" in API group "apps" in the namespace "${gateway}")`,
    );
    expect(report.fixes).toEqual([
      expect.objectContaining({
        workload: { kind: 'ReplicaSet', name: replicaSet, namespace: gateway },
        commands: [`kubectl label namespace ${gateway} ${optInLabel()}`, `kubectl -n ${gateway} delete pod ${podNames.join(' ')}`],
      }),
    ]);
  });

  test('credentials the API server rejects end the run with a message, not a report', async () => {
    const wrong = join(directory.path, 'wrong-token');
    const admin = JSON.parse(kubectl(['config', 'view', '--raw', '--minify', '-o', 'json']).stdout) as { users: { user: Record<string, string> }[] };
    admin.users[0]!.user = { token: 'not-a-token-of-this-cluster' };
    writeFileSync(wrong, JSON.stringify(admin));
    const run = runCheckCommand(['--kubeconfig', wrong], { stdout: () => undefined, env: {} });
    await expect(run).rejects.toThrow(InputError);
    // The first three reads go out together; the first refusal to arrive names its request.
    await expect(run).rejects.toThrow(
      new RegExp(
        `^drainguard check: the API server at ${clusterInfo().server.replaceAll('.', '\\.')} rejected the credentials \\(401 Unauthorized\\) on get (mutatingwebhookconfigurations\\.admissionregistration\\.k8s\\.io|deployments\\.apps|configmaps) "drainguard`,
      ),
    );
  });
});

/**
 * Last: these break the installation the way an operator can. While the webhook is scaled away or the
 * caBundle is foreign, the API server admits this suite's new pods unchanged (failurePolicy Ignore), so
 * nothing here creates pods.
 */
describe('the installation broken, and healthy again', () => {
  const deploymentPath = () => `/apis/apps/v1/namespaces/${release.namespace}/deployments/${names.deployment}`;
  const webhookConfigurationPath = () => `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${names.webhookConfiguration}`;
  const setCaBundle = async (notBefore: Date, days: number) => {
    const ca = createCertificateAuthority("someone else's CA", { now: notBefore, validityDays: days });
    const patch = [{ op: 'replace', path: '/webhooks/0/clientConfig/caBundle', value: Buffer.from(ca.cert).toString('base64') }];
    await api().patch(webhookConfigurationPath(), patch, 'json');
  };

  beforeAll(async () => {
    await api().patch(`${deploymentPath()}/scale`, { spec: { replicas: 0 } }, 'merge');
    await eventually('the webhook gone: no pod, no endpoint', async () => {
      const pods = await api().list(`/api/v1/namespaces/${release.namespace}/pods?labelSelector=${encodeURIComponent(`app.kubernetes.io/instance=${release.release},app.kubernetes.io/name=drainguard`)}`);
      const slices = await api().list<KubeObject & { endpoints?: unknown[] }>(
        `/apis/discovery.k8s.io/v1/namespaces/${release.namespace}/endpointslices?labelSelector=${encodeURIComponent(`kubernetes.io/service-name=${names.service}`)}`,
      );
      return pods.items.length === 0 && slices.items.every((slice) => (slice.endpoints ?? []).length === 0) ? true : undefined;
    });
  });

  test('a webhook scaled to zero: nothing answers, and the Service has no ready endpoints', async () => {
    const { code, report } = await check(['-n', contour]);
    expect(only(report, 'deployment')).toMatchObject({
      verdict: 'fail',
      message: `Deployment ${release.namespace}/${names.deployment}: 0 of 0 replicas available (drainguard ${VERSION}): scaled to zero, nothing answers the webhook`,
    });
    expect(only(report, 'service-endpoints')).toMatchObject({
      verdict: 'fail',
      message: `Service ${release.namespace}/${names.service} has no ready endpoints (EndpointSlices: 0 endpoints, none ready): the API server cannot reach the webhook`,
    });
    expect(code).toBe(1);
  });

  test('an expired caBundle fails, and so does its agreement with the Secret', async () => {
    await setCaBundle(new Date(Date.now() - 400 * DAY_MS), 365);
    const { report } = await check(['-n', contour]);
    const bundle = only(report, 'ca-bundle');
    expect(bundle.verdict).toBe('fail');
    expect(bundle.message).toMatch(/^caBundle of webhook pods\.drainguard\.io has expired: 1 CA certificate, the newest expired at /);
    expect(bundle.hint).toContain(`kubectl -n ${release.namespace} rollout restart deployment/${names.deployment}`);
    expect(only(report, 'ca-bundle-secret')).toMatchObject({
      verdict: 'fail',
      message: expect.stringContaining(`does not contain the CA in Secret ${release.namespace}/${names.tlsSecret}`),
    });
  });

  test('a caBundle expiring within 30 days fails', async () => {
    await setCaBundle(new Date(), 10);
    const { report } = await check(['-n', contour]);
    expect(only(report, 'ca-bundle')).toMatchObject({ verdict: 'fail', message: expect.stringMatching(/expires soon: .*\((9|10) days left, fewer than 30\)$/) });
  });

  test('--wait gives up when the time is over: exit 1, the last report, and why', async () => {
    const { code, report } = await check(['-n', contour, '--wait', '1500ms']);
    expect(code).toBe(1);
    // How many attempts fit depends on the machine's speed; the back-off itself is tested in test/unit/check/wait.test.ts.
    expect(report.wait).toMatchObject({ timedOut: true });
    expect(report.wait!.attempts).toBeGreaterThanOrEqual(1);
    expect(only(report, 'deployment').verdict).toBe('fail');
  });

  test('--wait started before the webhook is back passes once it is: the webhook rewrites its caBundle when it starts', async () => {
    let stdout = '';
    const progress: string[] = [];
    let scaledUp: Promise<unknown> | undefined;
    const code = await runCheckCommand(
      ['-n', contour, '--release', release.release, '--drainguard-namespace', release.namespace, '--kubeconfig', clusterInfo().adminKubeconfig, '--wait', '120s'],
      {
        stdout: (text) => (stdout += text),
        env: {},
        // The first attempt has seen the webhook away: only now is it brought back.
        progress: (text) => {
          progress.push(text);
          scaledUp ??= api().patch(`${deploymentPath()}/scale`, { spec: { replicas: 1 } }, 'merge');
        },
      },
    );
    await scaledUp;
    expect(progress[0]).toMatch(/attempt 1: waiting for ca-bundle, ca-bundle-secret, service-endpoints, deployment; next check in 1s/);
    expect(stdout).toMatch(/\nInstallation healthy after \d+s \(\d+ attempts\)\n$/);
    expect(Number(/\((\d+) attempts\)/.exec(stdout)![1])).toBeGreaterThanOrEqual(2);
    expect(stdout).toContain(`√ self mode: caBundle contains the CA in Secret ${release.namespace}/${names.tlsSecret}`);
    expect(code).toBe(1); // the installation is healthy; contour's unprotected pods are still findings
  });
});
