/**
 * The drain settings a user gave the upstream shutdown-manager carry over into drainguard's drain, and
 * what it gives no flag for is the component's default at its release; annotations still win; a flag
 * drainguard cannot carry as it is, or at all, is reported; one whose loss changes nothing is only listed.
 */
import { defaultConfig } from '../../../src/config';
import { mutate, type Pod } from '../../../src/mutate';
import { configWith, container, drainArgs, loadPod, mutateOk, withAnnotations } from './support';

function contourWithShutdown(...flags: string[]): Pod {
  const pod = loadPod('contour-main.yaml');
  container(pod, 'shutdown-manager').lifecycle = { preStop: { exec: { command: ['/bin/contour', 'envoy', 'shutdown', ...flags] } } };
  return pod;
}

function envoyGatewayWithShutdown(...flags: string[]): Pod {
  const pod = loadPod('envoy-gateway-envoy.yaml');
  container(pod, 'shutdown-manager').lifecycle = { preStop: { exec: { command: ['envoy-gateway', 'envoy', 'shutdown', ...flags] } } };
  return pod;
}

function drain(pod: Pod, config = defaultConfig()) {
  const { result, after } = mutateOk(pod, config);
  const envoy = after.spec.containers.find((c) => c.lifecycle?.preStop?.exec !== undefined);
  if (envoy === undefined) throw new Error('no drain hook');
  const flags = drainArgs(envoy).flags;
  const one = (name: string) => flags.get(name)?.[0];
  return {
    flags: { deadline: one('--deadline'), drainDelay: one('--drain-delay'), minDrain: one('--min-drain'), minConnections: one('--min-connections'), poll: one('--poll-interval') },
    sources: result.timeline.drainSources,
    warnings: result.warnings,
    result,
    after,
  };
}

const SHUTDOWN = '`contour envoy shutdown` (container shutdown-manager, preStop)';

