/**
 * `drainguard check` against the Kubernetes API double, through the real @kubernetes/client-node over
 * HTTPS and the command's own kubeconfig loading: each check's verdict, the fixes, the exit code, and
 * that nothing was written.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultConfig } from '../../../src/config';
import { mutate, type MutationResult } from '../../../src/mutate';
import { runCheckCommand } from '../../../src/cli/check';
import { InputError, UsageError } from '../../../src/cli/errors';
import type { CheckReport, CheckResult } from '../../../src/check/report';
import { KubeApiDouble, type RecordedRequest } from '../../support/kube-api-double';
import { temporaryDirectory } from '../server/webhook-test-kit';
import {
  DRAINGUARD_NAMESPACE,
  endpointSlice,
  installDrainguard,
  namespace,
  OPT_IN,
  pod,
  replaceCaBundle,
  replicaSet,
  templates,
  VERSION,
  WEBHOOK_CONFIGURATION,
} from './cluster-scenario';

const DAY_MS = 24 * 60 * 60 * 1000;
const directory = temporaryDirectory();
afterAll(() => directory.remove());

let double: KubeApiDouble;
beforeEach(async () => {
  double = await KubeApiDouble.start();
});
afterEach(async () => {
  await double.close();
});

/** Contour in an opted-in namespace (one pod of each kind), Envoy Gateway in one that is not, and bystanders. */
function putMixedPods(): void {
  double.put(namespace('projectcontour', OPT_IN));
  const envoy = { kind: 'DaemonSet', name: 'envoy' } as const;
  double.put(pod(templates.contour(), { name: 'envoy-protected', namespace: 'projectcontour', owner: envoy, state: 'protected' }));
  double.put(pod(templates.contour(), { name: 'envoy-stale', namespace: 'projectcontour', owner: envoy, state: { rewrittenBy: '0.0.9' } }));
  double.put(pod(templates.contour(), { name: 'envoy-unprotected', namespace: 'projectcontour', owner: envoy }));

  double.put(namespace('gateway'));
  double.put(replicaSet('gateway', 'envoy-gw', '5f7c9d'));
  const gatewayOwner = { kind: 'ReplicaSet', name: 'envoy-gw-5f7c9d' } as const;
  double.put(pod(templates.envoyGateway(), { name: 'envoy-gw-5f7c9d-aaaaa', namespace: 'gateway', owner: gatewayOwner }));
  double.put(pod(templates.envoyGateway(), { name: 'envoy-gw-5f7c9d-bbbbb', namespace: 'gateway', owner: gatewayOwner }));

  double.put(namespace('apps'));
  double.put(pod(templates.notEnvoy(), { name: 'web', namespace: 'apps' }));
  const optedOut = templates.plainEnvoy();
  optedOut.metadata = { ...optedOut.metadata, annotations: { 'drainguard.io/inject': 'disabled' } };
  double.put(pod(optedOut, { name: 'edge-proxy', namespace: 'apps' }));
}

interface CheckRun {
  code: number;
  report: CheckReport;
  /** Requests the check made (not the ones that set the scene). */
  requests: RecordedRequest[];
}

async function check(args: string[]): Promise<CheckRun> {
  const kubeconfig = join(directory.path, `kubeconfig-${Date.now()}-${Math.random()}`);
  writeFileSync(kubeconfig, double.kubeconfigYaml());
  const before = double.requests.length;
  let stdout = '';
  const code = await runCheckCommand([...args, '--kubeconfig', kubeconfig, '-o', 'json'], { stdout: (text) => (stdout += text), env: {} });
  return { code, report: JSON.parse(stdout) as CheckReport, requests: double.requests.slice(before) };
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
  const found = report.checks.filter((result) => result.id === 'pod' && (result.pod?.name === name || result.message.includes(`/${name}:`)));
  expect(found).toHaveLength(1);
  return found[0]!;
}

function timelineOf(result: MutationResult) {
  if (result.status !== 'mutated') throw new Error(`expected a mutated result, got ${result.status}`);
  return result.timeline;
}

