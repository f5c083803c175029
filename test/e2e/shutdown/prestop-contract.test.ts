/**
 * The contract between the webhook and the drain program, checked against the built executables of
 * both architectures: every preStop command `mutate` writes for the pod fixtures is accepted by
 * `envoy-shutdown drain` and starts the timeline it describes. (The in-process counterpart with
 * generated pods is test/integration/contract/prestop-drain-arguments.test.ts.) The admin address is
 * pointed at a socket that does not exist, so each drain ends at once as `admin-unreachable`; a refused
 * command would exit 2 with a usage error instead.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { defaultConfig } from '../../../src/config';
import { mutate, type Pod } from '../../../src/mutate';
import { drainHarness } from './harness';
import { applyIndependently } from '../../support/independent-patch';
import { summaryOf, E2E_TARGETS } from '../../support/envoy/shutdown-executable';

const POD_FIXTURES = join(__dirname, '../../fixtures/pods');

interface WrittenHook {
  fixture: string;
  args: string[];
  timeline: { deadlineSeconds: number; drainDelaySeconds: number; minDrainSeconds: number; minConnections: number };
}

/** The drain arguments (after `envoy-shutdown drain`) the webhook writes for each fixture with a drain. */
function writtenHooks(): WrittenHook[] {
  return readdirSync(POD_FIXTURES)
    .filter((name) => name.endsWith('.yaml'))
    .flatMap((fixture) => {
      const pod = parse(readFileSync(join(POD_FIXTURES, fixture), 'utf8')) as Pod;
      const result = mutate(pod, defaultConfig());
      if (result.status !== 'mutated' || result.timeline.drainInstalled === false) return [];
      const after = applyIndependently(pod, result.patch);
      const command = after.spec.containers.map((c) => c.lifecycle?.preStop?.exec?.command).find((c) => c?.[1] === 'drain');
      return command ? [{ fixture, args: command.slice(2), timeline: result.timeline }] : [];
    });
}

const hooks = writtenHooks();

test('the fixtures exercise the contract (every Envoy fixture gets a drain hook)', () => {
  expect(hooks.length).toBe(readdirSync(POD_FIXTURES).filter((name) => name.endsWith('.yaml') && name !== 'not-envoy.yaml').length);
});

describe.each(E2E_TARGETS)('$title', (target) => {
  const h = drainHarness(target, 'contract');

  test.each(hooks)('the preStop written for $fixture is accepted and starts its timeline', async ({ args, timeline }) => {
    const admin = args.indexOf('--admin');
    expect(admin).toBeGreaterThanOrEqual(0);
    const pointed = [...args];
    pointed[admin + 1] = `unix:${join(h.workDir, 'no-envoy-here.sock')}`;
    const run = await h.drain(pointed[admin + 1] as string, [...pointed.slice(0, admin), ...pointed.slice(admin + 2)]).finished;
    expect(run.stderr.split('\n').filter((line) => line && !line.startsWith('{'))).toEqual([]);
    expect(run.code).toBe(0);
    expect(run.logs[0]).toMatchObject({
      phase: 'start',
      deadline_ms: timeline.deadlineSeconds * 1000,
      drain_delay_ms: timeline.drainDelaySeconds * 1000,
      min_drain_ms: timeline.minDrainSeconds * 1000,
      min_connections: timeline.minConnections,
    });
    expect(summaryOf(run)).toMatchObject({ reason: 'admin-unreachable' });
  });
});
