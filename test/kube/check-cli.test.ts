/**
 * The built CLI, `node dist/cli/main.js check` and `version`, run as its own process against the real
 * API server with kubeconfig files, as an operator or a cron job runs it: the text report and its exit
 * codes, kubeconfig merging, a terminal's colours, `kubectl proxy`, and `check --pre`.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, join } from 'node:path';
import type { CheckReport } from '../../src/check/report';
import { chartNames, type InstallationNames } from '../../src/check/names';
import type { VersionReport } from '../../src/cli/version-command';
import { templates, VERSION } from '../support/check-pods';
import { assertDistBuilt } from '../support/build';
import {
  adminApi,
  clusterInfo,
  createNamespace,
  deleteNamespace,
  eventually,
  installDrainguard,
  uninstallDrainguard,
  uniqueSuffix,
  type DrainguardRelease,
} from '../support/cluster/lane';
import { temporaryDirectory } from '../integration/server/webhook-test-kit';
import { spawnDrainguard, stopAll, underTerminal, type Finished } from '../e2e/cli/spawn-cli';
import { createWorkload, podsOf, prepareNamespace } from './check-workloads';

const directory = temporaryDirectory();
let release: DrainguardRelease;
let names: InstallationNames;
/** Opted in before its Envoy Deployment was made: its pod is protected. */
let protectedNamespace: string;
/** Not opted in: its Envoy DaemonSet's pods are not. */
let unprotectedNamespace: string;
const cleanup: (() => Promise<unknown>)[] = [];

const server = () => clusterInfo().server;
const kubeconfig = () => clusterInfo().adminKubeconfig;
/** The admin kubeconfig's one context. */
const CONTEXT = 'drainguard-test';

beforeAll(async () => {
  assertDistBuilt();
  release = await installDrainguard('check-cli');
  cleanup.push(() => uninstallDrainguard(release));
  names = chartNames(release.release, release.namespace);
  [protectedNamespace, unprotectedNamespace] = await Promise.all([createNamespace('check-cli-protected', release.optIn), createNamespace('check-cli-unprotected')]);
  cleanup.push(() => deleteNamespace(protectedNamespace), () => deleteNamespace(unprotectedNamespace));
  await Promise.all([protectedNamespace, unprotectedNamespace].map((namespace) => prepareNamespace(adminApi(), namespace)));
  await createWorkload(adminApi(), protectedNamespace, 'DaemonSet', 'envoy', templates.contour(), { gated: true });
  await createWorkload(adminApi(), unprotectedNamespace, 'DaemonSet', 'envoy', templates.contour(), { gated: true });
  await eventually('each DaemonSet made its two pods', async () => {
    const counts = await Promise.all([protectedNamespace, unprotectedNamespace].map(async (namespace) => (await podsOf(adminApi(), namespace)).size));
    return counts.join() === '2,2' ? true : undefined;
  });
}, 240_000);

afterEach(() => stopAll());
afterAll(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
  directory.remove();
});

