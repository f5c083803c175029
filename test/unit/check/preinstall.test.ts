/**
 * `drainguard check --pre`'s judgement of what the API server answered, for the answers one real
 * cluster cannot give: other Kubernetes releases than the test cluster's own, and how providers spell
 * them. The reader here answers from a table (test/kube/check-rbac.test.ts runs `--pre` against the real
 * API server: its version, discovery, access reviews and refusals).
 */
import { runCheckCommand } from '../../../src/cli/check';
import type { ClusterReader, Read, ServerVersion } from '../../../src/check/cluster';
import { chartNames } from '../../../src/check/names';
import { kubernetesRelease, runPreInstallCheck } from '../../../src/check/preinstall';

const notFound = <T>(): Promise<Read<T>> => Promise.resolve({ ok: false, reason: 'not-found', request: { verb: 'get', resource: 'x', group: '' }, message: 'not found' });

/** A cluster with nothing installed whose /version says `version`, and where every access review is allowed. */
function clusterAt(version: ServerVersion): ClusterReader {
  const unused = () => Promise.reject(new Error('check --pre does not read this'));
  return {
    server: 'https://cluster.example',
    serverVersion: () => Promise.resolve({ ok: true, value: version }),
    webhookConfiguration: notFound,
    namespace: notFound,
    servedResources: notFound,
    mayI: () => Promise.resolve({ ok: true, value: { allowed: true } }),
    deployment: unused,
    replicaSet: unused,
    service: unused,
    endpointSlices: unused,
    secret: unused,
    configMap: unused,
    eachPodPage: unused,
    drainEvents: unused,
    nodes: () => Promise.resolve({ ok: true, value: [] }),
  };
}

const names = chartNames('drainguard', 'drainguard-system');

test.each([
  ['v1.26.15', 'fail', undefined],
  ['v1.27.16', 'pass', 'info'],
  ['v1.29.4-eks-036c24b', 'pass', 'info'],
  ['v1.30.0', 'pass', 'pass'],
])('Kubernetes %s: version %s, matchConditions %s', async (gitVersion, version, matchConditions) => {
  const minor = /^v1\.(\d+)/.exec(gitVersion)![1]!;
  const report = await runPreInstallCheck(clusterAt({ gitVersion, major: '1', minor }), { names, tlsMode: 'self' });
  const line = (id: string) => report.checks.find((check) => check.id === id);
  expect(line('kubernetes-version')?.verdict).toBe(version);
  expect(line('match-conditions')?.verdict).toBe(matchConditions);
  expect(report.summary.ok).toBe(version === 'pass');
  if (version === 'fail') {
    expect(line('kubernetes-version')?.message).toBe(`Kubernetes 1.26 (${gitVersion}): drainguard needs 1.27 or newer (the chart refuses older clusters)`);
  }
  if (minor === '29') expect(line('match-conditions')?.message).toContain('beta');
  if (minor === '27') expect(line('match-conditions')?.message).toContain('alpha and off by default');
});

test('the release from major/minor when gitVersion is not MAJOR.MINOR, and "30+" as some providers write it', () => {
  expect(kubernetesRelease({ gitVersion: 'v1.30.2-gke.1', major: '1', minor: '30+' })).toEqual({ major: 1, minor: 30 });
  expect(kubernetesRelease({ gitVersion: 'unknown', major: '1', minor: '28+' })).toEqual({ major: 1, minor: 28 });
  expect(kubernetesRelease({ gitVersion: 'unknown', major: '', minor: '' })).toBeUndefined();
});

test('flag mistakes around --pre are usage errors', async () => {
  const refusal = (args: string[]) => runCheckCommand(args, { stdout: () => {}, env: {} }).then(() => '', (error: Error) => error.message);
  expect(await refusal(['--tls-mode', 'self'])).toContain('--tls-mode goes with --pre');
  expect(await refusal(['--pre', '--tls-mode', 'letsencrypt'])).toContain('--tls-mode must be self, certManager, secret');
  expect(await refusal(['--pre', '-A'])).toContain('drop -n/-A');
  expect(await refusal(['--pre', '--wait', '30s'])).toContain('does not go with --pre');
});
