/**
 * The `helm test` hook (templates/tests/check.yaml): rendered by the real helm, validated against the
 * Kubernetes schemas, and its RBAC shown to be exactly what `drainguard check` needs: with only the
 * hook's rules the check passes against the API double, and without any one rule some check fails.
 * Also: the pre-install permission list (src/check/preinstall.ts) names the kinds the chart renders.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCheckCommand } from '../../../src/cli/check';
import { chartObjects, type PlannedTlsMode } from '../../../src/check/preinstall';
import type { CheckReport } from '../../../src/check/report';
import { helmBinary, renderChart, type K8sObject } from '../../support/helm';
import { KubeApiDouble, type Grant, type PolicyRule } from '../../support/kube-api-double';
import { DRAINGUARD_NAMESPACE, installDrainguard, namespace, OPT_IN, pod, replicaSet, templates, WEBHOOK_CONFIGURATION } from '../check/cluster-scenario';
import { drainedExit, envoyWorkload, finishedRecord, KubeletSimulator, rollPod, runPod, startReporters } from '../report/scenario';
import { temporaryDirectory } from '../server/webhook-test-kit';
import { validateAll } from './validate';

const CA_BUNDLE = Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n').toString('base64');
const MODES: Record<PlannedTlsMode, Record<string, string>> = {
  self: {},
  certManager: { 'tls.mode': 'certManager' },
  secret: { 'tls.mode': 'secret', 'tls.secret.name': 'my-tls', 'tls.secret.caBundle': CA_BUNDLE },
};

const isHook = (object: K8sObject) => (object.metadata.annotations as Record<string, string> | undefined)?.['helm.sh/hook'] === 'test';
const hookObjects = (set: Record<string, string> = {}) => renderChart({ set, withTests: true }).filter(isHook);

beforeAll(() => helmBinary());

test('the hook objects validate, are all test hooks, and the pod runs drainguard check as its own ServiceAccount, locked down', async () => {
  const objects = hookObjects();
  expect(objects.map((object) => object.kind).sort()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'Pod', 'Role', 'RoleBinding', 'ServiceAccount']);
  expect(await validateAll(objects)).toEqual([]);
  // helm install creates none of them.
  expect(renderChart().filter(isHook)).toEqual([]);
  const testPod = objects.find((object) => object.kind === 'Pod') as K8sObject & {
    spec: { serviceAccountName: string; restartPolicy: string; containers: { args: string[]; securityContext: Record<string, unknown> }[] };
  };
  const serviceAccount = objects.find((object) => object.kind === 'ServiceAccount')!;
  expect(testPod.spec.serviceAccountName).toBe(serviceAccount.metadata.name);
  expect(testPod.spec.serviceAccountName).not.toBe('drainguard');
  expect(testPod.spec.restartPolicy).toBe('Never');
  expect(testPod.spec.containers[0]!.args).toEqual(['check', '--all-namespaces', '--release', 'drainguard', '--drainguard-namespace', DRAINGUARD_NAMESPACE, '--wait', '120s']);
  expect(testPod.spec.containers[0]!.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: { drop: ['ALL'] } });
  // The Service selects webhook replicas by the selector labels; the test pod must not be one of them.
  const service = renderChart().find((object) => object.kind === 'Service') as K8sObject & { spec: { selector: Record<string, string> } };
  const labels = testPod.metadata.labels as Record<string, string>;
  expect(Object.entries(service.spec.selector).every(([key, value]) => labels[key] === value)).toBe(false);
});

test('fullnameOverride is passed on, and helmTest.enabled=false renders no hook; a bad wait is refused by the schema', () => {
  const named = hookObjects({ fullnameOverride: 'dg' }).find((object) => object.kind === 'Pod') as K8sObject & { spec: { containers: { args: string[] }[] } };
  expect(named.spec.containers[0]!.args).toEqual(expect.arrayContaining(['--fullname', 'dg']));
  expect(hookObjects({ 'helmTest.enabled': 'false' })).toEqual([]);
  expect(() => renderChart({ set: { 'helmTest.wait': '2m' }, withTests: true })).toThrow(/\/helmTest\/wait/);
});

/** The hook's Role and ClusterRole as the grants of the check's user. */
function grantsOf(objects: K8sObject[]): Grant[] {
  const rulesOf = (kind: string) => (objects.find((object) => object.kind === kind) as K8sObject & { rules: PolicyRule[] }).rules;
  return [{ rules: rulesOf('ClusterRole') }, { namespace: DRAINGUARD_NAMESPACE, rules: rulesOf('Role') }];
}