describe('a healthy installation with protected, stale, unprotected, opted-out and non-Envoy pods', () => {
  beforeEach(async () => {
    await installDrainguard(double);
    putMixedPods();
  });

  it('passes every installation check and reports the failure policy', async () => {
    const { report } = await check(['-A']);
    expect(only(report, 'webhook-configuration')).toMatchObject({ verdict: 'pass', message: expect.stringContaining(WEBHOOK_CONFIGURATION) });
    expect(only(report, 'webhook-policy')).toMatchObject({ verdict: 'info', message: expect.stringContaining('failurePolicy Ignore') });
    expect(only(report, 'webhook-policy').message).toContain('timeoutSeconds 3');
    expect(only(report, 'ca-bundle')).toMatchObject({ verdict: 'pass', message: expect.stringMatching(/1 CA certificate, the newest valid until .* \(36[45] days\)/) });
    expect(only(report, 'ca-bundle-secret')).toMatchObject({ verdict: 'pass', message: `self mode: caBundle contains the CA in Secret ${DRAINGUARD_NAMESPACE}/drainguard-tls` });
    expect(only(report, 'service-endpoints')).toMatchObject({ verdict: 'pass', message: `Service ${DRAINGUARD_NAMESPACE}/drainguard has 2 ready endpoints (EndpointSlices)` });
    expect(only(report, 'deployment')).toMatchObject({ verdict: 'pass', message: `Deployment ${DRAINGUARD_NAMESPACE}/drainguard: 2 of 2 replicas available (drainguard ${VERSION})` });
    expect(only(report, 'configuration')).toMatchObject({ verdict: 'pass' });
    expect(report.installation).toEqual({
      release: 'drainguard',
      namespace: DRAINGUARD_NAMESPACE,
      webhookConfiguration: WEBHOOK_CONFIGURATION,
      version: VERSION,
      versionSource: 'deployment',
    });
  });

  it('judges each namespace holding Envoy pods by the webhook namespaceSelector', async () => {
    const { report } = await check(['-A']);
    const namespaces = verdicts(report, 'namespace');
    expect(namespaces.map((line) => [line.verdict, line.message])).toEqual([
      ['fail', 'namespace gateway is not opted in: it lacks drainguard.io/inject=enabled (2 Envoy pods)'],
      [
        'pass',
        'namespace projectcontour is opted in (drainguard.io/inject=enabled, kubernetes.io/metadata.name NotIn (drainguard-system, kube-system)): 3 Envoy pods',
      ],
    ]);
    expect(namespaces[0]!.hint).toContain('kubectl label namespace gateway drainguard.io/inject=enabled');
  });

  it('tells protected, stale, unprotected and opted-out Envoy pods apart, with their drain settings', async () => {
    const { report } = await check(['-A']);
    expect(only(report, 'pod-list')).toMatchObject({ verdict: 'pass', message: '6 Envoy pods in 3 namespaces among 7 pods in all namespaces' });

    const expected = timelineOf(mutate(templates.contour(), defaultConfig()));
    const protectedPod = podLine(report, 'envoy-protected');
    expect(protectedPod.verdict).toBe('pass');
    expect(protectedPod.pod).toMatchObject({
      protection: 'current',
      drainguardVersion: VERSION,
      envoyContainer: 'envoy',
      drainInstalled: true,
      sidecars: [],
      owner: { kind: 'DaemonSet', name: 'envoy', namespace: 'projectcontour' },
      drain: {
        admin: expected.adminAddress,
        deadlineSeconds: expected.deadlineSeconds,
        drainDelaySeconds: expected.drainDelaySeconds,
        minDrainSeconds: expected.minDrainSeconds,
        minConnections: expected.minConnections,
      },
    });
    expect(protectedPod.message).toContain(`protected by drainguard ${VERSION}; drain: admin ${expected.adminAddress}, deadline ${expected.deadlineSeconds}s`);

    const stale = podLine(report, 'envoy-stale');
    expect(stale).toMatchObject({ verdict: 'fail', pod: { protection: 'other-version', drainguardVersion: '0.0.9', drainInstalled: true } });
    expect(stale.message).toContain(`rewritten by drainguard 0.0.9, not by the installed ${VERSION}`);

    const unprotected = podLine(report, 'envoy-unprotected');
    expect(unprotected).toMatchObject({
      verdict: 'fail',
      pod: { protection: 'none', drainInstalled: false, sidecars: [{ name: 'shutdown-manager', armed: true, running: true }] },
    });
    expect(unprotected.message).toBe(
      'projectcontour/envoy-unprotected: not rewritten by drainguard; sidecar shutdown-manager still runs with its preStop (a sidecar restart drains Envoy)',
    );

    for (const name of ['envoy-gw-5f7c9d-aaaaa', 'envoy-gw-5f7c9d-bbbbb']) {
      expect(podLine(report, name)).toMatchObject({
        verdict: 'fail',
        pod: { protection: 'none', owner: { kind: 'Deployment', name: 'envoy-gw', namespace: 'gateway' } },
      });
    }
    expect(podLine(report, 'edge-proxy')).toMatchObject({ verdict: 'info', pod: { protection: 'opted-out', envoyContainer: 'proxy' } });
    // nginx is not an Envoy pod: the core skipped it as `not-envoy`, so it has no line.
    expect(report.checks.some((line) => line.message.includes('apps/web'))).toBe(false);
  });

  it('groups the unprotected pods by workload with the commands that fix them, and exits 1', async () => {
    const { code, report } = await check(['-A']);
    expect(report.fixes).toEqual([
      {
        workload: { kind: 'Deployment', name: 'envoy-gw', namespace: 'gateway' },
        pods: ['envoy-gw-5f7c9d-aaaaa', 'envoy-gw-5f7c9d-bbbbb'],
        why: '2 pods not rewritten by drainguard',
        commands: ['kubectl label namespace gateway drainguard.io/inject=enabled', 'kubectl -n gateway rollout restart deployment/envoy-gw'],
      },
      {
        workload: { kind: 'DaemonSet', name: 'envoy', namespace: 'projectcontour' },
        pods: ['envoy-stale', 'envoy-unprotected'],
        why: '1 pod not rewritten by drainguard, 1 pod rewritten by drainguard 0.0.9',
        commands: ['kubectl -n projectcontour rollout restart daemonset/envoy'],
      },
    ]);
    // The double has no nodes: in copy mode there is nothing to say about image volumes.
    expect(verdicts(report, 'image-volumes')).toEqual([]);
    expect(report.nodes).toEqual([]);
    expect(report.summary).toEqual({ passed: 10, failed: 5, info: 3, ok: false });
    expect(code).toBe(1);
  });

  it('only reads: every request is a GET', async () => {
    const { requests } = await check(['-A']);
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.filter((request) => request.method !== 'GET')).toEqual([]);
  });

  it("limits pods to the context's namespace by default, and to -n", async () => {
    const byDefault = await check([]);
    expect(byDefault.report.scope).toEqual({ allNamespaces: false, namespace: 'default' });
    expect(only(byDefault.report, 'pod-list')).toMatchObject({ verdict: 'info', message: 'no Envoy pods among 0 pods in namespace default (-A checks every namespace)' });
    expect(byDefault.code).toBe(0);

    const gateway = await check(['-n', 'gateway']);
    expect(gateway.report.checks.filter((line) => line.id === 'pod').map((line) => line.pod?.namespace)).toEqual(['gateway', 'gateway']);
    expect(gateway.requests.some((request) => request.path === '/api/v1/namespaces/gateway/pods')).toBe(true);
    expect(gateway.requests.some((request) => request.path === '/api/v1/pods')).toBe(false);
  });
});

