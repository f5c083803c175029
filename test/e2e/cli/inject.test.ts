import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { Container, Pod } from '../../../src/k8s';
import { PROTECTED_LABEL } from '../../../src/mutate';
import { applyUnifiedDiff } from '../../unit/cli/apply-unified-diff';
import { unjustifiedChanges } from '../../unit/cli/changed-lines';
import { CLI_MAIN } from '../../support/build';
import { NODE } from '../../support/repo';
import { buildCli, CONTOUR_FIXTURES, drainguard, npx } from './run-cli';

beforeAll(() => buildCli(), 120_000);

/** No stack trace: user errors must read as messages. */
const STACK_FRAME = /^\s+at .+\(.+:\d+:\d+\)$/m;

const SAFE_TO_EVICT = 'cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes';

function parseStream(text: string): unknown[] {
  return parseAllDocuments(text, { version: '1.1' }).map((document) => {
    expect(document.errors).toEqual([]);
    return document.toJS();
  });
}

function onlyDaemonSetTemplate(stdout: string): Pod {
  const documents = parseStream(stdout) as { kind: string; spec: { template: Pod } }[];
  expect(documents.map((document) => document.kind)).toEqual(['DaemonSet']);
  return documents[0]!.spec.template;
}

function container(containers: Container[] | undefined, name: string): Container {
  const found = containers?.find((candidate) => candidate.name === name);
  if (!found) throw new Error(`no container ${name} in ${JSON.stringify(containers?.map((c) => c.name))}`);
  return found;
}

function mountPath(target: Container, volume: string): string | undefined {
  return target.volumeMounts?.find((mount) => mount.name === volume)?.mountPath;
}

function expectRequests(target: Container): void {
  expect(target.resources?.requests?.cpu).toEqual(expect.anything());
  expect(target.resources?.requests?.memory).toEqual(expect.anything());
}

/** Every change drainguard makes, one by one, on the pod template of a Contour DaemonSet. */
function expectSafeContourTemplate(template: Pod, gracePeriod: number): void {
  const names = template.spec.containers.map((candidate) => candidate.name);
  expect(names).not.toContain('shutdown-manager');
  expect((template.spec.initContainers ?? []).map((candidate) => candidate.name)).not.toContain('shutdown-manager');

  const envoy = container(template.spec.containers, 'envoy');
  const envoyConfigMount = mountPath(envoy, 'envoy-config');
  expect(envoyConfigMount).toBe('/config');

  // preStop: exec of the installed program, from inside /config/, draining over the admin socket.
  expect(envoy.lifecycle?.preStop?.httpGet).toBeUndefined();
  const command = envoy.lifecycle?.preStop?.exec?.command ?? [];
  expect(command[0]).toMatch(/^\/config\/.+\/envoy-shutdown$/);
  expect(command[1]).toBe('drain');
  const adminAt = command.indexOf('--admin');
  expect(adminAt).toBeGreaterThan(0);
  expect(command[adminAt + 1]).toBe('unix:/admin/admin.sock');
  const deadlineAt = command.indexOf('--deadline');
  expect(deadlineAt).toBeGreaterThan(0);
  const deadline = /^(\d+)s$/.exec(command[deadlineAt + 1] ?? '');
  expect(deadline).not.toBeNull();
  expect(Number(deadline![1])).toBeGreaterThan(0);
  expect(Number(deadline![1])).toBeLessThan(gracePeriod);

  // An init container mounting envoy-config that installs the program into it, where preStop finds it.
  const installers = (template.spec.initContainers ?? []).filter((candidate) =>
    [...(candidate.command ?? []), ...(candidate.args ?? [])].includes('install'),
  );
  expect(installers).toHaveLength(1);
  const installer = installers[0]!;
  const installerMount = mountPath(installer, 'envoy-config');
  expect(installerMount).toBeDefined();
  const installerWords = [...(installer.command ?? []), ...(installer.args ?? [])];
  const programDirectoryInEnvoy = command[0]!.slice(0, command[0]!.lastIndexOf('/'));
  const programDirectoryInInstaller = installerMount! + programDirectoryInEnvoy.slice(envoyConfigMount!.length);
  expect(installerWords.some((word) => word === programDirectoryInInstaller || word.endsWith(`=${programDirectoryInInstaller}`))).toBe(true);
  // It must run after the bootstrap init container that writes the same volume.
  expect(template.spec.initContainers!.at(-1)).toBe(installer);

  // Liveness and startup probes on GET /ready :8002 (the kubelet stops both before preStop runs, so
  // neither needs to outlast the grace period).
  for (const probe of [envoy.livenessProbe, envoy.startupProbe]) {
    expect(probe?.httpGet?.path).toBe('/ready');
    expect(probe?.httpGet?.port).toBe(8002);
  }

  expectRequests(envoy);
  expectRequests(installer);

  const annotations = template.metadata?.annotations ?? {};
  expect(annotations['drainguard.io/status']).toEqual(expect.any(String));
  const safeToEvict = (annotations[SAFE_TO_EVICT] ?? '').split(',').map((name) => name.trim());
  expect(safeToEvict).toEqual(expect.arrayContaining(['envoy-admin', 'envoy-config']));
  // A Secret is not a scratch volume.
  expect(safeToEvict).not.toContain('envoycert');
}

