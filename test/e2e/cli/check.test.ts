/**
 * The built CLI, `node dist/cli/main.js check`, run as its own process against the Kubernetes API
 * double with kubeconfig files, as an operator or a cron job runs it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { CheckReport } from '../../../src/check/report';
import { NODE, REPO_ROOT } from '../../support/repo';
import { assertDistBuilt, CLI_MAIN } from '../../support/build';
import { KubeApiDouble } from '../../support/kube-api-double';
import { temporaryDirectory } from '../../integration/server/webhook-test-kit';
import { installDrainguard, namespace, OPT_IN, pod, templates } from '../../integration/check/cluster-scenario';

interface Finished {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Every CLI process a test started and has not seen exit: afterEach kills them, even after a failure. */
const running = new Set<ChildProcess>();
afterEach(() => {
  for (const child of running) child.kill('SIGKILL');
});

/** Runs the CLI without blocking this process, which serves the API double the CLI talks to. */
function drainguard(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Finished> {
  const child = spawn(NODE, [CLI_MAIN, ...args], { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '', HOME: directory.path, ...env } });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) =>
    child.once('close', (status) => {
      running.delete(child);
      resolve({ status, stdout, stderr });
    }),
  );
}

/** A port nothing listens on: bound once, then released. */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

const directory = temporaryDirectory();
let double: KubeApiDouble;
let kubeconfig: string;

beforeAll(() => assertDistBuilt());
afterAll(() => directory.remove());
beforeEach(async () => {
  double = await KubeApiDouble.start();
  await installDrainguard(double);
  double.put(namespace('projectcontour', OPT_IN));
  double.put(pod(templates.contour(), { name: 'envoy-protected', namespace: 'projectcontour', owner: { kind: 'DaemonSet', name: 'envoy' }, state: 'protected' }));
  kubeconfig = join(directory.path, 'kubeconfig');
  writeFileSync(kubeconfig, double.kubeconfigYaml());
});
afterEach(async () => {
  await double.close();
});

test('a cluster where every Envoy pod is protected: one line per check, a status line, exit 0', async () => {
  const before = double.requests.length;
  const result = await drainguard(['check', '-A', '--kubeconfig', kubeconfig]);
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  const lines = result.stdout.split('\n');
  expect(lines[0]).toBe(`drainguard check: context double (${double.url})`);
  expect(lines).toEqual(
    expect.arrayContaining([
      'installation',
      '√ MutatingWebhookConfiguration drainguard-drainguard-system exists (pods.drainguard.io)',
      '√ Service drainguard-system/drainguard has 2 ready endpoints (EndpointSlices)',
      expect.stringMatching(/^√ projectcontour\/envoy-protected: protected by drainguard \S+; drain: admin unix:\/admin\/admin\.sock, deadline \d+s/),
    ]),
  );
  expect(lines.filter((line) => line.startsWith('× '))).toEqual([]);
  expect(result.stdout).toMatch(/\nStatus: √ all 9 checks passed, 1 note\n$/);
  expect(double.requests.slice(before).filter((request) => request.method !== 'GET')).toEqual([]);
});

test('an unprotected workload in an unlabelled namespace: the fix commands, exit 1, and -o json for scripts', async () => {
  double.put(namespace('gateway'));
  double.put(pod(templates.contour(), { name: 'envoy-x1', namespace: 'gateway', owner: { kind: 'DaemonSet', name: 'envoy' } }));
  const before = double.requests.length;

  const text = await drainguard(['check', '-A', '--kubeconfig', kubeconfig]);
  expect(text.status).toBe(1);
  expect(text.stdout).toContain('× namespace gateway is not opted in: it lacks drainguard.io/inject=enabled (1 Envoy pod)\n');
  expect(text.stdout).toContain(
    [
      'daemonset gateway/envoy: 1 pod not rewritten by drainguard (envoy-x1)',
      '    kubectl label namespace gateway drainguard.io/inject=enabled',
      '    kubectl -n gateway rollout restart daemonset/envoy',
    ].join('\n'),
  );
  expect(text.stdout).toMatch(/\nStatus: × 2 of 11 checks failed, 1 note\n$/);

  const json = await drainguard(['check', '-A', '--kubeconfig', kubeconfig, '-o', 'json']);
  expect(json.status).toBe(1);
  const report = JSON.parse(json.stdout) as CheckReport;
  expect(report.summary).toEqual({ passed: 9, failed: 2, info: 1, ok: false });
  expect(report.fixes.map((fix) => fix.commands)).toEqual([
    ['kubectl label namespace gateway drainguard.io/inject=enabled', 'kubectl -n gateway rollout restart daemonset/envoy'],
  ]);
  // Read-only: the two runs sent nothing but GETs.
  expect(double.requests.slice(before).filter((request) => request.method !== 'GET')).toEqual([]);
});

test('$KUBECONFIG with several files is merged as kubectl merges it, and --context picks a context', async () => {
  const port = await closedPort();
  const unreachable = join(directory.path, 'unreachable');
  writeFileSync(
    unreachable,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'gone', cluster: { server: `https://127.0.0.1:${port}` } }],
      users: [{ name: 'nobody', user: { token: 'x' } }],
      contexts: [{ name: 'gone', context: { cluster: 'gone', user: 'nobody' } }],
      'current-context': 'gone',
    }),
  );
  const env = { KUBECONFIG: [unreachable, join(directory.path, 'missing'), kubeconfig].join(delimiter) };

  // The first file's current-context wins: that cluster is down, which is a clear error, not a trace.
  const down = await drainguard(['check'], env);
  // Not a finding but an error: above 1, like every command's errors.
  expect(down.status).toBe(3);
  expect(down.stdout).toBe('');
  expect(down.stderr).toBe(`error: drainguard check: cannot reach the API server at https://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}\n`);

  const picked = await drainguard(['check', '--context', 'double', '-n', 'projectcontour'], env);
  expect(picked.stderr).toBe('');
  expect(picked.status).toBe(0);
  expect(picked.stdout.split('\n')[0]).toBe(`drainguard check: context double (${double.url})`);
});

test('help, and flag mistakes exit 2', async () => {
  const help = await drainguard(['help', 'check']);
  expect(help.status).toBe(0);
  expect(help.stdout).toMatch(/^Usage: drainguard check \[-n NAMESPACE \| -A\]/);
  expect(help.stdout).toContain('--drainguard-namespace NAMESPACE');

  const both = await drainguard(['check', '-n', 'x', '-A', '--kubeconfig', kubeconfig]);
  expect(both.status).toBe(2);
  expect(both.stderr).toBe("drainguard check: -n/--namespace and -A/--all-namespaces exclude each other (see 'drainguard check --help')\n");
});
