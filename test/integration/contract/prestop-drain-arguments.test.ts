/**
 * The contract between the webhook and the drain program (src/drain-contract/): every drain setting
 * written with the flag table's formatter is read back by the program's parser as the same setting,
 * and every preStop command `mutate` writes is accepted by `envoy-shutdown drain` and means what the
 * timeline says. A command the program refused would fail at shutdown (a FailedPreStopHook event),
 * and Envoy would be killed with no drain at all — the failure drainguard exists to prevent.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { parse } from 'yaml';
import { defaultConfig, DRAIN_SETTING_DEFAULTS, type Config } from '../../../src/config';
import {
  DRAIN_DEFAULTS,
  DRAIN_FLAGS,
  DRAIN_SUBCOMMAND,
  formatDrainArguments,
  MAX_DEADLINE_SECONDS,
  MAX_MIN_CONNECTIONS,
  parseDrainArguments,
  PROGRAM_NAME,
  readAdminAddress,
  terminationMessagePathProblem,
  type AdminAddress,
  type DrainArguments,
} from '../../../src/drain-contract';
import { mutate, type Container, type Pod } from '../../../src/mutate';
import { validPodCase } from '../../support/generators/pod-arbitrary';
import { applyIndependently } from '../../support/independent-patch';

const POD_FIXTURES = join(__dirname, '../../fixtures/pods');

function address(text: string): AdminAddress {
  const reading = readAdminAddress(text);
  if (!reading.ok) throw new Error(reading.problem);
  return reading.address;
}

describe('the flag table round trip: format, then parse, gives back the settings', () => {
  const maxMs = MAX_DEADLINE_SECONDS * 1000;
  const duration = fc.oneof(fc.integer({ min: 0, max: maxMs }), fc.integer({ min: 0, max: MAX_DEADLINE_SECONDS }).map((s) => s * 1000));
  const positiveDuration = fc.oneof(fc.integer({ min: 1, max: maxMs }), fc.integer({ min: 1, max: MAX_DEADLINE_SECONDS }).map((s) => s * 1000));
  const adminAddress = fc.oneof(
    fc.constantFrom('unix:/admin/admin.sock', 'http://[::1]:9901', 'http://localhost:19000', `unix:/${'s'.repeat(106)}`),
    fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.integer({ min: 1, max: 65535 })).map(([a, b, c, port]) => `http://127.${a}.${b}.${c}:${port}`),
    fc.array(fc.stringMatching(/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,9}$/), { minLength: 1, maxLength: 6 }).map((segments) => `unix:/${segments.join('/')}`),
  ).map(address);
  const settings: fc.Arbitrary<DrainArguments> = fc.record({
    admin: adminAddress,
    deadlineMs: positiveDuration,
    drainDelayMs: duration,
    minDrainMs: duration,
    minConnections: fc.integer({ min: 0, max: MAX_MIN_CONNECTIONS }),
    pollIntervalMs: positiveDuration,
    requestTimeoutMs: positiveDuration,
    excludeListeners: fc.array(fc.constantFrom('_8002$', '^admin$', '\\.', 'a/b', '\\[::\\]_8002$', '--x', '=', '0.0.0.0_80'), { maxLength: 4 }),
    inboundOnly: fc.boolean(),
    terminationMessagePath: fc.option(
      fc.array(fc.stringMatching(/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,9}$/), { minLength: 1, maxLength: 6 }).map((segments) => `/${segments.join('/')}`),
      { nil: undefined },
    ),
  }, { requiredKeys: ['admin', 'deadlineMs', 'drainDelayMs', 'minDrainMs', 'minConnections', 'pollIntervalMs', 'requestTimeoutMs', 'excludeListeners', 'inboundOnly'] });

  test('for generated settings', () => {
    fc.assert(
      fc.property(settings, (given) => {
        expect(parseDrainArguments(formatDrainArguments(given))).toEqual(given);
      }),
      { numRuns: 1000 },
    );
  });

  test('for the extremes of every range', () => {
    const extremes: DrainArguments = {
      admin: address('http://127.255.255.255:65535'),
      deadlineMs: maxMs,
      drainDelayMs: 0,
      minDrainMs: maxMs,
      minConnections: MAX_MIN_CONNECTIONS,
      pollIntervalMs: 1,
      requestTimeoutMs: maxMs,
      excludeListeners: [],
      inboundOnly: false,
    };
    expect(parseDrainArguments(formatDrainArguments(extremes))).toEqual(extremes);
  });

  test('every flag of the table is written for its setting, in table order', () => {
    const given: DrainArguments = {
      admin: address('unix:/admin/admin.sock'),
      deadlineMs: 290_000,
      drainDelayMs: 1500,
      minDrainMs: 5000,
      minConnections: 3,
      pollIntervalMs: 250,
      requestTimeoutMs: 2000,
      excludeListeners: ['_8002$', '_9090$'],
      inboundOnly: true,
      terminationMessagePath: '/dev/termination-log',
    };
    const args = formatDrainArguments(given);
    const written = args.filter((arg) => arg.startsWith('--')).map((flag) => flag.slice(2));
    expect([...new Set(written)]).toEqual(Object.keys(DRAIN_FLAGS));
    expect(args).toEqual([
      '--admin', 'unix:/admin/admin.sock',
      '--deadline', '290s',
      '--drain-delay', '1500ms',
      '--min-drain', '5s',
      '--min-connections', '3',
      '--poll-interval', '250ms',
      '--exclude-listener', '_8002$',
      '--exclude-listener', '_9090$',
      '--request-timeout', '2s',
      '--inbound-only',
      '--termination-message-path', '/dev/termination-log',
    ]);
  });

  test('a setting left out is the program default, and drainguard\'s own drain defaults are the same', () => {
    const admin = address('unix:/admin/admin.sock');
    expect(parseDrainArguments(formatDrainArguments({ admin }))).toEqual({
      admin,
      deadlineMs: DRAIN_DEFAULTS.deadlineSeconds * 1000,
      drainDelayMs: DRAIN_DEFAULTS.drainDelaySeconds * 1000,
      minDrainMs: DRAIN_DEFAULTS.minDrainSeconds * 1000,
      minConnections: DRAIN_DEFAULTS.minConnections,
      pollIntervalMs: DRAIN_DEFAULTS.pollIntervalSeconds * 1000,
      requestTimeoutMs: DRAIN_DEFAULTS.requestTimeoutSeconds * 1000,
      excludeListeners: [],
      inboundOnly: false,
    });
    // drainguard's own drain defaults: what its configuration applies when the operator sets none.
    expect(DRAIN_SETTING_DEFAULTS).toMatchObject({
      drainDelaySeconds: DRAIN_DEFAULTS.drainDelaySeconds,
      minDrainSeconds: DRAIN_DEFAULTS.minDrainSeconds,
      minConnections: DRAIN_DEFAULTS.minConnections,
      pollIntervalSeconds: DRAIN_DEFAULTS.pollIntervalSeconds,
    });
  });

  test.each<[string, Partial<DrainArguments>]>([
    ['no admin address', { deadlineMs: 1000 }],
    ['a deadline above the maximum', { admin: address('unix:/a'), deadlineMs: (MAX_DEADLINE_SECONDS + 1) * 1000 }],
    ['a zero deadline', { admin: address('unix:/a'), deadlineMs: 0 }],
    ['a fractional duration', { admin: address('unix:/a'), minDrainMs: 1.5 }],
    ['a negative count', { admin: address('unix:/a'), minConnections: -1 }],
    ['a count above the maximum', { admin: address('unix:/a'), minConnections: MAX_MIN_CONNECTIONS + 1 }],
    ['an invalid pattern', { admin: address('unix:/a'), excludeListeners: ['('] }],
    ['a pattern outside the listener pattern syntax', { admin: address('unix:/a'), excludeListeners: ['(a+)+$'] }],
    ['an empty pattern', { admin: address('unix:/a'), excludeListeners: [''] }],
    ['two values for a single-valued flag', { admin: address('unix:/a'), deadlineMs: [1000, 2000] as unknown as number }],
    ['a relative termination message path', { admin: address('unix:/a'), terminationMessagePath: 'dev/termination-log' }],
    ['a termination message path with a .. segment', { admin: address('unix:/a'), terminationMessagePath: '/dev/../etc/passwd' }],
  ])('the formatter refuses to write what the parser would refuse: %s', (_label, given) => {
    expect(() => formatDrainArguments(given)).toThrow(/drainguard bug: envoy-shutdown drain would refuse/);
  });
});

function drainHooks(pod: Pod): { container: Container; command: string[] }[] {
  return pod.spec.containers.flatMap((container) => {
    const command = container.lifecycle?.preStop?.exec?.command;
    return command?.[1] === DRAIN_SUBCOMMAND && command[0]?.endsWith(`/${PROGRAM_NAME}`) ? [{ container, command }] : [];
  });
}

/** Checks one pod; returns false when drainguard did not install a drain (nothing to check). */
function checkContract(pod: Pod, config: Config): boolean {
  const result = mutate(pod, config);
  if (result.status !== 'mutated' || result.timeline.drainInstalled === false) return false;
  const after = applyIndependently(pod, result.patch);
  const hooks = drainHooks(after);
  expect(hooks).toHaveLength(1);
  const command = hooks[0]?.command ?? [];

  const settings = parseDrainArguments(command.slice(2));
  const { timeline } = result;
  expect(settings.admin.text).toBe(timeline.adminAddress);
  expect(settings.deadlineMs).toBe(timeline.deadlineSeconds * 1000);
  expect(settings.drainDelayMs).toBe(timeline.drainDelaySeconds * 1000);
  expect(settings.minDrainMs).toBe(timeline.minDrainSeconds * 1000);
  expect(settings.minConnections).toBe(timeline.minConnections);
  expect(settings.excludeListeners).toEqual((timeline.excludedListenerPorts ?? []).map((port) => `_${port}$`));
  // The record goes where the kubelet reads Envoy's termination message, when the contract can write it there.
  const envoyPath = hooks[0]?.container.terminationMessagePath || '/dev/termination-log';
  expect(settings.terminationMessagePath).toBe(terminationMessagePathProblem(envoyPath) === undefined ? envoyPath : undefined);
  // The hook must return before the kubelet gives up on the pod. A grace period of 0 still gets a 1 s
  // deadline (the program needs a positive one), inside the ~2 s the kubelet adds to every grace period.
  expect(settings.deadlineMs).toBeLessThanOrEqual(Math.max(timeline.gracePeriodSeconds, 1) * 1000);
  expect(settings.deadlineMs).toBeGreaterThan(0);
  // The program is run from where the installer put it, or where Envoy mounts the drain image.
  if (config.installer.delivery === 'copy') {
    const installer = after.spec.initContainers?.find((c) => c.name === config.installer.containerName);
    const installedTo = installer?.command?.[installer.command.indexOf('--to') + 1];
    expect(command[0]).toBe(`${installedTo}/${PROGRAM_NAME}`);
  } else {
    const volume = after.spec.volumes?.find((v) => v.image?.reference === config.installer.image);
    const mount = hooks[0]?.container.volumeMounts?.find((m) => m.name === volume?.name);
    // (Read-only either way: the kubelet mounts every image volume read-only.)
    expect(mount).toBeDefined();
    expect(command[0]).toBe(`${mount?.mountPath}${config.installer.programPath}`);
  }
  return true;
}

const fixtures = readdirSync(POD_FIXTURES).filter((name) => name.endsWith('.yaml'));

test.each(fixtures.flatMap((name) => (['copy', 'image-volume'] as const).map((delivery) => [name, delivery] as const)))(
  'the preStop written for %s (installer.delivery: %s) is accepted by envoy-shutdown drain',
  (name, delivery) => {
    const pod = parse(readFileSync(join(POD_FIXTURES, name), 'utf8')) as Pod;
    const config = defaultConfig();
    config.installer.delivery = delivery;
    const installed = checkContract(pod, config);
    expect(installed).toBe(name !== 'not-envoy.yaml');
  },
);

test('generated pods, annotations and configurations: every preStop written is accepted', () => {
  let checked = 0;
  fc.assert(
    fc.property(validPodCase, ({ pod, config }) => {
      if (checkContract(pod, config)) checked += 1;
    }),
    { numRuns: 300 },
  );
  // The generator must actually exercise the contract, not skip it.
  expect(checked).toBeGreaterThan(100);
});