/** The built CLI, with an environment of its own (HOME a directory of this suite's). */
function drainguard(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Finished> {
  return spawnDrainguard(args, { env: { HOME: directory.path, ...env } });
}

/** `check` of one namespace for this suite's release. */
const checkArgs = (namespace: string, ...more: string[]) => ['check', '-n', namespace, '--release', release.release, '--drainguard-namespace', release.namespace, ...more];

/** A port nothing listens on: bound once, then released. */
async function closedPort(): Promise<number> {
  const listener = createServer().listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const { port } = listener.address() as { port: number };
  listener.close();
  await once(listener, 'close');
  return port;
}

test('a namespace whose Envoy pods are all protected: one line per check, a status line, exit 0', async () => {
  const result = await drainguard([...checkArgs(protectedNamespace), '--kubeconfig', kubeconfig()]);
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  const lines = result.stdout.split('\n');
  expect(lines[0]).toBe(`drainguard check: context ${CONTEXT} (${server()})`);
  expect(lines).toEqual(
    expect.arrayContaining([
      'installation',
      `√ MutatingWebhookConfiguration ${names.webhookConfiguration} exists (pods.drainguard.io)`,
      `√ Service ${release.namespace}/${names.service} has 1 ready endpoint (EndpointSlices)`,
      expect.stringMatching(new RegExp(`^√ ${protectedNamespace}/envoy-\\w+: protected by drainguard \\S+; drain: admin unix:/admin/admin\\.sock, deadline \\d+s`)),
      // The test cluster's nodes (kubelet 1.37, containerd 2.1.4) could take the other delivery mode: a note.
      'nodes (image volumes)',
      'ℹ 2 of 2 nodes can mount image volumes: what installer.delivery: image-volume needs on every node that runs Envoy (installer.delivery: copy now)',
    ]),
  );
  expect(lines.filter((line) => line.startsWith('× '))).toEqual([]);
  expect(result.stdout).toMatch(/\nStatus: √ all 10 checks passed, 4 notes\n$/);
});

test('an unprotected workload in a namespace not opted in: the fix commands, exit 1, and -o json for scripts', async () => {
  const key = Object.keys(release.optIn)[0]!;
  const pods = [...(await podsOf(adminApi(), unprotectedNamespace)).keys()].sort();
  const text = await drainguard([...checkArgs(unprotectedNamespace), '--kubeconfig', kubeconfig()]);
  expect(text.status).toBe(1);
  expect(text.stdout).toContain(`× namespace ${unprotectedNamespace} is not opted in: it lacks ${key}=enabled (2 Envoy pods)\n`);
  expect(text.stdout).toContain(
    [
      `daemonset ${unprotectedNamespace}/envoy: 2 pods not rewritten by drainguard (${pods.join(', ')})`,
      `    kubectl label namespace ${unprotectedNamespace} ${key}=enabled`,
      `    kubectl -n ${unprotectedNamespace} rollout restart daemonset/envoy`,
    ].join('\n'),
  );
  expect(text.stdout).toMatch(/\nStatus: × 3 of 10 checks failed, 4 notes\n$/);

  const json = await drainguard([...checkArgs(unprotectedNamespace), '--kubeconfig', kubeconfig(), '-o', 'json']);
  expect(json.status).toBe(1);
  const report = JSON.parse(json.stdout) as CheckReport;
  expect(report.summary).toEqual({ passed: 7, failed: 3, info: 4, ok: false });
  expect(report.fixes.map((fix) => fix.commands)).toEqual([[`kubectl label namespace ${unprotectedNamespace} ${key}=enabled`, `kubectl -n ${unprotectedNamespace} rollout restart daemonset/envoy`]]);
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
  const env = { KUBECONFIG: [unreachable, join(directory.path, 'missing'), kubeconfig()].join(delimiter) };

  // The first file's current-context wins: that cluster is down, which is a clear error, not a trace.
  const down = await drainguard(['check'], env);
  // Not a finding but an error: above 1, like every command's errors.
  expect(down.status).toBe(3);
  expect(down.stdout).toBe('');
  expect(down.stderr).toBe(`error: drainguard check: cannot reach the API server at https://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}\n`);
  // --help says the same code.
  expect((await drainguard(['check', '--help'])).stdout).toMatch(/^ {2}3 {2}the cluster cannot be read at all/m);

  const picked = await drainguard([...checkArgs(protectedNamespace), '--context', CONTEXT], env);
  expect(picked.stderr).toBe('');
  expect(picked.status).toBe(0);
  expect(picked.stdout.split('\n')[0]).toBe(`drainguard check: context ${CONTEXT} (${server()})`);
});

describe('on a terminal', () => {
  const args = () => [...checkArgs(protectedNamespace), '--kubeconfig', kubeconfig()];
  const onTerminal = async (env: NodeJS.ProcessEnv) => {
    const run = await spawnDrainguard([], { command: underTerminal(args()), env: { HOME: directory.path, ...env } });
    expect(run.status).toBe(0);
    // The terminal writes CRLF line ends.
    return run.stdout.replaceAll('\r\n', '\n');
  };

  test('marks and headings are coloured; piped, the same text has no escape codes', async () => {
    const screen = await onTerminal({ TERM: 'xterm-256color' });
    expect(screen).toContain(`\u001b[32m√\u001b[39m MutatingWebhookConfiguration ${names.webhookConfiguration} exists`);
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

test('through kubectl proxy: a loopback http:// server works; a plain-HTTP server elsewhere is refused before any request, truthfully', async () => {
  const proxy = spawn('kubectl', ['proxy', '--port=0', '--kubeconfig', kubeconfig()], { env: { PATH: process.env.PATH ?? '', HOME: directory.path } });
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
    const config = (address: string) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'proxy', cluster: { server: address } }],
        users: [{ name: 'nobody', user: {} }],
        contexts: [{ name: 'proxy', context: { cluster: 'proxy', user: 'nobody' } }],
        'current-context': 'proxy',
      });
    writeFileSync(viaProxy, config(`http://127.0.0.1:${port}`));
    const result = await drainguard([...checkArgs(protectedNamespace), '--kubeconfig', viaProxy]);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout.split('\n')[0]).toBe(`drainguard check: context proxy (http://127.0.0.1:${port})`);

    // 0.0.0.0 reaches this machine too (the proxy would answer), but it is no loopback address: refused by rule.
    writeFileSync(viaProxy, config(`http://0.0.0.0:${port}`));
    const refused = await drainguard([...checkArgs(protectedNamespace), '--kubeconfig', viaProxy]);
    expect(refused.status).toBe(3);
    expect(refused.stderr).toBe(
      `error: drainguard check: context "proxy": the API server http://0.0.0.0:${port} is plain HTTP on a non-loopback address; ` +
        'drainguard talks plain HTTP only to a loopback address (kubectl proxy), because credentials and answers would cross the network unencrypted: use its https:// address\n',
    );
  } finally {
    proxy.kill('SIGKILL');
  }
});

