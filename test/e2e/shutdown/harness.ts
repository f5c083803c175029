/**
 * The set-up every end-to-end drain suite shares, for one target architecture: a work directory with
 * the program installed in it, admin simulators on unix sockets inside it, client connections to the
 * simulated listeners, and cleanup of all of it (and of every started program) after each test, also
 * after a failed assertion.
 */
import { chmodSync, mkdtempSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EnvoyAdminSimulator, type RecordedRequest, type SimulatorOptions } from '../../support/envoy-admin-simulator';
import { buildRoot, hasRootTools, removeRoot } from '../../support/envoy/roots';
import { ensureBuilt, installTo, startProgram, stopStarted, type E2ECase, type FinishedRun, type LogLine, type RunningProcess, type ShutdownTarget } from '../../support/envoy/shutdown-executable';

export interface DrainHarness {
  readonly workDir: string;
  /** The installed program. */
  readonly program: string;
  simulator(options?: SimulatorOptions): Promise<EnvoyAdminSimulator>;
  /** `count` client connections to the simulator's first listener, once it counts them all. */
  openClients(sim: EnvoyAdminSimulator, count: number): Promise<Socket[]>;
  /** `envoy-shutdown drain --admin <sim or address> …flags`. */
  drain(sim: EnvoyAdminSimulator | string, flags: string[], env?: NodeJS.ProcessEnv): RunningProcess;
  /** The installed program with any arguments (paths under workDir are translated for a rooted target). */
  run(args: string[], env?: NodeJS.ProcessEnv): RunningProcess;
  /** A path (or `unix:` address) under workDir as the program sees it (inside its root, if it has one). */
  seen(value: string): string;
  /**
   * Makes a socket or FIFO the test created usable by the program: a rooted target runs as uid 65534,
   * which needs write permission on it (as Envoy's admin socket is for Envoy's user).
   */
  share(path: string): void;
}

/**
 * Registers the hooks in the calling describe block; the values are there once beforeAll ran. With an
 * `envoyRelease` (E2E_CASES), the simulators play that release unless a test asks for another.
 */
export function drainHarness(target: ShutdownTarget | E2ECase, name: string): DrainHarness {
  const played = 'envoyRelease' in target ? { version: target.envoyRelease } : {};
  let workDir = '';
  let program = '';
  let socketCounter = 0;
  const sims: EnvoyAdminSimulator[] = [];
  const clients: Socket[] = [];

  beforeAll(async () => {
    await ensureBuilt();
    workDir = mkdtempSync(join(tmpdir(), `envoy-shutdown-${name}-${target.arch}-`));
    if (target.inEmptyRoot) {
      // An acceptance setting: never skipped. CI runs as root on Debian, which has the tools.
      if (!hasRootTools()) throw new Error('the rooted target needs root, dpkg (Debian) and unshare (util-linux)');
      buildRoot(workDir, 'empty', target); // the work directory is the root: sockets and FIFOs live inside it
    }
    program = installTo(join(workDir, 'config/drainguard'), target);
  }, 120_000);
  afterAll(() => {
    if (workDir) removeRoot(workDir);
  });
  afterEach(async () => {
    await stopStarted();
    for (const c of clients.splice(0)) c.destroy();
    await Promise.all(sims.splice(0).map((s) => s.stop()));
  });

  const share = (path: string): void => {
    if (target.inEmptyRoot) chmodSync(path, 0o666);
  };

  return {
    get workDir() {
      return workDir;
    },
    get program() {
      return program;
    },
    async simulator(options = {}) {
      const sim = await EnvoyAdminSimulator.start({ unixSocketPath: join(workDir, `admin-${socketCounter++}.sock`), ...played, ...options });
      sims.push(sim);
      if (options.unixSocketPath === undefined) share(join(workDir, `admin-${socketCounter - 1}.sock`));
      return sim;
    },
    async openClients(sim, count) {
      const port = sim.listenerPorts[0] as number;
      const opened = await Promise.all(
        Array.from({ length: count }, () => new Promise<Socket>((resolve) => { const s = connect(port, '127.0.0.1', () => resolve(s)); clients.push(s); })),
      );
      await sim.waitFor(() => sim.activeConnections() === count);
      return opened;
    },
    drain(sim, flags, env = {}) {
      const admin = typeof sim === 'string' ? sim : sim.adminAddress;
      return startProgram(target, program, ['drain', '--admin', admin, ...flags], env, workDir);
    },
    run(args, env = {}) {
      return startProgram(target, program, args, env, workDir);
    },
    share,
    seen: (value) => (target.inEmptyRoot ? value.split(`${workDir}/`).join('/') : value),
  };
}

/**
 * What must hold of `/healthcheck/fail` in a drain that ended, on a loaded machine too. The program
 * tries it again only after an attempt that got no answer within its request timeout (correct under a
 * throttled Envoy, or a simulator starved of CPU), so the number of POSTs is not fixed; what is:
 * every POST is an attempt the program logged; every attempt but the last got no answer in time
 * (logged as a timeout); the last one was taken (2xx); the confirmation was asked only after the
 * simulator's answer to it, and logged after it; and when the first attempt was answered in time it is
 * the only one.
 */
export function expectHealthCheckFailedOnceAnswered(run: FinishedRun, sim: EnvoyAdminSimulator): void {
  const posts = sim.requests.filter((r) => r.method === 'POST' && r.path === '/healthcheck/fail');
  const attempts = run.logs.filter((l) => l.phase === 'healthcheck-fail');
  expect(attempts.map((l) => l.attempt)).toEqual(posts.map((_, i) => i + 1));
  expect(attempts.at(-1)).toMatchObject({ status: 200 });
  for (const retried of attempts.slice(0, -1)) {
    expect(retried).toMatchObject({ status: 'no-answer', error: expect.stringMatching(/^POST \/healthcheck\/fail: no complete answer within \d+ms/) });
  }
  const taken = posts.at(-1) as RecordedRequest;
  const confirm = sim.requests.find((r) => r.at > taken.at && (r.path === '/server_info' || r.path === '/ready'));
  expect(confirm?.at).toBeGreaterThanOrEqual(taken.answeredAt as number);
  expect(run.logs.findIndex((l) => l.phase === 'healthcheck-confirm')).toBeGreaterThan(run.logs.lastIndexOf(attempts.at(-1) as LogLine));
  if (attempts[0]?.status === 200) expect(posts).toHaveLength(1);
}

/**
 * The POSTs of a drain that ended, in the program's causal order, which holds on a loaded machine too:
 * `/healthcheck/fail` one or more times (an attempt left unanswered within the request timeout is tried
 * again), then `drainPath`, sent only once Envoy had answered the last attempt. This is what the
 * simulator alone shows; with the program's log, expectHealthCheckFailedOnceAnswered says more.
 */
export function expectFailedThenDrained(sim: EnvoyAdminSimulator, drainPath: string): void {
  const posts = sim.requests.filter((r) => r.method === 'POST');
  const attempts = posts.slice(0, -1);
  expect(attempts.length).toBeGreaterThanOrEqual(1);
  expect(attempts.map((r) => r.path)).toEqual(attempts.map(() => '/healthcheck/fail'));
  expect(posts.at(-1)?.path).toBe(drainPath);
  expect(posts.at(-1)?.at).toBeGreaterThanOrEqual(attempts.at(-1)?.answeredAt as number);
}
