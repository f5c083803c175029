/**
 * The built CLI as Kubernetes runs it: `node dist/cli/main.js serve` in its own process.
 * SIGTERM during load fails readiness first, keeps serving, loses no request in flight, exits 0.
 * `npm start` in a fresh copy of the repository, then the README's curl line. (`--tls-mode self`, which
 * needs an API server, runs against the real one: test/kube/admission-certificates.test.ts.)
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:https';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { dirname } from 'node:path';
import { ensureDevCertificates } from '../../../src/certs/dev';
import { NODE } from '../../support/repo';
import { assertDistBuilt, CLI_MAIN } from '../../support/build';
import { REPO_ROOT, admissionReview, fixturePods, httpsRequest, temporaryDirectory } from '../../integration/server/webhook-test-kit';

const MAIN = CLI_MAIN;

interface Served {
  child: ChildProcess;
  port: number;
  logs: Record<string, unknown>[];
  exited: Promise<number | null>;
}

/** Every server a test started and has not seen exit: afterEach stops them, even after a failed assertion. */
const running = new Set<Served>();

afterEach(async () => {
  for (const served of running) {
    served.child.kill('SIGKILL');
    await served.exited;
  }
});

/** Starts `drainguard serve` and resolves once its "listening" log line gives the port. */
function serve(args: string[], cwd = REPO_ROOT): Promise<Served> {
  const child = spawn(NODE, [MAIN, 'serve', ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: Record<string, unknown>[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const served: Served = { child, port: 0, logs, exited };
  running.add(served);
  void exited.then(() => running.delete(served));
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const entry = JSON.parse(line) as Record<string, unknown>;
      logs.push(entry);
      if (entry.msg === 'listening') resolve(Object.assign(served, { port: entry.port as number }));
    });
    void exited.then((code) => reject(new Error(`serve exited with ${code} before listening: ${stderr}`)));
  });
}

const directory = temporaryDirectory();
let certs: ReturnType<typeof ensureDevCertificates>;
let ca: string;

beforeAll(() => {
  // The processes under test are the compiled CLI, built by jest's globalSetup.
  assertDistBuilt();
  certs = ensureDevCertificates(directory.path);
  ca = readFileSync(certs.caCert, 'utf8');
}, 120_000);
afterAll(() => directory.remove());

interface LoadReport {
  ok: number;
  /** Requests written on an established connection that got no answer, or a non-200 answer. */
  inFlightFailures: string[];
  /** Connections the stopped server refused before any request was sent: not failures. */
  refused: number;
  okAfterNotReady: number;
}

/**
 * Keep-alive clients like kube-apiserver's, each sending reviews back to back until the server refuses
 * new connections. A request only counts as in flight once its connection is established.
 */
function runLoad(port: number, workers: number, isNotReadySeen: () => boolean, onResponse: (count: number) => void): Promise<LoadReport> {
  const body = JSON.stringify(admissionReview(fixturePods().find(({ name }) => name.startsWith('contour-main'))!.pod));
  const report: LoadReport = { ok: 0, inFlightFailures: [], refused: 0, okAfterNotReady: 0 };
  const worker = async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca, servername: 'localhost' });
    for (;;) {
      const outcome = await new Promise<'ok' | 'refused' | string>((resolve) => {
        let established = false;
        const req = request(
          { host: '127.0.0.1', port, path: '/mutate', method: 'POST', agent, headers: { 'content-type': 'application/json' } },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode === 200 ? 'ok' : `status ${res.statusCode}`));
            res.on('error', (error) => resolve(`response error ${error.message}`));
          },
        );
        req.on('socket', (socket) => {
          if (req.reusedSocket) established = true;
          else socket.once('secureConnect', () => (established = true));
        });
        req.on('error', (error: NodeJS.ErrnoException) => resolve(established ? `in flight: ${error.code ?? error.message}` : 'refused'));
        req.end(body);
      });
      if (outcome === 'ok') {
        report.ok += 1;
        if (isNotReadySeen()) report.okAfterNotReady += 1;
        onResponse(report.ok);
      } else if (outcome === 'refused') {
        report.refused += 1;
        agent.destroy();
        return;
      } else {
        report.inFlightFailures.push(outcome);
      }
    }
  };
  return Promise.all(Array.from({ length: workers }, worker)).then(() => report);
}