describe.each(CONTOUR_FIXTURES)('drainguard inject -f %s', (fixture) => {
  let result: ReturnType<typeof drainguard>;
  beforeAll(() => {
    result = drainguard(['inject', '-f', fixture]);
  });

  test('exits 0 with a summary on stderr', () => {
    expect(result.stderr).toMatch(/^1 workload mutated, 0 unchanged, 0 skipped, 0 documents passed through$/m);
    expect(result.status).toBe(0);
  });

  test('prints a DaemonSet whose pod template shuts down safely', () => {
    const template = onlyDaemonSetTemplate(result.stdout);
    expect(template.spec.terminationGracePeriodSeconds).toBe(300);
    expectSafeContourTemplate(template, 300);
  });

  test("keeps what drainguard does not own: the workload, Envoy's args and ports, the bootstrap init container, the template's labels", () => {
    const input = parseStream(readFileSync(fixture, 'utf8'))[0] as { metadata: unknown; spec: { selector: unknown; template: Pod } };
    const output = parseStream(result.stdout)[0] as typeof input;
    expect(output.metadata).toEqual(input.metadata);
    expect(output.spec.selector).toEqual(input.spec.selector);
    const [envoyIn, envoyOut] = [input, output].map(({ spec }) => container(spec.template.spec.containers, 'envoy'));
    expect(envoyOut!.args).toEqual(envoyIn!.args);
    expect(envoyOut!.ports).toEqual(envoyIn!.ports);
    expect(envoyOut!.readinessProbe).toEqual(envoyIn!.readinessProbe);
    expect(container(output.spec.template.spec.initContainers, 'envoy-initconfig')).toEqual(
      container(input.spec.template.spec.initContainers, 'envoy-initconfig'),
    );
    // The template's labels stay; drainguard adds only its own (the reporter's selector).
    expect(output.spec.template.metadata?.labels).toEqual({ ...input.spec.template.metadata?.labels, [PROTECTED_LABEL]: 'true' });
    for (const [key, value] of Object.entries(input.spec.template.metadata?.annotations ?? {})) {
      expect(output.spec.template.metadata?.annotations?.[key]).toBe(value);
    }
  });

  test('injecting its own output gives identical bytes', () => {
    const again = drainguard(['inject', '-f', '-'], result.stdout);
    expect(again.status).toBe(0);
    expect(again.stdout).toBe(result.stdout);
    expect(again.stderr).toMatch(/^0 workloads mutated, 1 unchanged, 0 skipped/m);
  });
});

