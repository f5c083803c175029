/**
 * Re-invocation (reinvocationPolicy IfNeeded): the API server calls drainguard again only after a
 * later webhook changed the pod, which then already carries drainguard's status annotation. drainguard
 * converges: what a later webhook undid is restored, and a pod where everything holds gets zero
 * operations.
 */
import { defaultConfig, DRAIN_SETTING_DEFAULTS } from '../../../src/config';
import { mutate, type Container, type Pod } from '../../../src/mutate';
import { VERSION } from '../../../src/version';
import { applyIndependently, configWith, container, drainArgs, hasContainer, loadPod, mutateOk, withAnnotations } from './support';

const STATUS = 'drainguard.io/status';

/** Contour's pod after drainguard's first pass, as a later webhook receives it. */
function injected(): { first: Pod; hook: Container['lifecycle'] } {
  const { after } = mutateOk(loadPod('contour-main.yaml'));
  return { first: after, hook: container(after, 'envoy').lifecycle };
}

function copy(pod: Pod): Pod {
  return JSON.parse(JSON.stringify(pod)) as Pod;
}

/**
 * The restored hook is the first one, except for what only the removed sidecar showed: Contour's own
 * defaults (no --check-delay, a 5 s poll) went with it and with the replaced hook, so drainguard's
 * own defaults apply to those two (nothing in the configuration sets them here) (docs/design.md, "The status annotation and re-invocation").
 */
function expectRestored(restored: Container['lifecycle'], hook: Container['lifecycle']): void {
  const config = DRAIN_SETTING_DEFAULTS;
  const expected = (hook?.preStop?.exec?.command ?? []).map((word, index, all) =>
    all[index - 1] === '--min-drain' ? `${config.minDrainSeconds}s` : all[index - 1] === '--poll-interval' ? `${config.pollIntervalSeconds}s` : word,
  );
  expect(restored).toEqual({ preStop: { exec: { command: expected } } });
}

test('everything still holds: zero operations, unchanged', () => {
  const { first } = injected();
  const again = mutate(first, defaultConfig());
  expect(again).toMatchObject({ status: 'unchanged', patch: [] });
});

/**
 * drainguard's result as kube-apiserver stores it (test/kube/admission-fixtures.test.ts shows it on the
 * real server): defaulting filled in fields inside what drainguard wrote, and a pod that came with the
 * installer already (inject's output applied) had the ServiceAccount token mounted into it too.
 */
function asStoredByApiServer(pod: Pod): Pod {
  const stored = copy(pod);
  const token = 'kube-api-access-x7k2q';
  stored.spec.volumes = [...(stored.spec.volumes ?? []), { name: token, projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } }];
  for (const each of [...stored.spec.containers, ...(stored.spec.initContainers ?? [])]) {
    each.terminationMessagePath = '/dev/termination-log';
    each.terminationMessagePolicy = 'File';
    each.volumeMounts = [...(each.volumeMounts ?? []), { name: token, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }];
    for (const probe of [each.livenessProbe, each.readinessProbe, each.startupProbe]) if (probe?.httpGet) probe.httpGet.scheme = 'HTTP';
  }
  return stored;
}

test('everything still holds as the API server stored it (defaulted fields, the token mounted into the installer): zero operations, and the probes are still drainguard\'s', () => {
  const { first } = injected();
  const again = mutate(asStoredByApiServer(first), defaultConfig());
  expect(again).toMatchObject({ status: 'unchanged', patch: [] });
  expect(again.status === 'unchanged' && again.timeline).toMatchObject({ livenessSource: 'drainguard', startupSource: 'drainguard' });
});

test('an installer another drainguard changed (its image) is replaced whole, whatever the API server added to it', () => {
  const { first } = injected();
  const stored = asStoredByApiServer(first);
  container(stored, 'drainguard-install').image = 'ghcr.io/drainguard/drainguard:0.0.9';
  const result = mutate(stored, defaultConfig());
  expect(result.status).toBe('mutated');
  expect(container(applyIndependently(stored, result.patch), 'drainguard-install')).toEqual(container(first, 'drainguard-install'));
});