describe('a cluster where every Envoy pod is protected', () => {
  it('passes every check and exits 0', async () => {
    await installDrainguard(double);
    double.put(namespace('projectcontour', OPT_IN));
    for (const name of ['envoy-a', 'envoy-b']) {
      double.put(pod(templates.contour(), { name, namespace: 'projectcontour', owner: { kind: 'DaemonSet', name: 'envoy' }, state: 'protected' }));
    }
    const { code, report } = await check(['-A']);
    expect(report.checks.filter((line) => line.verdict === 'fail')).toEqual([]);
    expect(report.fixes).toEqual([]);
    expect(report.summary.ok).toBe(true);
    expect(code).toBe(0);
  });
});

describe('the installation broken one way at a time', () => {
  beforeEach(async () => {
    await installDrainguard(double);
    putMixedPods();
  });

  it('an expired caBundle fails, and so does its agreement with the Secret', async () => {
    replaceCaBundle(double, new Date(Date.now() - 400 * DAY_MS), 365);
    const { code, report } = await check(['-A']);
    const bundle = only(report, 'ca-bundle');
    expect(bundle.verdict).toBe('fail');
    expect(bundle.message).toMatch(/^caBundle of webhook pods\.drainguard\.io has expired: 1 CA certificate, the newest expired at /);
    expect(bundle.hint).toContain(`kubectl -n ${DRAINGUARD_NAMESPACE} rollout restart deployment/drainguard`);
    expect(only(report, 'ca-bundle-secret')).toMatchObject({ verdict: 'fail', message: expect.stringContaining('does not contain the CA in Secret drainguard-system/drainguard-tls') });
    expect(code).toBe(1);
  });

  it('a caBundle expiring within 30 days fails', async () => {
    replaceCaBundle(double, new Date(), 10);
    const { report } = await check(['-A']);
    expect(only(report, 'ca-bundle')).toMatchObject({ verdict: 'fail', message: expect.stringMatching(/expires soon: .*\((9|10) days left, fewer than 30\)$/) });
  });

  it('a missing webhook configuration fails, and namespaces are judged by the chart default label', async () => {
    double.putWebhookConfiguration({ metadata: { name: 'unrelated' }, webhooks: [] });
    const { code, report } = await check(['-A', '--release', 'other']);
    expect(only(report, 'webhook-configuration')).toMatchObject({
      verdict: 'fail',
      message: 'MutatingWebhookConfiguration other-drainguard-drainguard-system not found',
      hint: expect.stringContaining('pass --release/--drainguard-namespace'),
    });
    expect(verdicts(report, 'ca-bundle')).toEqual([]);
    expect(only(report, 'service-endpoints')).toMatchObject({ verdict: 'fail', message: 'Service drainguard-system/other-drainguard not found' });
    const projectcontour = verdicts(report, 'namespace').find((line) => line.message.includes('projectcontour'));
    expect(projectcontour).toMatchObject({ verdict: 'pass', message: expect.stringContaining("judged by the chart's default label") });
    expect(code).toBe(1);
  });

  it('a Service without ready endpoints and a Deployment short of replicas fail', async () => {
    double.put(endpointSlice([{ ip: '10.0.0.11', ready: false }]));
    const deployment = double.get('deployments', DRAINGUARD_NAMESPACE, 'drainguard')!;
    double.put({ ...deployment, status: { ...(deployment.status as object), availableReplicas: 1, readyReplicas: 1 } });
    const { report } = await check(['-A']);
    expect(only(report, 'service-endpoints')).toMatchObject({
      verdict: 'fail',
      message: 'Service drainguard-system/drainguard has no ready endpoints (EndpointSlices: 1 endpoint, none ready): the API server cannot reach the webhook',
    });
    expect(only(report, 'deployment')).toMatchObject({ verdict: 'fail', message: `Deployment drainguard-system/drainguard: 1 of 2 replicas available (drainguard ${VERSION})` });
  });
});

