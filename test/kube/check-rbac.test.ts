/**
 * Least privilege, judged by the real authorizer. A cluster of this suite's own, its API server writing
 * an audit log of every request drainguard's ServiceAccounts and this suite's check users make. There,
 * as an operator would: `drainguard check --pre` before installing (as a cluster admin, as users who
 * lack permissions, with a webhook configuration of the same name in the way), `helm install` of the
 * chart, Envoy workloads protected by the webhook and one of them drained (the reporter's Events), a
 * thousand more pods, `helm test --logs` (the chart's hook pod runs `drainguard check -A` with its own
 * ServiceAccount), and the same check from this host with a token of that ServiceAccount.
 *
 * Then both ways: every request of the webhook (`serve`, tls.mode self), the reporter and the check was
 * allowed (no 403 in the audit log), and every permission the chart grants them
 * (`kubectl auth can-i --list` as each ServiceAccount, less what every ServiceAccount may do) was used
 * by some request in the log, or is named below with why it is needed and when it is used.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCheckCommand } from '../../src/cli/check';
import type { PreInstallReport } from '../../src/check/preinstall';
import type { CheckReport, CheckResult } from '../../src/check/report';
import { rewritten, templates, VERSION } from '../support/check-pods';
import { auditedRequests, auditFlags, type AuditEvent } from '../support/cluster/audit';
import { KubeApi } from '../support/cluster/api';
import type { TestCluster } from '../support/cluster/cluster';
import { eventually, serviceAccountKubeconfig, startPrivateCluster } from '../support/cluster/lane';
import { CHART_DIR, helmBinary } from '../support/helm';
import { CLI_MAIN } from '../support/build';
import { NODE } from '../support/repo';
import { createPod, createWorkload, prepareNamespace } from './check-workloads';

const NAMESPACE = 'drainguard-system';
const SERVICE_ACCOUNTS = { webhook: 'drainguard', reporter: 'drainguard-reporter', check: 'drainguard-check' } as const;
const saUser = (account: string) => `system:serviceaccount:${NAMESPACE}:${account}`;
/** Client-certificate users of this suite; the audit log records them too. */
const USERS = { admin: 'pre-install-admin', operator: 'pre-install-operator', stranger: 'no-permissions' } as const;
const OPT_IN = { 'drainguard.io/inject': 'enabled' };
/** Pods in `bulk`, beyond its Envoy pod: more than two pages of the check's pod list (500 a page). */
const BULK_PODS = 1000;

/**
 * A permission the chart grants that no request of these tests uses, and why it is there. Every other
 * granted permission must show up in the audit log.
 */
const NEEDED_BUT_UNUSED: Record<string, string> = {
  [`${SERVICE_ACCOUNTS.reporter} get events`]:
    "the reporter reads back an Event only after a create whose answer was lost, to tell its own create from another replica's (docs/report.md); the real API server answers every create here",
  [`${SERVICE_ACCOUNTS.reporter} get namespaces`]:
    "the reporter reads a namespace its watch has not delivered yet (a termination in a namespace made a moment ago, src/report/admission-scope.ts); here every namespace is older than the pods in it",
};