describe('the hook RBAC against the API double', () => {
  const directory = temporaryDirectory();
  let double: KubeApiDouble;
  let kubeconfig: string;
  beforeEach(async () => {
    double = await KubeApiDouble.start();
    await installDrainguard(double);
    double.put(namespace('projectcontour', OPT_IN));
    double.put(pod(templates.contour(), { name: 'envoy-a', namespace: 'projectcontour', owner: { kind: 'DaemonSet', name: 'envoy' }, state: 'protected' }));
    // A Deployment's pod: its owner is followed through the ReplicaSet.
    double.put(replicaSet('projectcontour', 'envoy-gw', '5f7c9d'));
    double.put(pod(templates.envoyGateway(), { name: 'envoy-gw-5f7c9d-aaaaa', namespace: 'projectcontour', owner: { kind: 'ReplicaSet', name: 'envoy-gw-5f7c9d' }, state: 'protected' }));
    // A drain the reporter turned into its Events, for the recent-drains checks to read.
    const reporters = await startReporters(double, 1, { webhookConfigName: WEBHOOK_CONFIGURATION });
    try {
      const kubelet = new KubeletSimulator(double);
      const drained = rollPod(kubelet, runPod(kubelet, envoyWorkload(double, { namespace: 'projectcontour', name: 'envoy' })), drainedExit(finishedRecord('drained')));
      await reporters.caughtUp(drained.metadata.resourceVersion!);
    } finally {
      await reporters.stop();
    }
    kubeconfig = join(directory.path, 'kubeconfig');
    writeFileSync(kubeconfig, double.kubeconfigYaml());
  });
  afterEach(() => double.close());
  afterAll(() => directory.remove());

  async function checkWith(grants: Grant[]): Promise<CheckReport> {
    double.allowOnly(grants);
    let stdout = '';
    await runCheckCommand(['-A', '--kubeconfig', kubeconfig, '-o', 'json'], { stdout: (text) => (stdout += text), env: {} });
    return JSON.parse(stdout) as CheckReport;
  }

  test('with only the hook rules every check passes; without any one of them a check fails', async () => {
    const grants = grantsOf(hookObjects());
    const full = await checkWith(grants);
    expect(full.checks.filter((check) => check.verdict === 'fail' || `${check.message} ${check.hint ?? ''}`.includes('not allowed'))).toEqual([]);
    expect(full.summary.ok).toBe(true);
    // The recent drains were read: the reporter's Deployment and the drain's Events.
    expect(full.checks.filter((check) => check.category === 'drains').map((check) => `${check.verdict} ${check.message}`)).toEqual([
      `pass reporter Deployment ${DRAINGUARD_NAMESPACE}/drainguard-reporter: 2 of 2 replicas available`,
      'pass daemonset/envoy in projectcontour: last 1 drain — 1 drained, median 14 s',
    ]);

    for (const [grantIndex, grant] of grants.entries()) {
      for (const [ruleIndex] of grant.rules.entries()) {
        const fewer = grants.map((each, index) => (index === grantIndex ? { ...each, rules: each.rules.filter((_, i) => i !== ruleIndex) } : each));
        const report = await checkWith(fewer);
        // A refused read shows on a check's line (the message, or the hint for an owner that could not be followed).
        const refused = report.checks.filter((check) => `${check.message} ${check.hint ?? ''}`.includes('not allowed to'));
        expect({ rule: grant.rules[ruleIndex], refused: refused.length > 0 }).toEqual({ rule: grant.rules[ruleIndex], refused: true });
      }
    }
  });
});

test.each(Object.keys(MODES) as PlannedTlsMode[])('check --pre asks about exactly the kinds helm install creates in %s mode', (mode) => {
  const plural = (kind: string) => (kind.endsWith('y') ? `${kind.slice(0, -1)}ies` : `${kind}s`).toLowerCase();
  const rendered = renderChart({ set: MODES[mode] }).map((object) => plural(object.kind));
  expect([...new Set(rendered)].sort()).toEqual(chartObjects(mode).map((object) => object.resource).sort());
});
