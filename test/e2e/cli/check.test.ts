/**
 * The built CLI, `node dist/cli/main.js check`, run as its own process against the Kubernetes API
 * double with kubeconfig files, as an operator or a cron job runs it.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { CheckReport } from '../../../src/check/report';
import type { VersionReport } from '../../../src/cli/version-command';
import { VERSION } from '../../../src/version';
import { assertDistBuilt } from '../../support/build';
import { KubeApiDouble } from '../../support/kube-api-double';
import { temporaryDirectory } from '../../integration/server/webhook-test-kit';
import { DRAINGUARD_NAMESPACE, installDrainguard, namespace, OPT_IN, pod, templates } from '../../integration/check/cluster-scenario';
import { spawnDrainguard, stopAll, underTerminal, type Finished } from './spawn-cli';

afterEach(() => stopAll());

/** Runs the CLI without blocking this process, which serves the API double the CLI talks to. */
function drainguard(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Finished> {
  return spawnDrainguard(args, { env: { HOME: directory.path, ...env } });
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
  expect(result.stdout).toMatch(/\nStatus: √ all 10 checks passed, 2 notes\n$/);
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
  expect(text.stdout).toMatch(/\nStatus: × 2 of 12 checks failed, 2 notes\n$/);

  const json = await drainguard(['check', '-A', '--kubeconfig', kubeconfig, '-o', 'json']);
  expect(json.status).toBe(1);
  const report = JSON.parse(json.stdout) as CheckReport;
  expect(report.summary).toEqual({ passed: 10, failed: 2, info: 2, ok: false });
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
  // --help says the same code.
  expect((await drainguard(['check', '--help'])).stdout).toMatch(/^ {2}3 {2}the cluster cannot be read at all/m);

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

describe('on a terminal', () => {
  const args = () => ['check', '-A', '--kubeconfig', kubeconfig];
  const onTerminal = async (env: NodeJS.ProcessEnv) => {
    const run = await spawnDrainguard([], { command: underTerminal(args()), env: { HOME: directory.path, ...env } });
    expect(run.status).toBe(0);
    // The terminal writes CRLF line ends.
    return run.stdout.replaceAll('\r\n', '\n');
  };

  test('marks and headings are coloured; piped, the same text has no escape codes', async () => {
    const screen = await onTerminal({ TERM: 'xterm-256color' });
    expect(screen).toContain('\u001b[32m√\u001b[39m MutatingWebhookConfiguration drainguard-drainguard-system exists');
    expect(screen).toContain('\u001b[1minstallation\u001b[22m');
    const piped = await drainguard(args());
    expect(piped.stdout).not.toContain('\u001b[');
    expect(piped.stdout).toBe(screen.replace(/\u001b\[\d+m/g, ''));
  });

  test.each([
    ['NO_COLOR=1', { TERM: 'xterm', NO_COLOR: '1' }],
    ['TERM=dumb', { TERM: 'dumb' }],
  ])('%s on a terminal: plain', async (_name, env) => {
    expect(await onTerminal(env)).not.toContain('\u001b[');
  });

  test('an empty NO_COLOR is as good as unset (no-color.org)', async () => {
    expect(await onTerminal({ TERM: 'xterm', NO_COLOR: '' })).toContain('\u001b[32m√');
  });
});

describe('--wait', () => {
  const deploymentPath = /^\/apis\/apps\/v1\/namespaces\/drainguard-system\/deployments\/drainguard$/;
  const setAvailable = (available: number) => {
    const deployment = double.get('deployments', DRAINGUARD_NAMESPACE, 'drainguard')!;
    double.put({ ...deployment, apiVersion: 'apps/v1', kind: 'Deployment', status: { ...(deployment.status as object), availableReplicas: available } });
  };

  test('checks again until the Deployment is available, then prints the report with how long it took', async () => {
    setAvailable(0);
    const first = double.hold('GET', deploymentPath);
    const run = drainguard(['check', '-A', '--kubeconfig', kubeconfig, '--wait', '120s']);
    await first.arrived;
    first.release();
    // Registered before the release above lets any request go on: the next read of the Deployment is the second attempt's.
    const second = double.hold('GET', deploymentPath);
    await second.arrived;
    setAvailable(2);
    second.release();
    const result = await run;
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/\nStatus: √ all 10 checks passed, 2 notes\nInstallation healthy after \d+s \(2 attempts\)\n$/);
  });

  test('gives up when the time is over: exit 1, the last report, and why', async () => {
    setAvailable(0);
    const result = await drainguard(['check', '-A', '--kubeconfig', kubeconfig, '--wait', '1500ms', '-o', 'json']);
    expect(result.status).toBe(1);
    const report = JSON.parse(result.stdout) as CheckReport;
    // How many attempts fit depends on the machine's speed; the back-off itself is tested in test/unit/check/wait.test.ts.
    expect(report.wait).toMatchObject({ timedOut: true });
    expect(report.wait!.attempts).toBeGreaterThanOrEqual(1);
    expect(report.checks.find((check) => check.id === 'deployment')).toMatchObject({ verdict: 'fail' });
  });
});

describe('through kubectl proxy', () => {
  test('a loopback http:// server works; a plain-HTTP server elsewhere is refused before any request, truthfully', async () => {
    const proxy = spawn('kubectl', ['proxy', '--port=0', '--kubeconfig', kubeconfig], { env: { PATH: process.env.PATH ?? '', HOME: directory.path } });
    try {
      let printed = '';
      const port = await new Promise<string>((resolve, reject) => {
        proxy.stdout.on('data', (chunk: Buffer) => {
          printed += chunk.toString();
          const serving = /Starting to serve on 127\.0\.0\.1:(\d+)/.exec(printed);
          if (serving) resolve(serving[1]!);
        });
        proxy.once('exit', (code) => reject(new Error(`kubectl proxy exited ${code}: ${printed}`)));
      });
      const viaProxy = join(directory.path, 'proxy-kubeconfig');
      const config = (server: string) =>
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'proxy', cluster: { server } }],
          users: [{ name: 'nobody', user: {} }],
          contexts: [{ name: 'proxy', context: { cluster: 'proxy', user: 'nobody' } }],
          'current-context': 'proxy',
        });
      writeFileSync(viaProxy, config(`http://127.0.0.1:${port}`));
      const result = await drainguard(['check', '-A', '--kubeconfig', viaProxy]);
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
      expect(result.stdout.split('\n')[0]).toBe(`drainguard check: context proxy (http://127.0.0.1:${port})`);

      // 0.0.0.0 reaches this machine too, but it is no loopback address: refused by rule, not by a failed connection.
      const before = double.requests.length;
      writeFileSync(viaProxy, config(`http://0.0.0.0:${port}`));
      const refused = await drainguard(['check', '-A', '--kubeconfig', viaProxy]);
      expect(refused.status).toBe(3);
      expect(refused.stderr).toBe(
        `error: drainguard check: context "proxy": the API server http://0.0.0.0:${port} is plain HTTP on a non-loopback address; ` +
          'drainguard talks plain HTTP only to a loopback address (kubectl proxy), because credentials and answers would cross the network unencrypted: use its https:// address\n',
      );
      expect(double.requests.length).toBe(before);
    } finally {
      proxy.kill('SIGKILL');
    }
  });
});

