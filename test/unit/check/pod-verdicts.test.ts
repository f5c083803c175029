/**
 * How `drainguard check` judges one pod, for the states that are awkward to build in a whole cluster:
 * a drain hook the drain program refuses, Envoy keeping its own preStop, a pod being deleted, an
 * invalid drainguard annotation, a disarmed or re-armed sidecar.
 */
import { defaultConfig, type Config } from '../../../src/config';
import { assessPod, judgePod } from '../../../src/check/pods';
import type { EnvoyPodReport } from '../../../src/check/report';
import type { Container, Pod } from '../../../src/mutate';
import { runningPod as pod, templates, VERSION } from '../../support/check-pods';
import { jsonCopy } from '../../support/independent-patch';

function asPod(object: unknown): Pod {
  return object as Pod;
}

function envoyReport(target: Pod, config: Config = defaultConfig()): EnvoyPodReport {
  const assessment = assessPod(target, config, VERSION);
  if (assessment.kind !== 'envoy') throw new Error(`expected an Envoy pod, got ${JSON.stringify(assessment)}`);
  return assessment.report;
}

const container = (target: Pod, name: string) => target.spec.containers.find((c) => c.name === name) as Container;

/** Judged against this version, in copy mode (the default), with no node known. */
const JUDGED = { installedVersion: VERSION, delivery: 'copy' } as const;

test('a drain hook whose arguments the drain program refuses fails, quoting the program', () => {
  const target = asPod(pod(templates.contour(), { name: 'envoy-a', namespace: 'projectcontour', state: 'protected' }));
  const command = container(target, 'envoy').lifecycle!.preStop!.exec!.command!;
  command[command.indexOf('--admin') + 1] = 'http://10.0.0.7:9901';
  const report = envoyReport(target);
  expect(report.drainInstalled).toBe(true);
  expect(report.drain).toBeUndefined();
  expect(report.drainError).toMatch(/10\.0\.0\.7/);
  const verdict = judgePod(report, JUDGED);
  expect(verdict.verdict).toBe('fail');
  expect(verdict.message).toContain(`its preStop arguments are refused by the drain program: ${report.drainError}`);
});

test('a pod whose Envoy keeps a preStop drainguard cannot replace is not protected, status or not (half protection)', () => {
  const template = templates.plainEnvoy();
  container(template, 'proxy').lifecycle = { preStop: { exec: { command: ['/usr/local/bin/graceful-stop'] } } };
  // What an earlier drainguard wrote on such a pod: requests and probes, its status, and no drain.
  const halfProtected = jsonCopy(template);
  halfProtected.metadata = { ...halfProtected.metadata, annotations: { 'drainguard.io/status': JSON.stringify({ version: VERSION, actions: ['resource-requests', 'liveness-probe'] }) } };
  for (const shape of [template, halfProtected]) {
    const report = envoyReport(asPod(pod(shape, { name: 'edge-proxy', namespace: 'edge' })));
    expect(report).toMatchObject({ drainInstalled: false, leftWhole: expect.stringContaining('/usr/local/bin/graceful-stop') });
    const verdict = judgePod(report, JUDGED);
    expect(verdict).toMatchObject({ verdict: 'fail', hint: 'change what keeps the drain out in the pod template, then restart the workload' });
    expect(verdict.message).toMatch(/^not protected: container proxy: its preStop hook .* the drain cannot be installed, so drainguard leaves the pod whole/);
  }
});

test('a forced container whose preStop drainguard cannot replace is not protected either', () => {
  const template = templates.plainEnvoy();
  template.metadata = { ...template.metadata, annotations: { 'drainguard.io/envoy-container': 'proxy' } };
  container(template, 'proxy').lifecycle = { preStop: { httpGet: { path: '/quit', port: 9000 } } };
  const report = envoyReport(asPod(pod(template, { name: 'edge-proxy', namespace: 'edge' })));
  expect(judgePod(report, JUDGED)).toMatchObject({ verdict: 'fail', message: expect.stringMatching(/^not protected: /) });
});

test('a pod being deleted is reported, not failed', () => {
  const target = asPod(pod(templates.contour(), { name: 'envoy-b', namespace: 'projectcontour' }));
  target.metadata!.deletionTimestamp = '2026-01-01T00:00:00Z';
  const verdict = judgePod(envoyReport(target), JUDGED);
  expect(verdict.verdict).toBe('info');
  expect(verdict.message).toMatch(/^terminating; not rewritten by drainguard/);
});

test('an invalid drainguard annotation is reported with the message the webhook denies the pod with', () => {
  const template = templates.contour();
  template.metadata = { ...template.metadata, annotations: { 'drainguard.io/drain-delay': 'soon' } };
  const assessment = assessPod(asPod(pod(template, { name: 'envoy-c', namespace: 'projectcontour' })), defaultConfig(), VERSION);
  expect(assessment).toMatchObject({ kind: 'refused', namespace: 'projectcontour', name: 'envoy-c' });
  expect(assessment.kind === 'refused' && assessment.message).toMatch(/^the webhook denies this pod: .*drainguard\.io\/drain-delay/);
});

test('an opted-out pod that is not Envoy is not an Envoy pod', () => {
  const template = templates.notEnvoy();
  template.metadata = { ...template.metadata, annotations: { 'drainguard.io/inject': 'disabled' } };
  expect(assessPod(asPod(pod(template, { name: 'web', namespace: 'apps' })), defaultConfig(), VERSION)).toEqual({ kind: 'not-envoy' });
});

test('in disarm mode the sidecar still runs without its preStop, and the pod passes', () => {
  const config = { ...defaultConfig(), sidecarMode: 'disarm' as const };
  const report = envoyReport(asPod(pod(templates.contour(), { name: 'envoy-d', namespace: 'projectcontour', state: 'protected', config })), config);
  expect(report.sidecars).toEqual([{ name: 'shutdown-manager', armed: false, running: true }]);
  const verdict = judgePod(report, JUDGED);
  expect(verdict.verdict).toBe('pass');
  expect(verdict.message).toContain('sidecar shutdown-manager still runs, disarmed');
});

test('a protected pod whose sidecar got its preStop back fails', () => {
  const config = { ...defaultConfig(), sidecarMode: 'disarm' as const };
  const target = asPod(pod(templates.contour(), { name: 'envoy-e', namespace: 'projectcontour', state: 'protected', config }));
  container(target, 'shutdown-manager').lifecycle = { preStop: { exec: { command: ['/bin/contour', 'envoy', 'shutdown'] } } };
  const verdict = judgePod(envoyReport(target, config), JUDGED);
  expect(verdict).toMatchObject({ verdict: 'fail', hint: expect.stringContaining('gave the shutdown-manager back its preStop') });
});

test('a pod rewritten by the installed version passes even when this program is another version', () => {
  const target = asPod(pod(templates.contour(), { name: 'envoy-f', namespace: 'projectcontour', state: { rewrittenBy: '9.9.9' } }));
  const assessment = assessPod(target, defaultConfig(), '9.9.9');
  expect(assessment.kind === 'envoy' && assessment.report.protection).toBe('current');
});