describe('drainguard inject, several inputs and views', () => {
  test('stdin gives the same output as the file', () => {
    const fixture = CONTOUR_FIXTURES[0]!;
    const fromStdin = drainguard(['inject', '-f', '-'], readFileSync(fixture, 'utf8'));
    expect(fromStdin.status).toBe(0);
    expect(fromStdin.stdout).toBe(drainguard(['inject', '-f', fixture]).stdout);
    expect(fromStdin.stdout).not.toBe('');
  });

  test('several -f: one YAML stream with every workload, in order; idempotent as a whole', () => {
    const result = drainguard(['inject', ...CONTOUR_FIXTURES.flatMap((fixture) => ['-f', fixture])]);
    expect(result.status).toBe(0);
    const documents = parseStream(result.stdout) as { kind: string; spec: { template: Pod } }[];
    expect(documents.map((document) => document.kind)).toEqual(['DaemonSet', 'DaemonSet', 'DaemonSet']);
    expect(documents.map((document) => container(document.spec.template.spec.containers, 'envoy').image)).toEqual([
      'docker.io/envoyproxy/envoy:distroless-v1.39.0',
      'docker.io/envoyproxy/envoy:v1.24.0',
      'docker.io/envoyproxy/envoy:distroless-v1.38.3',
    ]);
    for (const document of documents) expectSafeContourTemplate(document.spec.template, 300);
    expect(result.stderr).toMatch(/^3 workloads mutated, 0 unchanged, 0 skipped, 0 documents passed through$/m);
    expect(drainguard(['inject', '-f', '-'], result.stdout).stdout).toBe(result.stdout);
  });

  test('documents that are not workloads pass through byte for byte, comments included', () => {
    const service = '# the ingress Service\napiVersion: v1\nkind: Service\nmetadata: {name: envoy}   # flow style\nspec:\n  ports: [{port: 80}]\n';
    // The fixture starts with its own `---`.
    const input = `${service}${readFileSync(CONTOUR_FIXTURES[0]!, 'utf8')}`;
    const result = drainguard(['inject', '-f', '-'], input);
    expect(result.status).toBe(0);
    expect(result.stdout.startsWith(`${service}---\n`)).toBe(true);
    expect(parseStream(result.stdout)).toHaveLength(2);
    expect(result.stderr).toMatch(/1 workload mutated, 0 unchanged, 0 skipped, 1 document passed through/);
  });

  test('--diff prints a unified diff of input and output, and exits 1 because they differ', () => {
    const fixture = CONTOUR_FIXTURES[0]!;
    const result = drainguard(['inject', '--diff', '-f', fixture]);
    expect(result.status).toBe(1);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toBe(`--- ${fixture}\toriginal`);
    expect(lines[1]).toBe(`+++ ${fixture}\tinjected`);
    expect(lines[2]).toMatch(/^@@ -\d+(,\d+)? \+\d+(,\d+)? @@$/);
    expect(lines).toContain('-        name: shutdown-manager');
    expect(lines.some((line) => /^\+.*envoy-shutdown/.test(line))).toBe(true);
    // Lines drainguard does not touch appear only as context, never as removed.
    expect(lines).not.toContain('-        - --xds-address=contour');
    // Applying the diff to the input gives exactly what inject prints.
    expect(applyUnifiedDiff(readFileSync(fixture, 'utf8'), result.stdout)).toBe(drainguard(['inject', '-f', fixture]).stdout);
  });

  test.each(CONTOUR_FIXTURES)('--diff of %s shows only lines whose values change: nothing re-indented', (fixture) => {
    const input = readFileSync(fixture, 'utf8');
    const result = drainguard(['inject', '--diff', '-f', fixture]);
    expect(result.status).toBe(1);
    const output = applyUnifiedDiff(input, result.stdout);
    expect(unjustifiedChanges(input, output)).toEqual([]);
    // The sidecar's lines and Envoy's old preStop go; Envoy's mounts and the volumes stay as written.
    expect(result.stdout).toMatch(/^- +name: shutdown-manager$/m);
    expect(result.stdout).not.toMatch(/^- +- name: envoy-config$/m);
  });

  test('--diff exits 0 and prints nothing when there is nothing to change', () => {
    const injected = drainguard(['inject', '-f', CONTOUR_FIXTURES[0]!]).stdout;
    const result = drainguard(['inject', '--diff', '-f', '-'], injected);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^0 workloads mutated, 1 unchanged/m);
    expect(result.status).toBe(0);
  });

  test('--explain prints the shutdown timeline as a table', () => {
    const fixture = CONTOUR_FIXTURES[0]!;
    const result = drainguard(['inject', '--explain', '-f', fixture]);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain(`${fixture}: document 1: DaemonSet projectcontour/envoy: mutated (`);
    expect(result.stdout).toMatch(/^ {2}grace period {6}300s +the pod's terminationGracePeriodSeconds$/m);
    expect(result.stdout).toMatch(/^ {2}deadline {10}\d+s +grace period - \d+s \(drain\.deadlineMarginSeconds\)$/m);
    expect(result.stdout).toMatch(/^ {2}liveness budget {3}\d+s +probe added by drainguard; restarts a stuck Envoy after this long/m);
    expect(result.stdout).toMatch(/^ {2}admin address {5}unix:\/admin\/admin\.sock +Contour's admin socket: an emptyDir mounted at \/admin in Envoy$/m);
    for (const row of ['drain delay', 'minimum drain', 'min connections', 'warnings']) expect(result.stdout).toContain(`  ${row}`);
    expect(result.stdout).not.toContain('apiVersion');
  });
});

describe('drainguard inject --config', () => {
  let directory: string;
  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), 'drainguard-cli-'));
  });
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  test('settings from the file reach the core: disarm keeps the sidecar without its drain hook and probe', () => {
    const config = join(directory, 'disarm.yaml');
    writeFileSync(config, 'sidecarMode: disarm\n');
    const result = drainguard(['inject', '--config', config, '-f', CONTOUR_FIXTURES[1]!]);
    expect(result.stderr).toMatch(/^1 workload mutated/m);
    expect(result.status).toBe(0);
    const sidecar = container(onlyDaemonSetTemplate(result.stdout).spec.containers, 'shutdown-manager');
    expect(sidecar.lifecycle?.preStop).toBeUndefined();
    expect(sidecar.livenessProbe).toBeUndefined();
  });

  test('an invalid config file: exit 3 naming the file and the setting, no stack trace', () => {
    const config = join(directory, 'typo.yaml');
    writeFileSync(config, 'sidecarMode: delete\n');
    const result = drainguard(['inject', '--config', config, '-f', CONTOUR_FIXTURES[0]!]);
    expect(result.status).toBe(3);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(config);
    expect(result.stderr).toContain('sidecarMode');
    expect(result.stderr).not.toMatch(STACK_FRAME);
  });
});