describe('version', () => {
  test('the client, the Kubernetes server and the installed drainguard; -o json', async () => {
    const text = await drainguard(['version', '--kubeconfig', kubeconfig]);
    expect(text.status).toBe(0);
    expect(text.stdout).toBe(
      [
        `drainguard ${VERSION}`,
        `server (context double, ${double.url}):`,
        '  kubernetes  v1.32.0',
        `  drainguard  ${VERSION} (Deployment drainguard-system/drainguard, 2 of 2 replicas available)`,
        '',
      ].join('\n'),
    );
    const json = JSON.parse((await drainguard(['version', '--kubeconfig', kubeconfig, '-o', 'json'])).stdout) as VersionReport;
    expect(json).toEqual({
      client: { version: VERSION },
      server: {
        context: 'double',
        url: double.url,
        kubernetes: { gitVersion: 'v1.32.0', major: '1', minor: '32', platform: 'linux/amd64' },
        drainguard: { version: VERSION, deployment: 'drainguard-system/drainguard', availableReplicas: 2, replicas: 2 },
        problems: [],
      },
    });
    expect((await drainguard(['--version'])).stdout).toBe(`drainguard ${VERSION}\n`);
  });

  test('an unreachable cluster or a missing installation is reported, and the status is still 0', async () => {
    const port = await closedPort();
    const gone = join(directory.path, 'gone');
    writeFileSync(gone, double.kubeconfigYaml().replace(double.url, `https://127.0.0.1:${port}`));
    const down = await drainguard(['version', '--kubeconfig', gone]);
    expect(down.status).toBe(0);
    expect(down.stdout).toBe(
      `drainguard ${VERSION}\nserver (context double, https://127.0.0.1:${port}):\n  cannot reach the API server at https://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}\n`,
    );
    const other = await drainguard(['version', '--kubeconfig', kubeconfig, '--release', 'edge']);
    expect(other.status).toBe(0);
    expect(other.stdout).toContain('  drainguard is not installed as release edge in drainguard-system (Deployment drainguard-system/edge-drainguard not found)\n');
  });
});

test('check --pre as a process: a text report of the cluster before installing', async () => {
  const result = await drainguard(['check', '--pre', '--drainguard-namespace', 'edge-system', '--kubeconfig', kubeconfig]);
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  expect(result.stdout).toContain('before installing release drainguard in edge-system with tls.mode self\n');
  expect(result.stdout).toContain('√ Kubernetes 1.32 (v1.32.0): 1.27 or newer\n');
  // A note says whether the cluster could use image volumes (it is 1.32: no).
  expect(result.stdout).toContain('ℹ installer.delivery: image-volume is not for this cluster (copy, the default, is): Kubernetes 1.32:');
  expect(result.stdout).toMatch(/\nStatus: √ all 4 checks passed, 2 notes\n$/);
});