describe('reads RBAC forbids', () => {
  beforeEach(async () => {
    await installDrainguard(double);
    putMixedPods();
  });

  it('a forbidden pod list fails its check naming the verb, resource and scope, and the other checks still run', async () => {
    double.deny({ verb: 'list', resource: 'pods' });
    const { code, report } = await check(['-A']);
    expect(only(report, 'pod-list')).toMatchObject({
      verdict: 'fail',
      message:
        'pods in all namespaces: not allowed to list pods in all namespaces (pods is forbidden: User "test-operator" cannot list resource "pods" in API group "" at the cluster scope)',
    });
    expect(only(report, 'webhook-configuration').verdict).toBe('pass');
    expect(code).toBe(1);
  });

  it('a pod list forbidden in one namespace names that namespace', async () => {
    double.deny({ verb: 'list', resource: 'pods', namespace: 'gateway' });
    const { report } = await check(['-n', 'gateway']);
    expect(only(report, 'pod-list').message).toBe(
      'pods in namespace gateway: not allowed to list pods in namespace "gateway" (pods is forbidden: User "test-operator" cannot list resource "pods" in API group "" in the namespace "gateway")',
    );
  });

  it("a forbidden Secret read fails the self-mode comparison, naming the Secret", async () => {
    double.deny({ verb: 'get', resource: 'secrets', namespace: DRAINGUARD_NAMESPACE });
    const { report } = await check(['-A']);
    expect(only(report, 'ca-bundle-secret')).toMatchObject({
      verdict: 'fail',
      message: expect.stringContaining(
        'self mode: Secret drainguard-system/drainguard-tls: not allowed to get secrets "drainguard-tls" in namespace "drainguard-system" (secrets "drainguard-tls" is forbidden: User "test-operator" cannot get resource "secrets" in API group "" in the namespace "drainguard-system")',
      ),
    });
  });

  it('a forbidden ReplicaSet read leaves the pods grouped by ReplicaSet, with a hint saying why', async () => {
    double.deny({ verb: 'get', resource: 'replicasets' });
    const { report } = await check(['-n', 'gateway']);
    const line = podLine(report, 'envoy-gw-5f7c9d-aaaaa');
    expect(line.pod?.owner).toEqual({ kind: 'ReplicaSet', name: 'envoy-gw-5f7c9d', namespace: 'gateway' });
    expect(line.hint).toContain('not allowed to get replicasets.apps "envoy-gw-5f7c9d" in namespace "gateway"');
    expect(report.fixes).toEqual([
      expect.objectContaining({
        workload: { kind: 'ReplicaSet', name: 'envoy-gw-5f7c9d', namespace: 'gateway' },
        commands: [
          'kubectl label namespace gateway drainguard.io/inject=enabled',
          'kubectl -n gateway delete pod envoy-gw-5f7c9d-aaaaa envoy-gw-5f7c9d-bbbbb',
        ],
      }),
    ]);
  });
});