describe('drainguard inject, errors', () => {
  test('invalid YAML: exit 3 naming the file, the document and the position; nothing on stdout', () => {
    const input = `${readFileSync(CONTOUR_FIXTURES[0]!, 'utf8')}---\nkind: Pod\nspec: [unclosed\n`;
    const result = drainguard(['inject', '-f', '-'], input);
    expect(result.status).toBe(3);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^error: <stdin>: document 2: invalid YAML at line \d+, column \d+: .+$/m);
    expect(result.stderr).not.toMatch(STACK_FRAME);
  });

  test('an alias without its anchor: exit 3 naming the position, not an internal error', () => {
    const result = drainguard(['inject', '-f', '-'], 'apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: *labels}\nspec:\n  containers: [{name: envoy}]\n');
    expect(result.status).toBe(3);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe('error: <stdin>: document 1: invalid YAML at line 3, column 29: the alias *labels has no anchor &labels before it\n');
  });

  test('an invalid override annotation: exit 3 naming file, document, workload and the denial', () => {
    const fixture = CONTOUR_FIXTURES[0]!;
    const input = readFileSync(fixture, 'utf8').replace(
      '    metadata:\n      labels:\n        app: envoy\n',
      '    metadata:\n      annotations:\n        drainguard.io/drain-delay: "forever"\n      labels:\n        app: envoy\n',
    );
    expect(input).toContain('drainguard.io/drain-delay');
    const result = drainguard(['inject', '-f', '-'], `apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n${input}`);
    expect(result.status).toBe(3);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^error: <stdin>: document 2: DaemonSet projectcontour\/envoy: denied: .*drainguard\.io\/drain-delay.*$/m);
    expect(result.stderr).not.toMatch(STACK_FRAME);
  });

  test('a missing file: exit 3 with a clear message, also with --diff (1 would mean differences)', () => {
    for (const args of [['inject', '-f', 'no/such/envoy.yaml'], ['inject', '--diff', '-f', 'no/such/envoy.yaml']]) {
      const result = drainguard(args);
      expect(result.status).toBe(3);
      expect(result.stderr).toBe('error: no/such/envoy.yaml: no such file\n');
    }
  });

  test('usage errors exit 2 and point to --help', () => {
    for (const args of [['inject'], ['inject', '-f', CONTOUR_FIXTURES[0]!, '--bogus'], ['frobnicate']]) {
      const result = drainguard(args);
      expect(result.status).toBe(2);
      expect(result.stderr).toMatch(/--help/);
      expect(result.stderr).not.toMatch(STACK_FRAME);
    }
  });
});

