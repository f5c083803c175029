/**
 * The `helm test` hook (templates/tests/check.yaml) and the RBAC it runs `drainguard check` with
 * (templates/check-rbac.yaml): rendered by the real helm and validated against the Kubernetes schemas.
 * Whether those rules are exactly what the check uses is judged by the real authorizer in
 * test/kube/check-rbac.test.ts. Also: the pre-install permission list (src/check/preinstall.ts) names
 * the kinds the chart renders.
 */
import { chartObjects, type PlannedTlsMode } from '../../../src/check/preinstall';
import { helmBinary, helmTestObjects, renderChart, type K8sObject } from '../../support/helm';
import { validateAll } from './validate';

const CA_BUNDLE = Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n').toString('base64');
const MODES: Record<PlannedTlsMode, Record<string, string>> = {
  self: {},
  certManager: { 'tls.mode': 'certManager' },
  secret: { 'tls.mode': 'secret', 'tls.secret.name': 'my-tls', 'tls.secret.caBundle': CA_BUNDLE },
};

const isHook = (object: K8sObject) => (object.metadata.annotations as Record<string, string> | undefined)?.['helm.sh/hook'] === 'test';
const hookObjects = (set: Record<string, string> = {}) => renderChart({ set, withTests: true }).filter(isHook);
/** The check's ServiceAccount and RBAC, which helm install creates. */
const checkRbac = (set: Record<string, string> = {}) => helmTestObjects(renderChart({ set }));

beforeAll(() => helmBinary());

test('the pod is the only test hook and runs drainguard check as its own ServiceAccount, locked down; its RBAC is installed with the release; all validate', async () => {
  const objects = hookObjects();
  expect(objects.map((object) => object.kind)).toEqual(['Pod']);
  const rbac = checkRbac();
  expect(rbac.map((object) => object.kind).sort()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'ServiceAccount']);
  expect(rbac.filter(isHook)).toEqual([]);
  expect(await validateAll([...objects, ...rbac])).toEqual([]);
  const testPod = objects[0] as K8sObject & {
    spec: { serviceAccountName: string; restartPolicy: string; containers: { args: string[]; securityContext: Record<string, unknown> }[] };
  };
  const serviceAccount = rbac.find((object) => object.kind === 'ServiceAccount')!;
  expect(testPod.spec.serviceAccountName).toBe(serviceAccount.metadata.name);
  expect(testPod.spec.serviceAccountName).not.toBe('drainguard');
  expect(testPod.spec.restartPolicy).toBe('Never');
  expect(testPod.spec.containers[0]!.args).toEqual(['check', '--all-namespaces', '--release', 'drainguard', '--drainguard-namespace', 'drainguard-system', '--wait', '120s']);
  expect(testPod.spec.containers[0]!.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: { drop: ['ALL'] } });
  // The Service selects webhook replicas by the selector labels; the test pod must not be one of them.
  const service = renderChart().find((object) => object.kind === 'Service') as K8sObject & { spec: { selector: Record<string, string> } };
  const labels = testPod.metadata.labels as Record<string, string>;
  expect(Object.entries(service.spec.selector).every(([key, value]) => labels[key] === value)).toBe(false);
});

test('fullnameOverride is passed on, and helmTest.enabled=false renders neither the hook nor its RBAC; a bad wait is refused by the schema', () => {
  const named = hookObjects({ fullnameOverride: 'dg' }).find((object) => object.kind === 'Pod') as K8sObject & { spec: { containers: { args: string[] }[] } };
  expect(named.spec.containers[0]!.args).toEqual(expect.arrayContaining(['--fullname', 'dg']));
  expect(hookObjects({ 'helmTest.enabled': 'false' })).toEqual([]);
  expect(checkRbac({ 'helmTest.enabled': 'false' })).toEqual([]);
  expect(() => renderChart({ set: { 'helmTest.wait': '2m' }, withTests: true })).toThrow(/\/helmTest\/wait/);
});

test.each(Object.keys(MODES) as PlannedTlsMode[])('check --pre asks about exactly the kinds helm install creates in %s mode', (mode) => {
  const plural = (kind: string) => (kind.endsWith('y') ? `${kind.slice(0, -1)}ies` : `${kind}s`).toLowerCase();
  const rendered = renderChart({ set: MODES[mode] }).map((object) => plural(object.kind));
  expect([...new Set(rendered)].sort()).toEqual(chartObjects(mode).map((object) => object.resource).sort());
});