describe('version', () => {
  test('the client, the Kubernetes server and the installed drainguard; -o json', async () => {
    const args = ['version', '--kubeconfig', kubeconfig(), '--release', release.release, '--drainguard-namespace', release.namespace];
    const text = await drainguard(args);
    expect(text.status).toBe(0);
    expect(text.stdout).toBe(
      [
        `drainguard ${VERSION}`,
        `server (context ${CONTEXT}, ${server()}):`,
        `  kubernetes  ${clusterInfo().kubernetesVersion}`,
        `  drainguard  ${VERSION} (Deployment ${release.namespace}/${names.deployment}, 1 of 1 replicas available)`,
        '',
      ].join('\n'),
    );
    const json = JSON.parse((await drainguard([...args, '-o', 'json'])).stdout) as VersionReport;
    const [major, minor] = clusterInfo().kubernetesVersion.replace(/^v/, '').split('.');
    expect(json).toEqual({
      client: { version: VERSION },
      server: {
        context: CONTEXT,
        url: server(),
        kubernetes: { gitVersion: clusterInfo().kubernetesVersion, major, minor, platform: `linux/${process.arch === 'arm64' ? 'arm64' : 'amd64'}` },
        drainguard: { version: VERSION, deployment: `${release.namespace}/${names.deployment}`, availableReplicas: 1, replicas: 1 },
        problems: [],
      },
    });
    expect((await drainguard(['--version'])).stdout).toBe(`drainguard ${VERSION}\n`);
  });

  test('an unreachable cluster or a missing installation is reported, and the status is still 0', async () => {
    const port = await closedPort();
    const gone = join(directory.path, 'gone');
    writeFileSync(gone, readFileSync(kubeconfig(), 'utf8').replace(server(), `https://127.0.0.1:${port}`));
    const down = await drainguard(['version', '--kubeconfig', gone]);
    expect(down.status).toBe(0);
    expect(down.stdout).toBe(
      `drainguard ${VERSION}\nserver (context ${CONTEXT}, https://127.0.0.1:${port}):\n  cannot reach the API server at https://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}\n`,
    );
    const absent = `absent-${uniqueSuffix()}`;
    const other = await drainguard(['version', '--kubeconfig', kubeconfig(), '--release', absent]);
    expect(other.status).toBe(0);
    expect(other.stdout).toContain(`  drainguard is not installed as release ${absent} in drainguard-system (Deployment drainguard-system/${absent}-drainguard not found)\n`);
  });
});

test('check --pre as a process: a text report of the cluster before installing', async () => {
  const namespace = `check-cli-pre-${uniqueSuffix()}`;
  const result = await drainguard(['check', '--pre', '--drainguard-namespace', namespace, '--kubeconfig', kubeconfig()]);
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  const minor = clusterInfo().kubernetesVersion.split('.')[1];
  expect(result.stdout).toContain(`before installing release drainguard in ${namespace} with tls.mode self\n`);
  expect(result.stdout).toContain(`√ Kubernetes 1.${minor} (${clusterInfo().kubernetesVersion}): 1.27 or newer\n`);
  // The test cluster's nodes run containerd 2.1.4 under a 1.37 kubelet: image volumes mount everywhere.
  expect(result.stdout).toContain(`ℹ the cluster can use installer.delivery: image-volume: Kubernetes 1.${minor}: ImageVolume GA, always on; 2 of 2 nodes can mount image volumes\n`);
  expect(result.stdout).toMatch(/\nStatus: √ all 4 checks passed, 2 notes\n$/);
});
