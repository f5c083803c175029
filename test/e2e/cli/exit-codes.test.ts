/**
 * Exit codes are one fact: each command's table in src/cli (what `--help` prints) and what the built
 * process really returns must agree. The help text is read back and parsed; every code but 4 (a
 * drainguard bug) is then provoked for real (check's 0 and 1, which need a cluster, in
 * test/kube/check-cli.test.ts). The "Exit codes" table of each command's page is the help's, row for
 * row (test/unit/docs/held-output.test.ts).
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMMANDS } from '../../../src/cli/commands';
import { assertDistBuilt } from '../../support/build';
import { CONTOUR_FIXTURES_DIR } from '../../support/repo';
import { KubeApiDouble } from '../../support/kube-api-double';
import { spawnDrainguard, stopAll } from './spawn-cli';

/** `  0  meaning` lines of the `Exit status` section of a usage text. */
function helpCodes(usage: string): number[] {
  const section = usage.slice(usage.indexOf('Exit status'));
  expect(section).not.toBe('');
  return [...section.matchAll(/^ {2}(\d) {2}\S/gm)].map((match) => Number(match[1]));
}

const directory = mkdtempSync(join(tmpdir(), 'drainguard-exit-codes-'));
beforeAll(() => assertDistBuilt());
afterEach(() => stopAll());
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe.each(COMMANDS.filter((command) => command.name !== 'help').map((command) => [command.name, command] as const))('%s', (name, command) => {
  test('--help ends with the table', async () => {
    const help = await spawnDrainguard(name === 'completion' ? ['completion', '--help'] : [name, '--help']);
    expect(help.status).toBe(0);
    const codes = command.exitCodes.map(([code]) => code);
    expect(helpCodes(help.stdout)).toEqual(codes);
    const [lastCode, lastMeaning] = command.exitCodes.at(-1)!;
    expect(help.stdout.trimEnd().endsWith(`  ${lastCode}  ${lastMeaning}`)).toBe(true);
    // 4 is the same everywhere: a bug.
    expect(codes).toContain(4);
  });
});

test('help --help prints the help command\'s usage, ending with its table (it has no page of its own)', async () => {
  const help = await spawnDrainguard(['help', '--help']);
  expect(help.status).toBe(0);
  const command = COMMANDS.find((candidate) => candidate.name === 'help')!;
  expect(helpCodes(help.stdout)).toEqual(command.exitCodes.map(([code]) => code));
  expect(help.stdout.trimEnd().endsWith(`  2  ${command.exitCodes.at(-1)![1]}`)).toBe(true);
});

/** Runs the CLI and returns its exit status. */
async function status(args: string[], env: NodeJS.ProcessEnv = {}): Promise<number | null> {
  return (await spawnDrainguard(args, { env: { HOME: directory, ...env } })).status;
}

test('inject returns every code it documents (but 4)', async () => {
  const envoy = join(CONTOUR_FIXTURES_DIR, '03-envoy-v1.33.6.yaml');
  const plainService = join(directory, 'service.yaml');
  writeFileSync(plainService, 'apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n');
  expect(await status(['inject', '-f', envoy])).toBe(0);
  expect(await status(['inject', '-f', plainService, '--diff'])).toBe(0);
  expect(await status(['inject', '-f', envoy, '--diff'])).toBe(1);
  expect(await status(['inject'])).toBe(2);
  expect(await status(['inject', '-f', join(directory, 'missing.yaml')])).toBe(3);
});

// check's 0 (every check holds) and 1 (a finding) need a cluster: test/kube/check-cli.test.ts provokes them.
test('check: 2 for a wrong flag value, 3 for a kubeconfig that cannot be used', async () => {
  expect(await status(['check', '--output', 'yaml', '--kubeconfig', join(directory, 'kubeconfig')])).toBe(2);
  expect(await status(['check', '--kubeconfig', join(directory, 'no-such-kubeconfig')])).toBe(3);
});

test('serve: 2 for wrong flags, 3 when it cannot start', async () => {
  expect(await status(['serve', '--port', 'x'])).toBe(2);
  expect(await status(['serve', '--dev', '--config', join(directory, 'missing-config.yaml')])).toBe(3);
});

describe('report returns 0, 2 and 3 as documented', () => {
  let double: KubeApiDouble;
  const kubeconfig = join(directory, 'report-kubeconfig');
  const report = (port: string) =>
    spawnDrainguard(['report', '--kubeconfig', kubeconfig, '--host', '127.0.0.1', '--port', port, '--instance', 'exit-codes', '--webhook-config-name', 'drainguard'], { env: { HOME: directory } });
  beforeAll(async () => {
    double = await KubeApiDouble.start();
    writeFileSync(kubeconfig, double.kubeconfigYaml());
  });
  afterAll(() => double.close());

  test('2 for wrong flags, 3 for a kubeconfig that cannot be used', async () => {
    expect(await status(['report', '--port', '65536', '--webhook-config-name', 'drainguard'])).toBe(2);
    expect(await status(['report', '--kubeconfig', join(directory, 'no-such-kubeconfig')])).toBe(2);
    expect(await status(['report', '--kubeconfig', join(directory, 'no-such-kubeconfig'), '--webhook-config-name', 'drainguard'])).toBe(3);
  });

  test('0 after SIGTERM once it watches', async () => {
    const reporter = report('0');
    // Running: it has listed the protected pods, the webhook configuration and the namespaces, and watches them.
    await double.until(() => double.openWatches === 3);
    reporter.child.kill('SIGTERM');
    expect((await reporter).status).toBe(0);
  });

  test('3 for a port another process holds, with the reason; the process ends (its watch never started)', async () => {
    const taken = createServer();
    taken.listen(0, '127.0.0.1');
    await once(taken, 'listening');
    try {
      const port = String((taken.address() as AddressInfo).port);
      const refused = await report(port);
      expect(refused.status).toBe(3);
      expect(refused.stderr).toContain(`drainguard report: listen EADDRINUSE: address already in use 127.0.0.1:${port}`);
    } finally {
      taken.close();
    }
  });
});

test('version: 0 even with no cluster configured (it says so), 2 for wrong flags', async () => {
  expect(await status(['version'])).toBe(0);
  expect(await status(['version', '-o', 'yaml'])).toBe(2);
});

test('completion: 0 for a shell it knows, 2 otherwise; no or an unknown command: 2', async () => {
  expect(await status(['completion', 'bash'])).toBe(0);
  expect(await status(['completion', 'powershell'])).toBe(2);
  expect(await status([])).toBe(2);
  expect(await status(['chek'])).toBe(2);
});