const directory = mkdtempSync(join(tmpdir(), 'drainguard-check-rbac-'));
/** Where auditFlags() has kube-apiserver write its audit log. */
const auditLog = join(directory, 'audit.log');
let cluster: TestCluster;
let api: KubeApi;
const kubeconfigs: Partial<Record<keyof typeof USERS, string>> = {};

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** A command run without blocking this process, whose kubelet stand-in runs the cluster's pods. */
function run(command: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

const kubectl = (args: readonly string[]) => run('kubectl', ['--kubeconfig', cluster.info.adminKubeconfig, ...args]);
const helm = (args: readonly string[]) => run(helmBinary(), [...args, '--kubeconfig', cluster.info.adminKubeconfig]);

async function checkJson<T = CheckReport>(args: string[], kubeconfig: string): Promise<{ code: number; report: T }> {
  let stdout = '';
  const code = await runCheckCommand([...args, '--kubeconfig', kubeconfig, '-o', 'json'], { stdout: (text) => (stdout += text), env: {} });
  return { code, report: JSON.parse(stdout) as T };
}

const line = (report: { checks: CheckResult[] }, id: CheckResult['id']): CheckResult => {
  const found = report.checks.filter((check) => check.id === id);
  expect(found).toHaveLength(1);
  return found[0]!;
};

beforeAll(async () => {
  const audit = auditFlags(directory, { userGroups: [`system:serviceaccounts:${NAMESPACE}`], users: Object.values(USERS) });
  cluster = await startPrivateCluster({ apiServerArgs: audit.apiServerArgs });
  api = new KubeApi(cluster.info.adminKubeconfig);
  kubeconfigs.admin = cluster.kubeconfigFor({ user: USERS.admin, groups: ['system:masters'] });
  kubeconfigs.operator = cluster.kubeconfigFor({ user: USERS.operator });
  kubeconfigs.stranger = cluster.kubeconfigFor({ user: USERS.stranger });
}, 180_000);

afterAll(async () => {
  await cluster?.stop();
  api?.close();
  rmSync(directory, { recursive: true, force: true });
});

describe('before helm install: check --pre', () => {
  test('a cluster admin may install: the real version, matchConditions GA, the permissions asked as access reviews', async () => {
    const { code, report } = await checkJson<PreInstallReport>(['--pre'], kubeconfigs.admin!);
    const version = cluster.info.kubernetesVersion;
    expect(report.preInstall).toEqual({ release: 'drainguard', namespace: NAMESPACE, tlsMode: 'self', kubernetesVersion: version });
    expect(line(report, 'kubernetes-version')).toMatchObject({ verdict: 'pass', message: `Kubernetes 1.${version.split('.')[1]} (${version}): 1.27 or newer` });
    expect(line(report, 'match-conditions').verdict).toBe('pass');
    expect(line(report, 'webhook-name').verdict).toBe('pass');
    expect(line(report, 'install-namespace').message).toContain('does not exist yet: install with helm install --create-namespace');
    // 11 kinds in self mode, and namespaces, since the namespace does not exist.
    expect(line(report, 'permissions')).toMatchObject({ verdict: 'pass', message: expect.stringContaining('(12 asked with SelfSubjectAccessReview)') });
    expect(code).toBe(0);
  });

  test('tls.mode certManager: discovery of cert-manager.io/v1, served once its CRDs are', async () => {
    const certManager = async () => line((await checkJson<PreInstallReport>(['--pre', '--tls-mode', 'certManager'], kubeconfigs.admin!)).report, 'cert-manager');
    expect(await certManager()).toMatchObject({
      verdict: 'fail',
      message: 'tls.mode certManager: the API server does not serve cert-manager.io/v1 (no cert-manager CRDs)',
      hint: expect.stringContaining('install cert-manager'),
    });
    await createCertManagerCrd('Issuer', 'issuers');
    expect(await certManager()).toMatchObject({ verdict: 'fail', message: 'tls.mode certManager: cert-manager.io/v1 does not serve certificates' });
    await createCertManagerCrd('Certificate', 'certificates');
    expect(await certManager()).toMatchObject({ verdict: 'pass' });
  });

  test('a user who may not create everything the chart installs is told what is missing, cluster-scoped and namespaced alike', async () => {
    const rbac = '/apis/rbac.authorization.k8s.io/v1';
    // Everything but Deployments and MutatingWebhookConfigurations.
    await api.create(`${rbac}/clusterroles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: USERS.operator },
      rules: [
        { apiGroups: ['admissionregistration.k8s.io'], resources: ['mutatingwebhookconfigurations'], verbs: ['get'] },
        { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'create'] },
        { apiGroups: [''], resources: ['configmaps', 'services', 'serviceaccounts'], verbs: ['create'] },
        { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: ['create'] },
        { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['create'] },
        { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles', 'clusterrolebindings', 'roles', 'rolebindings'], verbs: ['create'] },
      ],
    });
    await api.create(`${rbac}/clusterrolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: USERS.operator },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: USERS.operator },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: USERS.operator }],
    });
    const { code, report } = await checkJson<PreInstallReport>(['--pre'], kubeconfigs.operator!);
    expect(line(report, 'permissions')).toMatchObject({
      verdict: 'fail',
      message: `you may not create deployments.apps in ${NAMESPACE}, mutatingwebhookconfigurations.admissionregistration.k8s.io: helm install would stop half-way`,
    });
    expect(code).toBe(1);
  });

  test('a refused read is reported on its line, in the API server words', async () => {
    const { report } = await checkJson<PreInstallReport>(['--pre'], kubeconfigs.stranger!);
    expect(line(report, 'webhook-name')).toMatchObject({
      verdict: 'fail',
      message:
        `MutatingWebhookConfiguration drainguard-drainguard-system: not allowed to get mutatingwebhookconfigurations.admissionregistration.k8s.io "drainguard-drainguard-system" ` +
        `(mutatingwebhookconfigurations.admissionregistration.k8s.io "drainguard-drainguard-system" is forbidden: User "${USERS.stranger}" cannot get resource "mutatingwebhookconfigurations" in API group "admissionregistration.k8s.io" at the cluster scope)`,
    });
    // Access reviews are open to every user: they are answered, each one no.
    expect(line(report, 'permissions')).toMatchObject({ verdict: 'fail', message: expect.stringMatching(/^you may not create configmaps in drainguard-system, services in drainguard-system, /) });
  });

  test('a webhook configuration of the same name that Helm did not make: check says helm install would refuse, and it does', async () => {
    const path = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';
    await api.create(path, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', metadata: { name: 'drainguard-drainguard-system' }, webhooks: [] });
    try {
      const { report } = await checkJson<PreInstallReport>(['--pre'], kubeconfigs.admin!);
      expect(line(report, 'webhook-name')).toMatchObject({
        verdict: 'fail',
        message: 'MutatingWebhookConfiguration drainguard-drainguard-system already exists and was not created by Helm: helm install would refuse to take it over',
      });
      const refused = await helm(['install', 'drainguard', CHART_DIR, '--namespace', NAMESPACE, '--create-namespace']);
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toContain('MutatingWebhookConfiguration "drainguard-drainguard-system"');
      expect(refused.stderr).toContain('invalid ownership metadata');
    } finally {
      await api.delete(`${path}/drainguard-drainguard-system`);
    }
  });
});