test('SIGTERM during load: readiness fails first, serving continues, no request in flight fails, exit 0', async () => {
  const server = await serve(['--host', '127.0.0.1', '--port', '0', '--tls-cert', certs.cert, '--tls-key', certs.key, '--shutdown-delay', '1s']);
  const readyz = () => httpsRequest({ port: server.port, method: 'GET', path: '/readyz', ca, servername: 'localhost' });
  expect((await readyz()).status).toBe(200);

  let notReadySeen = false;
  let signalled: Promise<void> | undefined;
  const load = runLoad(server.port, 6, () => notReadySeen, (count) => {
    if (count !== 100) return;
    server.child.kill('SIGTERM');
    // Poll readiness on fresh connections until it reports 503 (or the listener is gone).
    signalled = (async () => {
      for (;;) {
        const status = await readyz().then((r) => r.status, () => 'refused' as const);
        if (status === 503) {
          notReadySeen = true;
          return;
        }
        if (status === 'refused') throw new Error('listener closed before /readyz reported 503');
      }
    })();
  });

  const report = await load;
  await signalled;
  expect(await server.exited).toBe(0);

  expect(report.inFlightFailures).toEqual([]);
  expect(report.ok).toBeGreaterThan(100);
  // It kept answering reviews after readiness had failed (the shutdown delay).
  expect(report.okAfterNotReady).toBeGreaterThan(0);
  const messages = server.logs.map((entry) => entry.msg);
  expect(messages).toEqual(expect.arrayContaining(['signal received', 'shutting down: readiness failing, still serving', 'stopped']));
  expect(messages.indexOf('shutting down: readiness failing, still serving')).toBeLessThan(messages.indexOf('no longer accepting connections; finishing in-flight requests'));
}, 60_000);

test('admission logs are JSON lines carrying the review uid', async () => {
  const server = await serve(['--host', '127.0.0.1', '--port', '0', '--tls-cert', certs.cert, '--tls-key', certs.key, '--shutdown-delay', '0s']);
  const uid = 'b0a1c2d3-0000-4000-8000-000000000001';
  const result = await httpsRequest({ port: server.port, ca, servername: 'localhost', body: JSON.stringify(admissionReview(fixturePods()[0]!.pod, { uid })) });
  expect(result.status).toBe(200);
  server.child.kill('SIGTERM');
  expect(await server.exited).toBe(0);
  const entry = server.logs.find((log) => log.uid === uid);
  expect(entry).toMatchObject({ msg: 'admission', result: 'mutated', level: 30 });
});

test('flag mistakes exit 2 with a message', () => {
  const run = (args: string[]) => {
    try {
      execFileSync(NODE, [MAIN, 'serve', ...args], { cwd: REPO_ROOT, stdio: 'pipe' });
      return { code: 0, stderr: '' };
    } catch (error) {
      const failure = error as { status: number; stderr: Buffer };
      return { code: failure.status, stderr: failure.stderr.toString() };
    }
  };
  expect(run(['--tls-mode', 'files'])).toEqual({ code: 2, stderr: expect.stringContaining('needs --tls-cert and --tls-key') });
  expect(run(['--tls-mode', 'self', '--namespace', 'x'])).toEqual({ code: 2, stderr: expect.stringContaining('needs --secret-name, --webhook-config-name, --service-name') });
  expect(run(['--dev', '--tls-cert', 'x'])).toEqual({ code: 2, stderr: expect.stringContaining('--dev makes its own certificate') });
  expect(run(['--shutdown-delay', 'soon', '--dev'])).toEqual({ code: 2, stderr: expect.stringContaining('--shutdown-delay must be a duration') });
  expect(run(['--port', '99999', '--dev'])).toEqual({ code: 2, stderr: expect.stringContaining('--port must be 0-65535') });
  const self = ['--tls-mode', 'self', '--namespace', 'x', '--secret-name', 's', '--webhook-config-name', 'w', '--service-name', 'd'];
  expect(run([...self, '--certificate-validity', '365d'])).toEqual({ code: 2, stderr: expect.stringContaining("--certificate-validity must be whole hours, minutes or seconds such as 8760h, 30m or 90s; got '365d'") });
  expect(run([...self, '--certificate-validity', '720h'])).toEqual({ code: 2, stderr: expect.stringContaining('--certificate-renew-before (720h) must be shorter than --certificate-validity (720h)') });
  expect(run(['--tls-cert', 'c', '--tls-key', 'k', '--certificate-renew-before', '1h'])).toEqual({ code: 2, stderr: expect.stringContaining('--certificate-renew-before only apply to --tls-mode self') });
});

test('--dev stops at once: no shutdown delay unless one is asked for (nothing routes to a developer\'s server)', async () => {
  const server = await serve(['--dev', '--port', '0'], directory.path);
  server.child.kill('SIGTERM');
  expect(await server.exited).toBe(0);
  expect(server.logs.find((entry) => entry.msg === 'shutting down: readiness failing, still serving')).toMatchObject({ shutdownDelayMs: 0 });
});