test('a preStop that replaced the drain is replaced back, with a warning naming what replaced it', () => {
  const { first, hook } = injected();
  const later = copy(first);
  container(later, 'envoy').lifecycle = { preStop: { exec: { command: ['/bin/sh', '-c', 'sleep 5'] } } };
  const result = mutate(later, defaultConfig());
  expect(result.status).toBe('mutated');
  const after = applyIndependently(later, result.patch);
  expectRestored(container(after, 'envoy').lifecycle, hook);
  expect(result.warnings).toContainEqual(expect.stringMatching(/container envoy: drainguard's drain preStop.* was replaced by exec \["\/bin\/sh","-c","sleep 5"\].*restored/));
  // The status already records the preStop: only the hook is written.
  expect(result.patch.map((op) => op.path)).toEqual(['/spec/containers/0/lifecycle/preStop']);
});

test('a preStop of another kind that replaced the drain (an httpGet) is replaced back too', () => {
  const { first, hook } = injected();
  const later = copy(first);
  container(later, 'envoy').lifecycle = { preStop: { httpGet: { path: '/quit', port: 9000 } } };
  const result = mutate(later, defaultConfig());
  expectRestored(container(applyIndependently(later, result.patch), 'envoy').lifecycle, hook);
  expect(result.warnings).toContainEqual(expect.stringContaining('was replaced by httpGet /quit :9000'));
});

test('a preStop removed after the drain was installed is restored, with a warning', () => {
  const { first, hook } = injected();
  const later = copy(first);
  delete container(later, 'envoy').lifecycle;
  const result = mutate(later, defaultConfig());
  expectRestored(container(applyIndependently(later, result.patch), 'envoy').lifecycle, hook);
  expect(result.warnings).toContainEqual(expect.stringMatching(/container envoy: drainguard's drain preStop.* is gone.*restored/));
});

test('a removed installer is added back, with a warning', () => {
  const { first } = injected();
  const later = copy(first);
  later.spec.initContainers = later.spec.initContainers?.filter((c) => c.name !== 'drainguard-install');
  const result = mutate(later, defaultConfig());
  expect(result.status).toBe('mutated');
  expect(applyIndependently(later, result.patch).spec.initContainers).toEqual(first.spec.initContainers);
  expect(result.warnings).toContainEqual(expect.stringMatching(/init container drainguard-install.* is gone; added again/));
});

test('a shutdown-manager brought back by a later webhook is removed again, with a warning', () => {
  const { first } = injected();
  const original = loadPod('contour-main.yaml');
  const later = copy(first);
  later.spec.containers.unshift(container(original, 'shutdown-manager'));
  const result = mutate(later, defaultConfig());
  const after = applyIndependently(later, result.patch);
  expect(hasContainer(after, 'shutdown-manager')).toBe(false);
  expect(after.spec).toEqual(first.spec);
  expect(result.warnings).toContainEqual(expect.stringMatching(/shutdown-manager.* came back.* removed again/));
});

test('a shorter grace period on a later pass lowers the deadline below the earlier hook\'s', () => {
  const { first } = injected();
  const later = copy(first);
  later.spec.terminationGracePeriodSeconds = 60;
  const { after } = mutateOk(later);
  expect(drainArgs(container(after, 'envoy')).flags.get('--deadline')).toEqual(['50s']);
});

test('a status written by another version also records the drain: a replaced preStop is restored', () => {
  const { first, hook } = injected();
  const later = withAnnotations(first, { [STATUS]: '{"version":"0.0.1","actions":["prestop"]}' });
  container(later, 'envoy').lifecycle = { preStop: { exec: { command: ['/custom'] } } };
  const { result, after } = mutateOk(later);
  expectRestored(container(after, 'envoy').lifecycle, hook);
  expect(result.warnings).toContainEqual(expect.stringContaining('was replaced by exec ["/custom"]'));
});

test('without drainguard\'s status, a preStop of the user\'s is still kept, and the pod left whole', () => {
  const { first } = injected();
  const later = copy(first);
  delete later.metadata?.annotations?.[STATUS];
  container(later, 'envoy').lifecycle = { preStop: { exec: { command: ['/custom'] } } };
  const result = mutate(later, defaultConfig());
  // Left whole: its protected label, which nothing would honour any more, is all that goes.
  expect(result).toMatchObject({ status: 'skipped', reason: 'drain-not-installed' });
  expect(result.patch).toEqual([{ op: 'remove', path: '/metadata/labels/drainguard.io~1protected' }]);
  expect(result.warnings).toContainEqual(expect.stringContaining('the drain cannot be installed, so drainguard leaves the pod whole'));
});

test('the status keeps what earlier passes did, and is rewritten only when that list changes', () => {
  const { first } = injected();
  const recorded = JSON.parse(first.metadata?.annotations?.[STATUS] ?? '{}') as { actions: string[] };
  const later = copy(first);
  container(later, 'envoy').lifecycle = { preStop: { exec: { command: ['/custom'] } } };
  const { after } = mutateOk(later);
  expect(JSON.parse(after.metadata?.annotations?.[STATUS] ?? '{}')).toEqual({ version: VERSION, actions: recorded.actions });
});

test('in disarm mode a sidecar that got its preStop back is disarmed again', () => {
  const disarm = configWith((c) => (c.sidecarMode = 'disarm'));
  const { after: first } = mutateOk(loadPod('contour-v1.23.0.yaml'), disarm);
  const later = copy(first);
  container(later, 'shutdown-manager').lifecycle = container(loadPod('contour-v1.23.0.yaml'), 'shutdown-manager').lifecycle;
  const result = mutate(later, disarm);
  expect(result.status).toBe('mutated');
  expect(container(applyIndependently(later, result.patch), 'shutdown-manager').lifecycle?.preStop).toBeUndefined();
});