describe('Envoy pods are recognised by the webhook configuration in the cluster', () => {
  it('a custom envoyImageRepositories in the chart makes a pod an Envoy pod, and the default does not', async () => {
    const custom = templates.notEnvoy();
    custom.spec.containers[0]!.image = 'registry.example.com/acme/edge-proxy:1.0';
    const seed = async (set: Record<string, string>) => {
      await installDrainguard(double, { set });
      double.put(namespace('edge', OPT_IN));
      double.put(pod(custom, { name: 'acme-edge', namespace: 'edge' }));
    };
    await seed({ 'config.envoyImageRepositories': '{acme/edge-proxy}' });
    const { report } = await check(['-n', 'edge']);
    expect(only(report, 'configuration').verdict).toBe('pass');
    expect(podLine(report, 'acme-edge').pod).toMatchObject({ protection: 'none', envoyContainer: custom.spec.containers[0]!.name });

    await double.close();
    double = await KubeApiDouble.start();
    await seed({});
    const withDefaults = await check(['-n', 'edge']);
    expect(withDefaults.report.checks.filter((line) => line.id === 'pod')).toEqual([]);
  });
});

describe("pods the webhook's selectors keep away from it, and pods without a controller", () => {
  it('says why restarting would not help instead of printing a restart', async () => {
    await installDrainguard(double, { set: { 'webhook.objectSelector.matchLabels.app': 'envoy', 'webhook.excludedNamespaces': '{legacy}' } });
    double.put(namespace('legacy', OPT_IN));
    double.put(pod(templates.contour(), { name: 'envoy-old', namespace: 'legacy', owner: { kind: 'DaemonSet', name: 'envoy' } }));
    double.put(namespace('gateway', OPT_IN));
    double.put(pod(templates.envoyGateway(), { name: 'envoy-gw-1', namespace: 'gateway', owner: { kind: 'StatefulSet', name: 'envoy-gw' } }));
    double.put(namespace('projectcontour', OPT_IN));
    double.put(pod(templates.contour(), { name: 'envoy-by-hand', namespace: 'projectcontour' }));

    const { report } = await check(['-A']);
    const legacy = verdicts(report, 'namespace').find((line) => line.message.startsWith('namespace legacy '));
    expect(legacy).toMatchObject({
      verdict: 'fail',
      message: "namespace legacy is excluded by the webhook's namespaceSelector (kubernetes.io/metadata.name NotIn (drainguard-system, legacy)): 1 Envoy pod drainguard never rewrites",
    });
    expect(report.fixes).toEqual([
      {
        workload: { kind: 'StatefulSet', name: 'envoy-gw', namespace: 'gateway' },
        pods: ['envoy-gw-1'],
        why: '1 pod not rewritten by drainguard',
        commands: [],
        note: "the webhook's objectSelector does not select these pods' labels: change webhook.objectSelector, then restart the workload",
      },
      {
        workload: { kind: 'DaemonSet', name: 'envoy', namespace: 'legacy' },
        pods: ['envoy-old'],
        why: '1 pod not rewritten by drainguard',
        commands: [],
        note: "namespace legacy is excluded by the webhook's namespaceSelector (kubernetes.io/metadata.name NotIn (drainguard-system, legacy)): drainguard never rewrites pods there",
      },
      {
        workload: { kind: 'Pod', name: 'envoy-by-hand', namespace: 'projectcontour' },
        pods: ['envoy-by-hand'],
        why: '1 pod not rewritten by drainguard',
        commands: [],
        note: 'no controller owns it: delete it and create it again from its manifest',
      },
    ]);
  });
});