describe('installed, protecting Envoy, tested with helm test', () => {
  beforeAll(async () => {
    const installed = await helm(['install', 'drainguard', CHART_DIR, '--namespace', NAMESPACE, '--create-namespace', '--wait', '--timeout', '4m', '--set', 'replicaCount=1', '--set', 'report.replicaCount=1']);
    if (installed.status !== 0) throw new Error(`helm install failed:\n${installed.stderr}`);

    // The webhook replaces a Secret it cannot use (here: its CA key gone) when it starts.
    await api.patch(`/api/v1/namespaces/${NAMESPACE}/secrets/drainguard-tls`, [{ op: 'remove', path: '/data/ca.key' }], 'json');
    const restarted = await kubectl(['-n', NAMESPACE, 'rollout', 'restart', 'deployment/drainguard']);
    expect(restarted.status).toBe(0);
    const rolledOut = await kubectl(['-n', NAMESPACE, 'rollout', 'status', 'deployment/drainguard', '--timeout=180s']);
    if (rolledOut.status !== 0) throw new Error(`rollout of the webhook failed:\n${rolledOut.stderr}`);
    await eventually('the Secret complete again', async () => {
      const secret = await api.get<{ data: Record<string, string> }>(`/api/v1/namespaces/${NAMESPACE}/secrets/drainguard-tls`);
      return secret.data['ca.key'] ? true : undefined;
    });

    for (const namespace of ['edge', 'bulk']) {
      await api.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels: OPT_IN } });
      await eventually(`the default ServiceAccount of ${namespace}`, () => api.find(`/api/v1/namespaces/${namespace}/serviceaccounts/default`));
    }
    await prepareNamespace(api, 'edge');
    // Protected by the webhook: a DaemonSet whose pods are only stored, and a Deployment whose pod runs.
    await createWorkload(api, 'edge', 'DaemonSet', 'envoy', templates.contour(), { gated: true });
    await createWorkload(api, 'edge', 'Deployment', 'envoy-gw', templates.envoyGateway());
    // bulk: nginx pods no webhook is asked about (the chart's matchConditions), and one Envoy pod.
    await createPod(api, 'bulk', 'zz-envoy', templates.plainEnvoy(), { gated: true });
    const template = templates.notEnvoy();
    for (let start = 0; start < BULK_PODS; start += 25) {
      await Promise.all(
        Array.from({ length: Math.min(25, BULK_PODS - start) }, (_, offset) => createPod(api, 'bulk', `web-${String(start + offset).padStart(4, '0')}`, template, { gated: true })),
      );
    }

    // The Deployment's pod drained once (the reporter's Events), its replacement running.
    const running = await eventually('the Envoy Gateway pod running, protected', async () => {
      const pods = await api.list<{ metadata: { name: string; labels?: Record<string, string> }; status?: { phase?: string } }>(
        '/api/v1/namespaces/edge/pods?labelSelector=app.kubernetes.io%2Fname%3Denvoy',
      );
      const pod = pods.items.find((candidate) => candidate.status?.phase === 'Running');
      return pod?.metadata.labels?.['drainguard.io/protected'] === 'true' ? pod.metadata.name : undefined;
    });
    await api.delete(`/api/v1/namespaces/edge/pods/${running}`);
    await eventually("the reporter's Event for the drained pod", async () => {
      const events = await api.list<{ involvedObject: { name: string } }>('/api/v1/namespaces/edge/events?labelSelector=drainguard.io%2Fdrain-event%3Dpod');
      return events.items.some((event) => event.involvedObject.name === running) ? true : undefined;
    });
    await eventually('the drained pod gone', async () => ((await api.find(`/api/v1/namespaces/edge/pods/${running}`)) ? undefined : true));
  }, 600_000);

  test('check --pre now says drainguard is installed as this release', async () => {
    const { report } = await checkJson<PreInstallReport>(['--pre'], kubeconfigs.admin!);
    expect(line(report, 'webhook-name')).toMatchObject({
      verdict: 'fail',
      message: `MutatingWebhookConfiguration drainguard-drainguard-system exists: drainguard is already installed as release drainguard in ${NAMESPACE}`,
    });
    expect(line(report, 'install-namespace').message).toBe(`namespace ${NAMESPACE} exists`);
  });

  test('reads pods a page at a time and sees every one', async () => {
    const { report } = await checkJson(['-n', 'bulk'], kubeconfigs.admin!);
    expect(line(report, 'pod-list').message).toBe(`1 Envoy pod in 1 namespace among ${BULK_PODS + 1} pods in namespace bulk`);
    const pages = auditEvents().filter((event) => event.user.username === USERS.admin && event.verb === 'list' && event.objectRef?.resource === 'pods' && event.objectRef.namespace === 'bulk');
    const queries = pages.map((event) => new URL(event.requestURI, 'https://api').searchParams);
    expect(queries.map((query) => query.get('limit'))).toEqual(['500', '500', '500']);
    expect(queries.filter((query) => query.has('continue'))).toHaveLength(2);
  });

  let inCluster: string;
  test('helm test runs drainguard check -A in the cluster as its own ServiceAccount; --logs prints the report', async () => {
    const tested = await helm(['test', 'drainguard', '--namespace', NAMESPACE, '--logs', '--timeout', '5m']);
    expect(tested.stderr).toBe('');
    expect(tested.status).toBe(0);
    expect(tested.stdout).toMatch(/TEST SUITE: {5}drainguard-check\nLast Started: .*\nLast Completed: .*\nPhase: {10}Succeeded\n/);
    // Only the pod is a test hook: its log is printed once.
    expect(tested.stdout.match(/TEST SUITE:/g)).toHaveLength(1);
    const logs = tested.stdout.split('POD LOGS: drainguard-check\n');
    expect(logs).toHaveLength(2);
    // helm ends each pod's log with a blank line of its own.
    inCluster = logs[1]!.replace(/\n\n$/, '\n');
    expect(inCluster).toMatch(/^drainguard check: context inClusterContext \(https:\/\/[\d.]+:6443\)\n/);
    expect(inCluster).toContain(`√ Deployment ${NAMESPACE}/drainguard: 1 of 1 replicas available (drainguard ${VERSION})`);
    expect(inCluster).toContain('√ namespace edge is opted in');
    expect(inCluster).toMatch(/\n√ 4 Envoy pods in 2 namespaces among \d+ pods in all namespaces\n/);
    expect(inCluster).toMatch(/\n√ deployment\/envoy-gw in edge: last 1 drain — 1 drained, median \d+ s\n/);
    expect(inCluster).toMatch(/\nStatus: √ all \d+ checks passed, \d+ notes?\nInstallation healthy after \d+s \(1 attempt\)\n$/);
  });

  test("the same check from this host, with a token of the hook's ServiceAccount, reads the same cluster the same way", async () => {
    const kubeconfig = serviceAccountKubeconfig(NAMESPACE, SERVICE_ACCOUNTS.check, { adminKubeconfig: cluster.info.adminKubeconfig });
    const host = await run(NODE, [CLI_MAIN, 'check', '-A', '--kubeconfig', kubeconfig], { PATH: process.env.PATH ?? '', HOME: directory });
    expect(host.stderr).toBe('');
    expect(host.status).toBe(0);
    const body = (text: string) => text.split('\n').slice(1).join('\n').replace(/Installation healthy after .*\n$/, '');
    expect(body(host.stdout)).toBe(body(inCluster));
  });

  test("no request of the webhook, the reporter or the check was refused, and the check's were all reads", () => {
    const events = auditEvents();
    for (const account of Object.values(SERVICE_ACCOUNTS)) {
      const own = events.filter((event) => event.user.username === saUser(account));
      expect({ account, requests: own.length > 0 }).toEqual({ account, requests: true });
      expect({ account, refused: own.filter((event) => event.responseStatus?.code === 403).map(describeEvent) }).toEqual({ account, refused: [] });
    }
    // The reporter asks only for the pods drainguard protected (RBAC cannot narrow by label): never every pod.
    const reporterPodReads = events.filter((event) => event.user.username === saUser(SERVICE_ACCOUNTS.reporter) && event.objectRef?.resource === 'pods');
    expect(reporterPodReads.length).toBeGreaterThan(0);
    expect(reporterPodReads.filter((event) => new URL(event.requestURI, 'https://api').searchParams.get('labelSelector') !== 'drainguard.io/protected=true').map(describeEvent)).toEqual([]);
    const checkVerbs = new Set(events.filter((event) => event.user.username === saUser(SERVICE_ACCOUNTS.check)).map((event) => event.verb));
    expect([...checkVerbs].sort()).toEqual(['get', 'list']);
    // check --pre: reads, and access reviews (questions to the authorizer that store nothing).
    const pre = events.filter((event) => Object.values(USERS).includes(event.user.username as never));
    expect(pre.filter((event) => !['get', 'list'].includes(event.verb) && event.objectRef?.resource !== 'selfsubjectaccessreviews').map(describeEvent)).toEqual([]);
  });

  test('every permission the chart grants is used by a request, or named with why it is needed', async () => {
    const events = auditEvents();
    const baseline = {
      [NAMESPACE]: await grantedTo(saUser('no-such-account'), NAMESPACE),
      edge: await grantedTo(saUser('no-such-account'), 'edge'),
    };
    const unused: string[] = [];
    for (const account of Object.values(SERVICE_ACCOUNTS)) {
      const own = events.filter((event) => event.user.username === saUser(account));
      const inRelease = minus(await grantedTo(saUser(account), NAMESPACE), baseline[NAMESPACE]);
      const clusterWide = minus(await grantedTo(saUser(account), 'edge'), baseline.edge);
      const namespaced = minus(inRelease, clusterWide);
      const permissions = [...clusterWide.map((grant) => ({ grant, namespace: undefined })), ...namespaced.map((grant) => ({ grant, namespace: NAMESPACE }))];
      expect({ account, grants: permissions.length > 0 }).toEqual({ account, grants: true });
      for (const { grant, namespace } of permissions) {
        const used = own.some(
          (event) =>
            event.verb === grant.verb &&
            event.objectRef?.resource === grant.resource &&
            (event.objectRef.apiGroup ?? '') === grant.group &&
            event.objectRef.subresource === undefined &&
            (grant.name === undefined || event.objectRef.name === grant.name) &&
            (namespace === undefined || event.objectRef.namespace === namespace),
        );
        const key = `${account} ${grant.verb} ${grant.resource}${grant.group ? `.${grant.group}` : ''}`;
        if (!used && !NEEDED_BUT_UNUSED[key]) unused.push(`${key}${grant.name ? ` "${grant.name}"` : ''}${namespace ? ` in ${namespace}` : ''}`);
      }
    }
    expect(unused).toEqual([]);
  });

  test("the webhook's ServiceAccount may not list or watch pods", async () => {
    for (const verb of ['list', 'watch']) {
      const answer = await kubectl(['auth', 'can-i', verb, 'pods', '--all-namespaces', '--as', saUser(SERVICE_ACCOUNTS.webhook)]);
      expect({ verb, answer: answer.stdout.trim() }).toEqual({ verb, answer: 'no' });
    }
  });
});