describe('Contour and Bitnami: `contour envoy shutdown` flags', () => {
  test('--drain-delay, --check-delay, --check-interval and --min-open-connections become the drain\'s settings', () => {
    const { flags, sources } = drain(contourWithShutdown('--drain-delay=15s', '--check-delay=5s', '--check-interval=2s', '--min-open-connections=10'));
    expect(flags).toMatchObject({ drainDelay: '15s', minDrain: '5s', poll: '2s', minConnections: '10' });
    expect(sources).toMatchObject({
      drainDelay: { origin: 'sidecar-flag', detail: `--drain-delay=15s of ${SHUTDOWN}` },
      minDrain: { origin: 'sidecar-flag', detail: `--check-delay=5s of ${SHUTDOWN}` },
      pollInterval: { origin: 'sidecar-flag', detail: `--check-interval=2s of ${SHUTDOWN}` },
      minConnections: { origin: 'sidecar-flag', detail: `--min-open-connections=10 of ${SHUTDOWN}` },
      deadline: { origin: 'grace-period' },
    });
  });

  test('a flag and its value as two arguments', () => {
    expect(drain(contourWithShutdown('--drain-delay', '7s')).flags.drainDelay).toBe('7s');
  });

  test('flags left out take the sidecar\'s defaults at its release (image tag main), not drainguard\'s own defaults', () => {
    const { flags, sources, result } = drain(contourWithShutdown());
    expect(flags).toMatchObject({ drainDelay: '0s', minDrain: '0s', poll: '5s', minConnections: '0' });
    expect(sources?.minDrain).toEqual({
      origin: 'component-default',
      detail: 'Contour v1.33.6 or later default of `contour envoy shutdown --check-delay` (60s from v1.10.0, 0s from v1.22.0)',
    });
    expect(result.timeline.replaces).toEqual([
      { name: 'Contour', release: 'v1.33.6 or later', how: 'image tag main of container shutdown-manager: the development branch, after v1.33.6' },
    ]);
  });

  test.each([
    ['ghcr.io/projectcontour/contour:v1.21.3', '60s'],
    ['ghcr.io/projectcontour/contour:v1.22.0', '0s'],
    ['docker.io/bitnami/contour:1.20.1-debian-11-r3', '60s'],
    ['registry.example/mirror/contour:v1.15.2@sha256:' + 'a'.repeat(64), '60s'],
    ['ghcr.io/projectcontour/contour:main', '0s'],
  ])('the release read from %s gives --check-delay %s', (image, minDrain) => {
    const pod = contourWithShutdown();
    for (const c of [...pod.spec.containers, ...(pod.spec.initContainers ?? [])]) if (c.image?.includes('contour')) c.image = image;
    expect(drain(pod).flags.minDrain).toBe(minDrain);
  });

  test.each([
    ['docker.io/bitnami/contour@sha256:' + 'b'.repeat(64), 'the image docker.io/bitnami/contour@sha256:'],
    ['ghcr.io/projectcontour/contour:latest', 'the image ghcr.io/projectcontour/contour:latest (containers shutdown-manager, envoy-initconfig) has no release tag'],
    ['registry.example/edge-tools:2.1.0', 'no Contour image with a release tag'],
  ])('a release that cannot be told from %s: drainguard\'s own minimum drain, with a warning naming the annotation', (image, why) => {
    const pod = contourWithShutdown();
    for (const c of [...pod.spec.containers, ...(pod.spec.initContainers ?? [])]) if (c.image?.includes('contour')) c.image = image;
    const { flags, sources, warnings } = drain(pod);
    // The defaults every release shares still apply; only the one that differs falls back.
    expect(flags).toMatchObject({ minDrain: '5s', poll: '5s', drainDelay: '0s' });
    expect(sources?.minDrain).toEqual({ origin: 'drainguard-default', detail: "drainguard's configuration (drain.minDrainSeconds)" });
    const warning = warnings.find((w) => w.includes('--check-delay'));
    // What to do first: the API server cuts a warning after 256 characters.
    expect(warning).toMatch(/^container shutdown-manager: the minimum drain is drainguard's drain\.minDrainSeconds \(set drainguard\.io\/min-drain to choose\): /);
    expect(warning).toContain('the default of `contour envoy shutdown --check-delay` (60s from v1.10.0, 0s from v1.22.0) depends on the release, and its release cannot be told: ');
    expect(warning).toContain(why);
    // Setting the annotation answers the warning.
    const annotated = drain(withAnnotations(pod, { 'drainguard.io/min-drain': '20s' }));
    expect(annotated.flags.minDrain).toBe('20s');
    expect(annotated.warnings.filter((w) => w.includes('--check-delay'))).toEqual([]);
    // So does setting it in the configuration, for every pod.
    const configured = drain(pod, configWith((c) => (c.drain.minDrainSeconds = 12)));
    expect(configured.flags.minDrain).toBe('12s');
    expect(configured.warnings.filter((w) => w.includes('--check-delay'))).toEqual([]);
  });

  test('annotations win over the sidecar\'s flags', () => {
    const pod = withAnnotations(contourWithShutdown('--drain-delay=15s', '--min-open-connections=10'), {
      'drainguard.io/drain-delay': '3s',
      'drainguard.io/min-connections': '2',
    });
    const { flags, sources } = drain(pod);
    expect(flags).toMatchObject({ drainDelay: '3s', minConnections: '2' });
    expect(sources?.drainDelay).toEqual({ origin: 'annotation', detail: 'the drainguard.io/drain-delay annotation' });
  });

  test('Go durations are read exactly: 1m30s is 90s', () => {
    expect(drain(contourWithShutdown('--check-delay=1m30s')).flags.minDrain).toBe('90s');
  });

  test.each<[string, string, keyof ReturnType<typeof drain>['flags'], string, RegExp]>([
    ['sub-second values are rounded up, with a warning', '--drain-delay=1500ms', 'drainDelay', '2s', /--drain-delay=1500ms of .*: rounded up to 2s/],
    ['a zero poll interval becomes the shortest drainguard polls at', '--check-interval=0s', 'poll', '1s', /--check-interval=0s of .*: raised to 1s/],
    ['a delay beyond what drainguard accepts is lowered to it', '--drain-delay=2h', 'drainDelay', '3600s', /--drain-delay=2h of .*: lowered to 3600s/],
    ['a negative delay is read as none, as the sidecar does', '--drain-delay=-5s', 'drainDelay', '0s', /--drain-delay=-5s of .*: negative, read as 0s/],
    ['a negative connection count becomes 0', '--min-open-connections=-1', 'minConnections', '0', /--min-open-connections=-1 of .*: negative .* read as 0/],
  ])('%s', (_title, flag, field, expected, warning) => {
    const pod = contourWithShutdown(flag);
    pod.spec.terminationGracePeriodSeconds = 10_000;
    const { flags, warnings, sources } = drain(pod);
    expect(flags[field]).toBe(expected);
    expect(warnings).toContainEqual(expect.stringMatching(warning));
    expect(Object.values(sources ?? {}).some((source) => source.origin === 'sidecar-flag' && source.detail.includes(flag))).toBe(true);
  });

  test.each([
    ['--check-delay=soon', 'not a Go duration'],
    ['--check-delay=5', 'not a Go duration'],
    ['--min-open-connections=010', 'not a decimal whole number'],
    ['--min-open-connections=0x10', 'not a decimal whole number'],
  ])('%s cannot be read: the component\'s default applies, with a warning', (flag, why) => {
    const { flags, warnings } = drain(contourWithShutdown(flag));
    expect(flags).toMatchObject({ minDrain: '0s', minConnections: '0' });
    expect(warnings).toContainEqual(`${flag} of ${SHUTDOWN}: ${why}; ignored`);
  });

  test('flags whose loss changes nothing are listed once per container, not warned about; an unknown flag is a warning', () => {
    const pod = contourWithShutdown('--ready-file=/admin/ok', '--drain-delay=1s', '--log-format=json');
    container(pod, 'shutdown-manager').args = ['envoy', 'shutdown-manager', '--serve-port=8090', '--ready-file=/admin/ok'];
    const { warnings, result } = drain(pod);
    expect(warnings.filter((w) => w.includes('dropped'))).toEqual([
      'container shutdown-manager: sidecar flag --log-format=json dropped: not a flag drainguard knows, so it cannot keep what it did',
    ]);
    expect(result.timeline.droppedFlags).toEqual([
      { container: 'shutdown-manager', flag: '--ready-file=/admin/ok', reason: "no file handshake any more: Envoy's own preStop drains Envoy" },
      { container: 'shutdown-manager', flag: '--serve-port=8090', reason: "the sidecar's HTTP server goes with the sidecar, and nothing calls it any more" },
    ]);
  });

  test('in disarm mode the sidecar keeps its command line: only its preStop\'s flags are dropped', () => {
    const pod = contourWithShutdown('--ready-file=/admin/ok', '--drain-delay=4s');
    container(pod, 'shutdown-manager').args = ['envoy', 'shutdown-manager', '--serve-port=8090'];
    const { flags, result } = drain(withAnnotations(pod, { 'drainguard.io/sidecar-mode': 'disarm' }));
    expect(flags.drainDelay).toBe('4s');
    expect(result.timeline.droppedFlags?.map((flag) => flag.flag)).toEqual(['--ready-file=/admin/ok']);
  });

  test('Envoy\'s own `contour envoy shutdown` preStop is replaced with its settings carried over', () => {
    const pod = loadPod('contour-main.yaml');
    pod.spec.containers = pod.spec.containers.filter((c) => c.name !== 'shutdown-manager');
    container(pod, 'envoy').lifecycle = { preStop: { exec: { command: ['/bin/contour', 'envoy', 'shutdown', '--drain-delay=20s'] } } };
    const { flags, sources } = drain(pod);
    expect(flags.drainDelay).toBe('20s');
    expect(sources?.drainDelay.detail).toBe('--drain-delay=20s of `contour envoy shutdown` (container envoy, preStop)');
  });

  test('a sidecar preStop drainguard cannot read is named when it goes: its settings could not be carried over', () => {
    const pod = loadPod('contour-main.yaml');
    container(pod, 'shutdown-manager').lifecycle = { preStop: { exec: { command: ['/bin/sh', '-c', 'contour envoy shutdown --drain-delay=30s'] } } };
    const { flags, warnings } = drain(pod);
    expect(flags.drainDelay).toBe('0s');
    expect(warnings).toContainEqual(
      'container shutdown-manager: its preStop (exec ["/bin/sh","-c","contour envoy shutdown --drain-delay=30s"]) goes with the sidecar ' +
        "and is not a command drainguard can read drain settings from; drainguard's configured defaults apply",
    );
  });

  test('no drain installed (a preStop of the user\'s): the pod is left whole, and nothing about the sidecar is reported', () => {
    const pod = contourWithShutdown('--ready-file=/admin/ok', '--drain-delay=1500ms');
    container(pod, 'envoy').lifecycle = { preStop: { exec: { command: ['/custom'] } } };
    const result = mutate(pod, defaultConfig());
    expect(result).toMatchObject({ status: 'skipped', reason: 'drain-not-installed', patch: [] });
    expect(result.warnings).toEqual([expect.stringMatching(/^container envoy: its preStop hook \(exec \["\/custom"\]\) is not a recognised shutdown-manager hook/)]);
  });

  test('delay and minimum drain that do not fit the deadline are shortened, and their sources say so', () => {
    const pod = contourWithShutdown('--drain-delay=100s', '--check-delay=50s');
    pod.spec.terminationGracePeriodSeconds = 120;
    const { flags, sources, warnings } = drain(pod);
    expect(flags).toMatchObject({ deadline: '110s', drainDelay: '100s', minDrain: '10s' });
    expect(sources?.minDrain.detail).toBe(`--check-delay=50s of ${SHUTDOWN}; shortened to fit the 110s deadline`);
    expect(sources?.drainDelay.detail).toBe(`--drain-delay=100s of ${SHUTDOWN}`);
    expect(warnings).toContainEqual(expect.stringMatching(/do not fit in the 110s drain deadline/));
  });

  test('a second pass writes the same hook from drainguard\'s own hook, with zero operations', () => {
    const { after } = drain(contourWithShutdown('--drain-delay=15s', '--check-delay=5s', '--check-interval=2s', '--min-open-connections=10'));
    const again = mutate(after, defaultConfig());
    expect(again.status).toBe('unchanged');
    expect(again.patch).toEqual([]);
  });
});

describe('Envoy Gateway: `envoy-gateway envoy shutdown` flags', () => {
  test('--drain-timeout bounds the deadline; --min-drain-duration and --exit-at-connections carry over', () => {
    const pod = envoyGatewayWithShutdown('--drain-timeout=30s', '--min-drain-duration=15s', '--exit-at-connections=3');
    const { flags, sources } = drain(pod);
    expect(flags).toMatchObject({ deadline: '30s', minDrain: '15s', minConnections: '3' });
    expect(sources?.deadline).toEqual({
      origin: 'sidecar-flag',
      detail: '--drain-timeout=30s of `envoy-gateway envoy shutdown` (container shutdown-manager, preStop), shorter than grace period - 10s (drain.deadlineMarginSeconds)',
    });
  });

  test('a --drain-timeout longer than the grace period allows does not extend the deadline', () => {
    const pod = envoyGatewayWithShutdown('--drain-timeout=3600s');
    container(pod, 'shutdown-manager').args = ['envoy', 'shutdown-manager', '--ready-timeout=3610s'];
    const { flags, sources } = drain(pod);
    expect(flags.deadline).toBe(`${(pod.spec.terminationGracePeriodSeconds ?? 0) - 10}s`);
    expect(sources?.deadline.origin).toBe('grace-period');
    expect(sources?.deadline.detail).toContain('--drain-timeout=3600s of `envoy-gateway envoy shutdown`');
    expect(sources?.deadline.detail).toContain('--ready-timeout=3610s of `envoy-gateway envoy shutdown-manager`');
  });

  test('without --ready-timeout, its default (610s) bounded Envoy\'s wait for the sidecar, and so the drain', () => {
    const { flags, sources } = drain(envoyGatewayWithShutdown('--drain-timeout=3600s'));
    expect(flags.deadline).toBe('610s');
    expect(sources?.deadline).toMatchObject({ origin: 'component-default' });
    expect(sources?.deadline.detail).toMatch(/^Envoy Gateway v1\.5\.4 default of `envoy-gateway envoy shutdown-manager --ready-timeout` /);
  });

  test('flags left out take Envoy Gateway\'s defaults at its release: 60s drain timeout and 10s minimum from v1.2', () => {
    const { flags, sources } = drain(envoyGatewayWithShutdown());
    expect(flags).toMatchObject({ deadline: '60s', minDrain: '10s', minConnections: '0', poll: '1s', drainDelay: '0s' });
    expect(sources?.minDrain.detail).toBe('Envoy Gateway v1.5.4 default of `envoy-gateway envoy shutdown --min-drain-duration` (5s from v1.0.0, 10s from v1.2.0)');
  });

  test.each([
    ['Envoy shows --drain-time-s (rendered from v1.2 on)', true, ['60s', '10s'], 'v1.2.0 or later'],
    ['Envoy shows no --drain-time-s (v1.0 and v1.1 render it only with a drain timeout)', false, ['600s', '5s'], 'v1.0.0 up to before v1.2.0'],
  ])('a dev image (gateway-dev:latest) tells no release; the flags do: %s', (_title, drainTime, [deadline, minDrain], release) => {
    const pod = envoyGatewayWithShutdown();
    container(pod, 'shutdown-manager').image = 'docker.io/envoyproxy/gateway-dev:latest';
    pod.spec.terminationGracePeriodSeconds = 900;
    const envoy = container(pod, 'envoy');
    if (!drainTime) envoy.args = (envoy.args ?? []).filter((arg) => !arg.startsWith('--drain-time-s'));
    const { flags, result } = drain(pod);
    expect({ deadline: flags.deadline, minDrain: flags.minDrain }).toEqual({ deadline, minDrain });
    expect(result.timeline.replaces?.[0]).toMatchObject({ name: 'Envoy Gateway', release });
  });

  test('--health-check-failure-delay becomes the drain delay, taken out of the minimum Envoy Gateway counts from its start', () => {
    const { flags, sources, warnings } = drain(envoyGatewayWithShutdown('--health-check-failure-delay=4s', '--min-drain-duration=15s'));
    expect(flags).toMatchObject({ drainDelay: '4s', minDrain: '11s' });
    expect(sources?.minDrain.detail).toContain('less the 4s drain delay, which Envoy Gateway counts in it');
    expect(warnings.filter((w) => w.includes('health-check-failure-delay'))).toEqual([]);
  });

  test('the shutdown-manager\'s --ready-timeout bounds the deadline like the drain timeout', () => {
    const pod = envoyGatewayWithShutdown('--drain-timeout=60s');
    container(pod, 'shutdown-manager').args = ['envoy', 'shutdown-manager', '--ready-timeout=40s'];
    const { flags, sources } = drain(pod);
    expect(flags.deadline).toBe('40s');
    expect(sources?.deadline.detail).toMatch(/^--ready-timeout=40s of `envoy-gateway envoy shutdown-manager` \(container shutdown-manager\), shorter than/);
  });

  test('a second pass keeps the shorter deadline: drainguard\'s own hook bounds it', () => {
    const { after } = drain(envoyGatewayWithShutdown('--drain-timeout=30s', '--min-drain-duration=15s'));
    const again = mutate(after, defaultConfig());
    expect(again.status).toBe('unchanged');
    if (again.status !== 'unchanged') return;
    expect(again.timeline).toMatchObject({ deadlineSeconds: 30, minDrainSeconds: 15 });
    expect(again.timeline.drainSources?.deadline.origin).toBe('drainguard-hook');
  });
});

/**
 * A drain setting the operator set in drainguard's configuration (`--config`, the chart's
 * `config.drain.*`) outranks the replaced component's release default, and nothing the pod says:
 * the workload's annotation and the sidecar's own flag still win (docs/configuration.md, "Where a
 * drain setting comes from").
 */
describe('a drain setting set in the configuration', () => {
  const clusterWide = () => configWith((c) => Object.assign(c.drain, { drainDelaySeconds: 5, minDrainSeconds: 20, minConnections: 3, pollIntervalSeconds: 2 }));
  const CONFIGURED = (key: string) => ({ origin: 'configuration', detail: `drain.${key} set in drainguard's configuration` });

  test('applies to a Contour pod whose sidecar sets no flag, over Contour\'s release defaults', () => {
    const { flags, sources, warnings } = drain(contourWithShutdown(), clusterWide());
    expect(flags).toMatchObject({ drainDelay: '5s', minDrain: '20s', minConnections: '3', poll: '2s' });
    expect(sources).toMatchObject({
      drainDelay: CONFIGURED('drainDelaySeconds'),
      minDrain: CONFIGURED('minDrainSeconds'),
      minConnections: CONFIGURED('minConnections'),
      pollInterval: CONFIGURED('pollIntervalSeconds'),
    });
    expect(warnings).toEqual([]);
  });

  test('applies to Contour\'s own DaemonSet as shipped (its Envoy preStop calls the sidecar, which has no flags)', () => {
    const { flags } = drain(loadPod('contour-main.yaml'), clusterWide());
    expect(flags).toMatchObject({ drainDelay: '5s', minDrain: '20s', minConnections: '3', poll: '2s' });
  });

  test('a setting it leaves out keeps the component\'s release default', () => {
    const { flags, sources } = drain(contourWithShutdown(), configWith((c) => (c.drain.drainDelaySeconds = 5)));
    expect(flags).toMatchObject({ drainDelay: '5s', minDrain: '0s', poll: '5s', minConnections: '0' });
    expect(sources?.minDrain.origin).toBe('component-default');
    expect(sources?.pollInterval.origin).toBe('component-default');
  });

  test('the sidecar\'s explicit flag still wins, setting by setting', () => {
    const { flags, sources } = drain(contourWithShutdown('--check-delay=7s', '--check-interval=4s'), clusterWide());
    expect(flags).toMatchObject({ drainDelay: '5s', minDrain: '7s', poll: '4s', minConnections: '3' });
    expect(sources?.minDrain).toEqual({ origin: 'sidecar-flag', detail: `--check-delay=7s of ${SHUTDOWN}` });
    expect(sources?.pollInterval).toEqual({ origin: 'sidecar-flag', detail: `--check-interval=4s of ${SHUTDOWN}` });
    expect(sources?.drainDelay).toEqual(CONFIGURED('drainDelaySeconds'));
  });

  test('the workload\'s annotation wins over it', () => {
    const pod = withAnnotations(contourWithShutdown(), { 'drainguard.io/min-drain': '9s', 'drainguard.io/min-connections': '1' });
    const { flags, sources } = drain(pod, clusterWide());
    expect(flags).toMatchObject({ drainDelay: '5s', minDrain: '9s', minConnections: '1' });
    expect(sources?.minDrain.origin).toBe('annotation');
  });

  test('Envoy Gateway: it outranks the release defaults too; a configured delay is not taken out of a configured minimum drain', () => {
    const { flags, sources } = drain(envoyGatewayWithShutdown(), clusterWide());
    expect(flags).toMatchObject({ drainDelay: '5s', minDrain: '20s', minConnections: '3', poll: '2s' });
    expect(sources?.minDrain).toEqual(CONFIGURED('minDrainSeconds'));
    // Envoy Gateway counts its own minimum from the start of its drain: its default, kept, is shortened
    // by a drain delay drainguard waits first, which the configuration gave here.
    const kept = drain(envoyGatewayWithShutdown(), configWith((c) => (c.drain.drainDelaySeconds = 4)));
    expect(kept.flags).toMatchObject({ drainDelay: '4s', minDrain: '6s' });
    expect(kept.sources?.minDrain.origin).toBe('component-default');
  });

  test('a plain Envoy (nothing replaced) takes it over drainguard\'s own default, and --explain tells the two apart', () => {
    const plain = loadPod('plain-envoy.yaml');
    const unset = drain(plain);
    expect(unset.sources?.minDrain).toEqual({ origin: 'drainguard-default', detail: "drainguard's configuration (drain.minDrainSeconds)" });
    const set = drain(plain, configWith((c) => (c.drain.minDrainSeconds = 5)));
    expect(set.flags.minDrain).toBe(unset.flags.minDrain);
    expect(set.sources?.minDrain).toEqual(CONFIGURED('minDrainSeconds'));
  });

  test('a configured deadline margin is named as set', () => {
    const { flags, sources } = drain(contourWithShutdown(), configWith((c) => (c.drain.deadlineMarginSeconds = 30)));
    expect(flags.deadline).toBe('270s');
    expect(sources?.deadline).toEqual({ origin: 'grace-period', detail: "grace period - 30s (drain.deadlineMarginSeconds set in drainguard's configuration)" });
  });
});
