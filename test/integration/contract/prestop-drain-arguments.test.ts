/**
 * The contract between the webhook and the drain program: every preStop command `mutate` writes must
 * be accepted by `envoy-shutdown drain`'s own argument parser and mean what the timeline says. A
 * command the program refused would fail at shutdown (a FailedPreStopHook event), and Envoy would be
 * killed with no drain at all — the failure drainguard exists to prevent.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { parse } from 'yaml';
import { defaultConfig, type Config } from '../../../src/config';
import { mutate, type Container, type Pod } from '../../../src/mutate';
import { parseDrainArguments } from '../../../src/shutdown/main';
import { validPodCase } from '../../property/pod-arbitrary';
import { applyIndependently } from '../../support/independent-patch';

const POD_FIXTURES = join(__dirname, '../../fixtures/pods');

function drainHooks(pod: Pod): { container: Container; command: string[] }[] {
  return pod.spec.containers.flatMap((container) => {
    const command = container.lifecycle?.preStop?.exec?.command;
    return command?.[1] === 'drain' && command[0]?.endsWith('/envoy-shutdown') ? [{ container, command }] : [];
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

  const { settings } = parseDrainArguments(command.slice(2));
  const { timeline } = result;
  expect(settings.deadlineMs).toBe(timeline.deadlineSeconds * 1000);
  expect(settings.drainDelayMs).toBe(timeline.drainDelaySeconds * 1000);
  expect(settings.minDrainMs).toBe(timeline.minDrainSeconds * 1000);
  expect(settings.minConnections).toBe(timeline.minConnections);
  // The hook must return before the kubelet gives up on the pod. A grace period of 0 still gets a 1 s
  // deadline (the program needs a positive one), inside the ~2 s the kubelet adds to every grace period.
  expect(settings.deadlineMs).toBeLessThanOrEqual(Math.max(timeline.gracePeriodSeconds, 1) * 1000);
  expect(settings.deadlineMs).toBeGreaterThan(0);
  // The program is run from where the installer put it.
  const installer = after.spec.initContainers?.find((c) => c.name === config.installer.containerName);
  const installedTo = installer?.command?.[installer.command.indexOf('--to') + 1];
  expect(command[0]).toBe(`${installedTo}/envoy-shutdown`);
  return true;
}

const fixtures = readdirSync(POD_FIXTURES).filter((name) => name.endsWith('.yaml'));

test.each(fixtures)('the preStop written for %s is accepted by envoy-shutdown drain', (name) => {
  const pod = parse(readFileSync(join(POD_FIXTURES, name), 'utf8')) as Pod;
  const installed = checkContract(pod, defaultConfig());
  expect(installed).toBe(name !== 'not-envoy.yaml');
});

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