async function createCertManagerCrd(kind: string, plural: string): Promise<void> {
  await api.create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.cert-manager.io` },
    spec: {
      group: 'cert-manager.io',
      scope: 'Namespaced',
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  });
  await eventually(`discovery serving ${plural}.cert-manager.io/v1`, async () => {
    const served = await api.find<{ resources: { name: string }[] }>('/apis/cert-manager.io/v1');
    return served?.resources.some((resource) => resource.name === plural) ? true : undefined;
  });
}

/** The audit log's events, one per request (a watch still open has only its ResponseStarted). */
function auditEvents(): AuditEvent[] {
  return auditedRequests(auditLog);
}

function describeEvent(event: AuditEvent): string {
  return `${event.user.username} ${event.verb} ${event.requestURI} → ${event.responseStatus?.code}`;
}

/** One verb on one resource (and name) that RBAC allows. */
interface Grant {
  verb: string;
  resource: string;
  group: string;
  name?: string;
}

/** What `kubectl auth can-i --list` says `user` may do in `namespace` (and cluster-wide), one verb and name at a time. */
async function grantedTo(user: string, namespace: string): Promise<Grant[]> {
  const listed = await kubectl(['auth', 'can-i', '--list', '--namespace', namespace, '--as', user]);
  if (listed.status !== 0) throw new Error(`kubectl auth can-i --list failed:\n${listed.stderr}`);
  const [header, ...rows] = listed.stdout.split('\n').filter((text) => text.trim() !== '');
  const column = (name: string) => header!.indexOf(name);
  const [resources, nonResource, names, verbs] = [column('Resources'), column('Non-Resource URLs'), column('Resource Names'), column('Verbs')];
  const list = (text: string) => text.trim().replace(/^\[|\]$/g, '').split(' ').filter(Boolean);
  const grants: Grant[] = [];
  for (const row of rows) {
    const resource = row.slice(resources, nonResource).trim();
    if (resource === '') continue; // a non-resource URL (/version, /healthz, …)
    const dot = resource.indexOf('.');
    const [plural, group] = dot < 0 ? [resource, ''] : [resource.slice(0, dot), resource.slice(dot + 1)];
    const resourceNames = list(row.slice(names, verbs));
    for (const verb of list(row.slice(verbs))) {
      if (resourceNames.length === 0) grants.push({ verb, resource: plural, group });
      for (const name of resourceNames) grants.push({ verb, resource: plural, group, name });
    }
  }
  return grants;
}

function minus(grants: Grant[], others: Grant[]): Grant[] {
  const key = (grant: Grant) => JSON.stringify([grant.verb, grant.resource, grant.group, grant.name ?? null]);
  const taken = new Set(others.map(key));
  return grants.filter((grant) => !taken.has(key(grant)));
}