test('--dev on a terminal writes readable, coloured lines instead of JSON', async () => {
  // script(1) gives the server a terminal. It stops reading the terminal soon after its child exits and
  // can lose the last lines on a busy machine, so its shell stays until the test has read them all: it
  // prints the server's exit status, then waits for a line the test types once it has seen that.
  const script = spawn('script', ['--quiet', '--return', '--command', `${NODE} ${MAIN} serve --dev --port 0; echo "server exit=$?"; read typed`, '/dev/null'], {
    cwd: directory.path,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, HOME: directory.path, TERM: 'xterm' },
  });
  const closed = new Promise<void>((resolve) => script.once('close', () => resolve()));
  let output = '';
  script.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let serverPid: number | undefined;
  const childOf = (pid: number | undefined) => Number(execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).trim());
  /** Resolves once the output matches `pattern`; rejects if script ends first. */
  const seen = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const look = () => {
        if (!pattern.test(output)) return;
        script.stdout!.off('data', look);
        resolve();
      };
      script.stdout!.on('data', look);
      look();
      void closed.then(() => reject(new Error(`script exited before its output matched ${pattern}:\n${output}`)));
    });
  try {
    await seen(/INFO \u001b\[0m listening .*port=\d+/);
    // script's child is its shell; the server is the shell's.
    serverPid = childOf(childOf(script.pid));
    process.kill(serverPid, 'SIGTERM');
    await seen(/server exit=\d+/);
    script.stdin!.end('\n');
    await closed;
    expect(output).toMatch(/^\d\d:\d\d:\d\d\.\d{3} \u001b\[32mINFO \u001b\[0m listening address=127\.0\.0\.1 port=\d+ ready=/m);
    expect(output).toMatch(/ stopped\r?$/m);
    expect(output).not.toContain('{"level"');
    expect(output).toContain('server exit=0');
    expect(script.exitCode).toBe(0);
  } finally {
    // The server runs in script's own session: stop it and script by their pids, even when the test failed early.
    try {
      serverPid ??= childOf(childOf(script.pid));
    } catch {
      // script has no shell or server (any more).
    }
    for (const pid of [serverPid, script.pid]) {
      try {
        if (pid !== undefined) process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await closed;
  }
}, 60_000);

/** The README's curl line, run verbatim (port substituted): the README must stay true. */
function readmeCurlLine(): string {
  const line = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith('curl ') && l.includes('examples/admission-review.json'));
  if (line === undefined) throw new Error('no curl line posting examples/admission-review.json in README.md');
  return line;
}

/** What a fresh clone holds: tracked and new, non-ignored files (no dist/, no certs/), plus installed node_modules. */
function freshCopy(): { path: string; remove: () => void } {
  const copy = temporaryDirectory();
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: REPO_ROOT })
    .toString()
    .split('\0')
    .filter((file) => file !== '' && existsSync(join(REPO_ROOT, file)));
  for (const file of files) {
    mkdirSync(dirname(join(copy.path, file)), { recursive: true });
    cpSync(join(REPO_ROOT, file), join(copy.path, file));
  }
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(copy.path, 'node_modules'));
  return copy;
}

test('npm start on a fresh copy serves the README curl line, and SIGTERM to npm stops the server', async () => {
  const copy = freshCopy();
  expect(existsSync(join(copy.path, 'certs/ca.crt'))).toBe(false);
  // Its own process group, so the test can stop npm and the server it started together.
  const npm = spawn('npm', ['start', '--', '--port', '0'], { cwd: copy.path, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  // 'close': npm and the server it started have exited and released the pipes.
  const exited = new Promise<number | null>((resolve) => npm.once('close', (code) => resolve(code)));
  const npmExited = new Promise<void>((resolve) => npm.once('exit', () => resolve()));
  try {
    let output = '';
    npm.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const port = await new Promise<number>((resolve, reject) => {
      createInterface({ input: npm.stdout! }).on('line', (line) => {
        output += `${line}\n`;
        if (!line.startsWith('{')) return; // npm's banner and tsc
        const entry = JSON.parse(line) as { msg?: string; port?: number };
        if (entry.msg === 'listening') resolve(entry.port!);
      });
      void exited.then((code) => reject(new Error(`npm start exited with ${code}:\n${output}`)));
    });
    expect(existsSync(join(copy.path, 'certs/ca.crt'))).toBe(true);

    const curl = readmeCurlLine().replace('https://127.0.0.1:8443/', `https://127.0.0.1:${port}/`);
    const printed = execFileSync('bash', ['-o', 'pipefail', '-c', curl], { cwd: copy.path }).toString();
    const patch = JSON.parse(printed) as { op: string; path: string }[];
    expect(patch.length).toBeGreaterThan(0);
    expect(patch).toEqual(expect.arrayContaining([expect.objectContaining({ op: 'replace', path: '/spec/containers/1/lifecycle/preStop' })]));
    expect(patch).toEqual(expect.arrayContaining([expect.objectContaining({ op: 'remove', path: '/spec/containers/0' })]));

    // SIGTERM to npm alone (as a process manager or an IDE sends it) stops the server too. npm exits only
    // after the script it runs has: once it is gone, nothing may answer on the port any more.
    npm.kill('SIGTERM');
    await npmExited;
    const afterStop = await httpsRequest({ port, method: 'GET', path: '/healthz', ca: readFileSync(join(copy.path, 'certs/ca.crt'), 'utf8'), servername: 'localhost' }).then(
      () => 'answered',
      (error: NodeJS.ErrnoException) => error.code,
    );
    expect(afterStop).toBe('ECONNREFUSED');
  } finally {
    // Backstop for a failed assertion: the whole process group, whatever is still running.
    try {
      process.kill(-npm.pid!, 'SIGKILL');
    } catch {
      // Already gone.
    }
    await exited;
    copy.remove();
  }
}, 120_000);