describe('large clusters', () => {
  it('reads pods a page at a time and sees every one', async () => {
    await installDrainguard(double);
    double.put(namespace('projectcontour', OPT_IN));
    for (let i = 0; i < 1203; i++) double.put(pod(templates.notEnvoy(), { name: `web-${String(i).padStart(4, '0')}`, namespace: 'projectcontour' }));
    double.put(pod(templates.contour(), { name: 'zz-envoy', namespace: 'projectcontour', owner: { kind: 'DaemonSet', name: 'envoy' }, state: 'protected' }));
    const { report, requests } = await check(['-n', 'projectcontour']);
    const pages = requests.filter((request) => request.path === '/api/v1/namespaces/projectcontour/pods');
    expect(pages.map((page) => new URLSearchParams(page.query).get('limit'))).toEqual(['500', '500', '500']);
    expect(pages.filter((page) => new URLSearchParams(page.query).has('continue'))).toHaveLength(2);
    expect(only(report, 'pod-list').message).toBe('1 Envoy pod in 1 namespace among 1204 pods in namespace projectcontour');
    expect(podLine(report, 'zz-envoy').verdict).toBe('pass');
  });
});

describe('errors that stop the check', () => {
  it('credentials the API server rejects end the run with a message, not a report', async () => {
    const kubeconfig = join(directory.path, 'wrong-token');
    writeFileSync(kubeconfig, double.kubeconfigYaml().replace(/"token":"[^"]+"/, '"token":"wrong"'));
    const run = runCheckCommand(['--kubeconfig', kubeconfig], { stdout: () => undefined, env: {} });
    await expect(run).rejects.toThrow(InputError);
    await expect(run).rejects.toThrow(/rejected the credentials \(401 Unauthorized\) on get mutatingwebhookconfigurations/);
  });

  it('an API server that never answers ends the run at --request-timeout instead of hanging', async () => {
    const kubeconfig = join(directory.path, 'silent');
    writeFileSync(kubeconfig, double.kubeconfigYaml());
    const held = double.hold('GET', /mutatingwebhookconfigurations/);
    try {
      const run = runCheckCommand(['--kubeconfig', kubeconfig, '--request-timeout', '300ms'], { stdout: () => undefined, env: {} });
      await expect(run).rejects.toThrow(InputError);
      await expect(run).rejects.toThrow(
        `drainguard check: the API server at ${double.url} did not answer get mutatingwebhookconfigurations.admissionregistration.k8s.io "drainguard-drainguard-system" within 0.3s (--request-timeout)`,
      );
    } finally {
      held.release();
    }
  });

  it('an unknown --context names the contexts there are', async () => {
    const kubeconfig = join(directory.path, 'one-context');
    writeFileSync(kubeconfig, double.kubeconfigYaml());
    await expect(runCheckCommand(['--kubeconfig', kubeconfig, '--context', 'prod'], { stdout: () => undefined, env: {} })).rejects.toThrow(
      'drainguard check: context "prod" does not exist in ' + kubeconfig + ' (contexts: double)',
    );
  });

  it('flag mistakes are usage errors', async () => {
    const run = (args: string[]) => runCheckCommand(args, { stdout: () => undefined, env: {} });
    await expect(run(['-n', 'a', '-A'])).rejects.toThrow(UsageError);
    await expect(run(['-o', 'yaml'])).rejects.toThrow('-o/--output must be text or json, not "yaml"');
    await expect(run(['--request-timeout', '0s'])).rejects.toThrow('--request-timeout must be a duration');
    await expect(run(['--drainguard-namespace', 'Bad_Name'])).rejects.toThrow('is not a valid name');
  });
});