describe('drainguard', () => {
  test('npx drainguard --help lists every command', () => {
    const result = npx(['drainguard', '--help']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    for (const command of ['inject', 'serve', 'version', 'help']) expect(result.stdout).toMatch(new RegExp(`^ {2}${command} `, 'm'));
  });

  test('drainguard inject --help and drainguard help inject print the inject usage', () => {
    const direct = drainguard(['inject', '--help']);
    expect(direct.status).toBe(0);
    expect(direct.stdout).toContain('Usage: drainguard inject -f FILE');
    expect(direct.stdout).toContain('--explain');
    expect(direct.stdout).toMatch(/^ {2}1 {2}--diff only: the output differs from the input$/m);
    expect(drainguard(['help', 'inject']).stdout).toBe(direct.stdout);
  });

  test('version --client and --version print the package version (and nothing about a cluster)', () => {
    const { version } = JSON.parse(readFileSync(`${__dirname}/../../../package.json`, 'utf8')) as { version: string };
    for (const args of [['version', '--client'], ['--version']]) {
      const result = drainguard(args);
      expect(result.status).toBe(0);
      expect(result.stdout).toBe(`drainguard ${version}\n`);
    }
  });

  test('the Contour fixture paths exist inside the repository', () => {
    expect(CONTOUR_FIXTURES.map((fixture) => basename(fixture))).toHaveLength(3);
    for (const fixture of CONTOUR_FIXTURES) expect(readFileSync(fixture, 'utf8')).toContain('kind: DaemonSet');
  });
});

describe('drainguard inject -o json, and --diff as a patch', () => {
  test('--diff names the file, so GNU patch applies it to that file and gives exactly the injected YAML', () => {
    const directory = mkdtempSync(join(tmpdir(), 'drainguard-patch-'));
    try {
      const input = readFileSync(CONTOUR_FIXTURES[0]!, 'utf8');
      writeFileSync(join(directory, 'envoy.yaml'), input);
      const run = (args: string[], stdin = '') => spawnSync(NODE, [CLI_MAIN, ...args], { cwd: directory, input: stdin, encoding: 'utf8' });
      const injected = run(['inject', '-f', 'envoy.yaml']).stdout;
      const diff = run(['inject', '-f', 'envoy.yaml', '--diff']);
      expect(diff.status).toBe(1);
      expect(diff.stdout.split('\n').slice(0, 2)).toEqual(['--- envoy.yaml\toriginal', '+++ envoy.yaml\tinjected']);
      const patched = spawnSync('patch', ['-p0', '--quiet'], { cwd: directory, input: diff.stdout, encoding: 'utf8' });
      expect(patched.stderr).toBe('');
      expect(patched.status).toBe(0);
      expect(readFileSync(join(directory, 'envoy.yaml'), 'utf8')).toBe(injected);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  test('-o json: the one object as JSON, or a List of all; with --explain, the explanation; not with --diff', () => {
    const one = drainguard(['inject', '-f', CONTOUR_FIXTURES[0]!, '-o', 'json']);
    expect(one.status).toBe(0);
    const yaml = parseAllDocuments(drainguard(['inject', '-f', CONTOUR_FIXTURES[0]!]).stdout).map((document) => document.toJS() as unknown).filter((value) => value !== null);
    const json = JSON.parse(one.stdout) as { kind: string; items?: unknown[] };
    expect(yaml.length === 1 ? json : json.items).toEqual(yaml.length === 1 ? yaml[0] : yaml);
    const two = JSON.parse(drainguard(['inject', '-f', CONTOUR_FIXTURES[0]!, '-f', CONTOUR_FIXTURES[1]!, '-o', 'json']).stdout) as { kind: string; items: unknown[] };
    expect(two.kind).toBe('List');
    const explained = JSON.parse(drainguard(['inject', '-f', CONTOUR_FIXTURES[0]!, '--explain', '-o', 'json']).stdout) as { kind: string; shutdown: { event: string }[] }[];
    expect(explained.find((workload) => workload.kind === 'DaemonSet')!.shutdown.map((event) => event.event)).toEqual([
      'prestop-start',
      'health-check-failed',
      'minimum-drain',
      'deadline',
      'grace-period-end',
      'sigkill',
    ]);
    const refused = drainguard(['inject', '-f', CONTOUR_FIXTURES[0]!, '--diff', '-o', 'json']);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toBe('drainguard inject: --diff prints a unified diff; it cannot be -o json\n');
  });
});
