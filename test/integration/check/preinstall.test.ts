/**
 * `drainguard check --pre` against the Kubernetes API double through the real client: the Kubernetes
 * version from /version, matchConditions per release, cert-manager's API by discovery, a webhook
 * configuration of the same name, and the permissions helm install needs, asked as
 * SelfSubjectAccessReviews. Nothing is written.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCheckCommand } from '../../../src/cli/check';
import { chartObjects, kubernetesRelease, type PreInstallReport } from '../../../src/check/preinstall';
import type { CheckResult } from '../../../src/check/report';
import { KubeApiDouble } from '../../support/kube-api-double';
import { temporaryDirectory } from '../server/webhook-test-kit';
import { DRAINGUARD_NAMESPACE, installDrainguard, node, WEBHOOK_CONFIGURATION } from './cluster-scenario';

const directory = temporaryDirectory();
afterAll(() => directory.remove());
let double: KubeApiDouble;
beforeEach(async () => {
  double = await KubeApiDouble.start();
});
afterEach(async () => {
  await double.close();
});

async function pre(args: string[] = []): Promise<{ code: number; report: PreInstallReport }> {
  const kubeconfig = join(directory.path, `kubeconfig-${Math.random()}`);
  writeFileSync(kubeconfig, double.kubeconfigYaml());
  let stdout = '';
  const code = await runCheckCommand(['--pre', ...args, '--kubeconfig', kubeconfig, '-o', 'json'], { stdout: (text) => (stdout += text), env: {} });
  return { code, report: JSON.parse(stdout) as PreInstallReport };
}

const line = (report: PreInstallReport, id: CheckResult['id']) => {
  const found = report.checks.filter((check) => check.id === id);
  expect(found).toHaveLength(1);
  return found[0]!;
};

test('an empty 1.32 cluster is ready: every check passes, exit 0, and only reads and access reviews were sent', async () => {
  const { code, report } = await pre();
  expect(report.summary.ok).toBe(true);
  expect(code).toBe(0);
  expect(report.preInstall).toEqual({ release: 'drainguard', namespace: DRAINGUARD_NAMESPACE, tlsMode: 'self', kubernetesVersion: 'v1.32.0' });
  expect(line(report, 'kubernetes-version')).toMatchObject({ verdict: 'pass', message: 'Kubernetes 1.32 (v1.32.0): 1.27 or newer' });
  expect(line(report, 'match-conditions').verdict).toBe('pass');
  expect(line(report, 'webhook-name')).toMatchObject({ verdict: 'pass' });
  expect(line(report, 'install-namespace').message).toContain('does not exist yet: install with helm install --create-namespace');
  // 11 kinds in self mode, and namespaces, since the namespace does not exist.
  expect(line(report, 'permissions')).toMatchObject({ verdict: 'pass', message: expect.stringContaining('(12 asked with SelfSubjectAccessReview)') });
  const writes = double.writes();
  expect(writes.every((request) => request.path === '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews')).toBe(true);
  expect(writes).toHaveLength(12);
  expect(writes.map((request) => (request.body as { spec: { resourceAttributes: { resource: string } } }).spec.resourceAttributes.resource).sort()).toEqual(
    [...chartObjects('self').map((object) => object.resource), 'namespaces'].sort(),
  );
});

test.each([
  ['v1.26.15', 'fail', 'fail'],
  ['v1.27.16', 'pass', 'info'],
  ['v1.29.4-eks-036c24b', 'pass', 'info'],
  ['v1.30.0', 'pass', 'pass'],
])('Kubernetes %s: version %s, matchConditions %s', async (gitVersion, version, matchConditions) => {
  const minor = /^v1\.(\d+)/.exec(gitVersion)![1]!;
  double.serverVersion = { ...double.serverVersion, gitVersion, minor };
  const { code, report } = await pre();
  expect(line(report, 'kubernetes-version').verdict).toBe(version);
  if (version === 'fail') {
    expect(line(report, 'kubernetes-version').message).toBe(`Kubernetes 1.26 (${gitVersion}): drainguard needs 1.27 or newer (the chart refuses older clusters)`);
    expect(report.checks.some((check) => check.id === 'match-conditions')).toBe(false);
    expect(code).toBe(1);
  } else {
    expect(line(report, 'match-conditions').verdict).toBe(matchConditions);
    expect(code).toBe(0);
  }
  if (minor === '29') expect(line(report, 'match-conditions').message).toContain('beta');
  if (minor === '27') expect(line(report, 'match-conditions').message).toContain('alpha and off by default');
});

test('the release from major/minor when gitVersion is not MAJOR.MINOR, and "30+" as some providers write it', () => {
  expect(kubernetesRelease({ gitVersion: 'v1.30.2-gke.1', major: '1', minor: '30+' })).toEqual({ major: 1, minor: 30 });
  expect(kubernetesRelease({ gitVersion: 'unknown', major: '1', minor: '28+' })).toEqual({ major: 1, minor: 28 });
  expect(kubernetesRelease({ gitVersion: 'unknown', major: '', minor: '' })).toBeUndefined();
});

test('certManager mode without cert-manager fails with what to do; with its API served it passes', async () => {
  const without = await pre(['--tls-mode', 'certManager']);
  expect(line(without.report, 'cert-manager')).toMatchObject({
    verdict: 'fail',
    message: 'tls.mode certManager: the API server does not serve cert-manager.io/v1 (no cert-manager CRDs)',
    hint: expect.stringContaining('install cert-manager'),
  });
  expect(without.code).toBe(1);

  double.serveGroupVersion('cert-manager.io/v1', [{ name: 'issuers', kind: 'Issuer', namespaced: true }]);
  expect(line((await pre(['--tls-mode', 'certManager'])).report, 'cert-manager')).toMatchObject({ verdict: 'fail', message: expect.stringContaining('does not serve certificates') });

  double.serveGroupVersion('cert-manager.io/v1', [
    { name: 'issuers', kind: 'Issuer', namespaced: true },
    { name: 'certificates', kind: 'Certificate', namespaced: true },
  ]);
  const withIt = await pre(['--tls-mode', 'certManager']);
  expect(line(withIt.report, 'cert-manager').verdict).toBe('pass');
  expect(withIt.code).toBe(0);
  // Self mode does not need cert-manager: no line about it.
  expect((await pre()).report.checks.some((check) => check.id === 'cert-manager')).toBe(false);
});

test('a webhook configuration of the same name: already installed by this release, or something else', async () => {
  await installDrainguard(double);
  // helm install records the release on every object it creates (helm template does not).
  const stored = double.webhookConfiguration<{ metadata: { name: string; labels?: Record<string, string> }; webhooks: unknown[] }>(WEBHOOK_CONFIGURATION);
  double.putWebhookConfiguration({
    ...stored,
    metadata: {
      ...stored.metadata,
      labels: { ...stored.metadata.labels, 'app.kubernetes.io/managed-by': 'Helm' },
      annotations: { 'meta.helm.sh/release-name': 'drainguard', 'meta.helm.sh/release-namespace': DRAINGUARD_NAMESPACE },
    },
  });
  const installed = await pre();
  expect(line(installed.report, 'webhook-name')).toMatchObject({
    verdict: 'fail',
    message: `MutatingWebhookConfiguration ${WEBHOOK_CONFIGURATION} exists: drainguard is already installed as release drainguard in ${DRAINGUARD_NAMESPACE}`,
  });
  expect(line(installed.report, 'install-namespace').message).toBe(`namespace ${DRAINGUARD_NAMESPACE} exists`);

  const other = await pre(['--release', 'drainguard', '--drainguard-namespace', 'other-system']);
  expect(line(other.report, 'webhook-name').verdict).toBe('pass');

  double.putWebhookConfiguration({ metadata: { name: 'drainguard-edge-drainguard-system' }, webhooks: [] });
  const foreign = await pre(['--release', 'drainguard-edge']);
  expect(line(foreign.report, 'webhook-name')).toMatchObject({
    verdict: 'fail',
    message: 'MutatingWebhookConfiguration drainguard-edge-drainguard-system already exists and was not created by Helm: helm install would refuse to take it over',
  });
});

test('permissions the user lacks are named, cluster-scoped and namespaced alike', async () => {
  double.deny({ verb: 'create', resource: 'mutatingwebhookconfigurations' });
  double.deny({ verb: 'create', resource: 'deployments', namespace: DRAINGUARD_NAMESPACE });
  const { code, report } = await pre();
  expect(line(report, 'permissions')).toMatchObject({
    verdict: 'fail',
    message: `you may not create deployments.apps in ${DRAINGUARD_NAMESPACE}, mutatingwebhookconfigurations.admissionregistration.k8s.io: helm install would stop half-way`,
  });
  expect(code).toBe(1);
});

test('a refused read is reported on its line, in the API server words', async () => {
  double.deny({ verb: 'get', resource: 'mutatingwebhookconfigurations' });
  const { report } = await pre();
  expect(line(report, 'webhook-name')).toMatchObject({ verdict: 'fail', message: expect.stringContaining('not allowed to get mutatingwebhookconfigurations.admissionregistration.k8s.io') });
});

describe('whether the cluster can use installer.delivery: image-volume (a note: copy works everywhere)', () => {
  const onVersion = (gitVersion: string) => {
    double.serverVersion = { ...double.serverVersion, gitVersion, minor: /^v1\.(\d+)/.exec(gitVersion)![1]! };
  };

  test('Kubernetes 1.36 with nodes that all mount image volumes: it can', async () => {
    onVersion('v1.36.2');
    double.put(node('node-a', 'v1.36.2', 'containerd://2.1.4'));
    double.put(node('node-b', 'v1.36.1', 'cri-o://1.36.0'));
    const { code, report } = await pre();
    expect(line(report, 'image-volumes')).toEqual({
      category: 'pre-install',
      id: 'image-volumes',
      verdict: 'info',
      message: 'the cluster can use installer.delivery: image-volume: Kubernetes 1.36: ImageVolume GA, always on; 2 of 2 nodes can mount image volumes',
    });
    expect(report.nodes?.map((each) => [each.name, each.capability])).toEqual([
      ['node-a', 'yes'],
      ['node-b', 'yes'],
    ]);
    expect(code).toBe(0);
  });

  test('a node whose runtime cannot: only where Envoy runs elsewhere, naming it and why', async () => {
    onVersion('v1.36.2');
    double.put(node('node-a', 'v1.36.2', 'containerd://2.1.4'));
    double.put(node('node-old', 'v1.36.2', 'containerd://1.7.27'));
    expect(line((await pre()).report, 'image-volumes').message).toBe(
      'installer.delivery: image-volume only where Envoy runs on nodes that mount image volumes: Kubernetes 1.36: ImageVolume GA, always on; ' +
        '1 of 2 nodes can mount image volumes; 1 cannot (node-old); node node-old: containerd 1.7.27: image volumes need 2.1.0 or newer',
    );
  });

  test('a control plane whose API server drops image volumes by default: not for this cluster', async () => {
    onVersion('v1.34.3');
    double.put(node('node-a', 'v1.34.3', 'containerd://2.1.4'));
    const { code, report } = await pre();
    expect(line(report, 'image-volumes').message).toMatch(
      /^installer\.delivery: image-volume is not for this cluster \(copy, the default, is\): Kubernetes 1\.34: the ImageVolume feature gate is beta and off by default, and an API server with it off drops image volumes silently/,
    );
    expect(code).toBe(0);
  });
});

test('flag mistakes around --pre are usage errors', async () => {
  const refusal = (args: string[]) => runCheckCommand(args, { stdout: () => {}, env: {} }).then(() => '', (error: Error) => error.message);
  expect(await refusal(['--tls-mode', 'self'])).toContain('--tls-mode goes with --pre');
  expect(await refusal(['--pre', '--tls-mode', 'letsencrypt'])).toContain('--tls-mode must be self, certManager, secret');
  expect(await refusal(['--pre', '-A'])).toContain('drop -n/-A');
  expect(await refusal(['--pre', '--wait', '30s'])).toContain('does not go with --pre');
});
