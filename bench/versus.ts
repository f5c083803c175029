/**
 * `npm run bench:versus -- --base DIR`: this checkout's `drainguard serve` against another built
 * checkout's (an older commit in a temporary worktree), and the express fixed answer as the common
 * yardstick, under wrk (Debian's package: C, one thread, so the servers keep the other core) with 32
 * keep-alive connections sending the Contour pod's review over the same TLS (one certificate, one key).
 *
 * Interleaved: every round runs each server once, in an order rotated from round to round, so a
 * neighbour's burst on a shared machine lands on all of them instead of on whichever ran during it.
 * Per run: wrk's answers per second, and the CPU time (user + system, /proc) the server process used
 * per answer, which a busy machine disturbs far less than the rate.
 *
 * What the CPU per answer is made of, so a difference between the two commits can be placed: this
 * checkout runs a second time with Node's defaults instead of its chart's settings (the chart's
 * NODE_OPTIONS and malloc threshold, lib/chart-runtime.ts), and each round also times each checkout's
 * decision alone (`decideBody` of dist/server/decide-body.js on the same review in a loop, in its own
 * process with Node's defaults: parse, the core, the answer's text; no HTTP, TLS or logging).
 *
 *   git worktree add --detach /tmp/drainguard-base 6dbce9c && (cd /tmp/drainguard-base && npm ci)
 *   npm run bench:versus -- --base /tmp/drainguard-base [--rounds 6] [--seconds 10] [--connections 32]
 *
 * Written to bench/results.json (section `versus`), with the load average at start and end.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chartRuntimeEnv, measuredEnv } from './lib/chart-runtime';
import { createHttpsClient } from './lib/https-client';
import { readCpuSeconds } from './lib/processes';
import { beginSection, progress } from './lib/results';
import { startDrainguard, startServer, type RunningServer } from './lib/servers';
import { table } from './lib/stats';
import { createBenchCertificates } from './lib/tls';
import { contourPod } from '../test/support/generators/pods';
import { reviewBody } from '../test/support/generators/review';
import { REPO_ROOT } from '../test/support/repo';

export interface VersusSettings {
  base: string;
  rounds: number;
  seconds: number;
  warmupSeconds: number;
  connections: number;
}

/** What `npm run bench:versus` writes to bench/results.json (section `versus`). */
export interface VersusFigures {
  settings: VersusSettings;
  baseCommit: string;
  thisCommit: string;
  /** The Node settings the base ran with: its chart's (lib/chart-runtime.ts), `{}` for Node's defaults. */
  baseRuntime?: Record<string, string>;
  /** Base, this checkout, the express fixed answer, then this checkout with Node's defaults. */
  contenders: ContenderFigures[];
  /** Each checkout's decision alone (base, then this); absent when a checkout has no dist/server/decide-body.js. */
  decisions?: DecisionFigures[];
}

export interface DecisionFigures {
  name: string;
  /** CPU time per decision, all rounds together. */
  cpuMicrosPerDecision: number;
  roundMicros: number[];
}

interface WrkRun {
  requestsPerSecond: number;
  requests: number;
  non2xx: number;
  socketErrors: number;
  latencyP99Ms: number;
  cpuMicrosPerRequest: number;
}

export interface ContenderFigures {
  name: string;
  /** Answers over time, all rounds together. */
  requestsPerSecond: number;
  /** Each round's rate, in round order. */
  roundRates: number[];
  cpuMicrosPerRequest: number;
  /** This contender's rate over the express fixed answer's, all rounds together. */
  toExpress: number;
  errors: number;
}

function flag(name: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`);
  return index < 0 ? undefined : process.argv[index + 1];
}

function numberFlag(name: string, fallback: number): number {
  const value = Number(flag(name) ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} needs a positive number`);
  return value;
}

const round1 = (value: number) => Math.round(value * 10) / 10;

/** wrk's duration unit to milliseconds (`812.00us`, `1.20ms`, `2.01s`). */
function millis(text: string): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (!match) return NaN;
  const scale = { us: 0.001, ms: 1, s: 1000, m: 60_000 }[match[2] as 'us' | 'ms' | 's' | 'm'];
  return Number(match[1]) * scale;
}

function runWrk(server: RunningServer, script: string, seconds: number, connections: number): WrkRun {
  const cpuBefore = readCpuSeconds(server.pid) ?? NaN;
  const wrk = spawnSync('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, `https://127.0.0.1:${server.port}${server.path}`], {
    encoding: 'utf8',
  });
  const cpuAfter = readCpuSeconds(server.pid) ?? NaN;
  if (wrk.status !== 0) throw new Error(`wrk failed (${wrk.status}): ${wrk.stderr}`);
  const out = wrk.stdout;
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const socketErrors = socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0;
  return {
    requestsPerSecond: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    requests,
    non2xx,
    socketErrors,
    latencyP99Ms: millis(/\s99%\s+(\S+)/.exec(out)?.[1] ?? ''),
    cpuMicrosPerRequest: ((cpuAfter - cpuBefore) / requests) * 1e6,
  };
}

/** Decisions timed per round and checkout, after as many unmeasured ones (the JIT's warm-up). */
const DECISIONS_PER_ROUND = 4000;

/**
 * The decision alone, as the server makes it for a small review (`decideBody`, ../src/server/decide-body.ts)
 * with the default configuration, in a process of its own with Node's defaults: CPU µs per decision, or
 * undefined when the checkout has no such module (a commit from before it).
 */
function timeDecision(root: string, bodyPath: string): number | undefined {
  const script = [
    "const { join } = require('node:path');",
    "const [root, bodyPath, count] = process.argv.slice(1);",
    "const { decideBody } = require(join(root, 'dist', 'server', 'decide-body.js'));",
    "const { defaultConfig } = require(join(root, 'dist', 'config', 'index.js'));",
    "const body = require('node:fs').readFileSync(bodyPath);",
    'const config = defaultConfig();',
    "const decide = () => { if (decideBody(body, config, undefined).httpStatus !== 200) throw new Error('the review was not answered 200'); };",
    'for (let i = 0; i < Number(count); i++) decide();',
    'const start = process.cpuUsage();',
    'for (let i = 0; i < Number(count); i++) decide();',
    'const used = process.cpuUsage(start);',
    'process.stdout.write(String((used.user + used.system) / Number(count)));',
  ].join('\n');
  if (!existsSync(join(root, 'dist', 'server', 'decide-body.js'))) return undefined;
  const run = spawnSync(process.execPath, ['-e', script, root, bodyPath, String(DECISIONS_PER_ROUND)], { encoding: 'utf8', env: measuredEnv({}) });
  if (run.status !== 0) throw new Error(`timing the decision of ${root} failed: ${run.stderr}`);
  return Number(run.stdout);
}

async function checkAnswer(server: RunningServer, body: string, ca: string, servername: string): Promise<void> {
  const client = createHttpsClient({ port: server.port, ca, servername }, 1);
  try {
    const answer = await client.send({ method: 'POST', path: server.path, headers: { 'content-type': 'application/json' }, body });
    if (answer.status !== 200) throw new Error(`${server.kind} answered ${answer.status}: ${answer.body.toString('utf8').slice(0, 200)}`);
  } finally {
    client.close();
  }
}

async function main(): Promise<void> {
  const base = flag('base');
  if (base === undefined) throw new Error('--base DIR is required: a checkout of the commit to compare with, built (npm ci)');
  if (!existsSync(join(resolve(base), 'dist', 'cli', 'main.js'))) throw new Error(`${base}/dist/cli/main.js does not exist: run npm ci (or npm run build) in ${base}`);
  if (spawnSync('wrk', ['--version']).error) throw new Error('wrk is not installed (Debian: apt-get install wrk)');
  const settings: VersusSettings = {
    base: resolve(base),
    rounds: numberFlag('rounds', 6),
    seconds: numberFlag('seconds', 10),
    warmupSeconds: numberFlag('warmup', 3),
    connections: numberFlag('connections', 32),
  };
  const baseCommit = spawnSync('git', ['-C', settings.base, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim() || 'base';
  const thisCommit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim() || 'this';
  const section = beginSection('versus', `npm run bench:versus -- --base ${settings.base}`, false);

  const certs = createBenchCertificates();
  const directory = mkdtempSync(join(tmpdir(), 'drainguard-versus-'));
  const body = reviewBody(contourPod(), 'b3c0ffee-0000-4000-8000-000000000003');
  const bodyPath = join(directory, 'review.json');
  writeFileSync(bodyPath, body);
  const script = join(directory, 'post.lua');
  writeFileSync(
    script,
    [
      'wrk.method = "POST"',
      'wrk.headers["Content-Type"] = "application/json"',
      `local file = io.open(${JSON.stringify(bodyPath)}, "rb")`,
      'wrk.body = file:read("*a")',
      'file:close()',
      '',
    ].join('\n'),
  );
  const servers: { name: string; server: RunningServer }[] = [];
  let contenders: ContenderFigures[];
  let decisions: DecisionFigures[] | undefined;
  try {
    servers.push({ name: `drainguard ${baseCommit} (base)`, server: await startDrainguard(certs, settings.base) });
    servers.push({ name: `drainguard ${thisCommit} (this checkout)`, server: await startDrainguard(certs) });
    servers.push({ name: 'express fixed answer', server: await startServer('express-fixed', certs, progress) });
    servers.push({ name: `drainguard ${thisCommit} (this checkout, Node's defaults)`, server: await startDrainguard(certs, undefined, {}) });
    for (const { server } of servers) await checkAnswer(server, body, certs.ca, certs.servername);
    for (const { name, server } of servers) {
      progress(`versus: warming up ${name} for ${settings.warmupSeconds} s`);
      runWrk(server, script, settings.warmupSeconds, settings.connections);
    }
    const runs = servers.map(() => [] as WrkRun[]);
    const roots = [settings.base, REPO_ROOT];
    const decisionRounds = roots.map(() => [] as number[]);
    for (let round = 0; round < settings.rounds; round++) {
      for (let turn = 0; turn < roots.length; turn++) {
        const index = (round + turn) % roots.length;
        const micros = timeDecision(roots[index]!, bodyPath);
        if (micros === undefined) continue;
        decisionRounds[index]!.push(micros);
        progress(`versus: round ${round + 1}/${settings.rounds} ${servers[index]!.name}: decision alone ${Math.round(micros)} µs CPU`);
      }
      for (let turn = 0; turn < servers.length; turn++) {
        const index = (round + turn) % servers.length;
        const { name, server } = servers[index]!;
        const run = runWrk(server, script, settings.seconds, settings.connections);
        runs[index]!.push(run);
        progress(`versus: round ${round + 1}/${settings.rounds} ${name}: ${Math.round(run.requestsPerSecond)}/s, ${Math.round(run.cpuMicrosPerRequest)} µs CPU each`);
      }
    }
    const rateOf = (list: WrkRun[]) => list.reduce((sum, r) => sum + r.requests, 0) / (list.length * settings.seconds);
    const expressRate = rateOf(runs[2]!);
    contenders = servers.map(({ name }, index) => {
      const list = runs[index]!;
      const requests = list.reduce((sum, r) => sum + r.requests, 0);
      return {
        name,
        requestsPerSecond: Math.round(rateOf(list)),
        roundRates: list.map((r) => Math.round(r.requestsPerSecond)),
        cpuMicrosPerRequest: round1((list.reduce((sum, r) => sum + r.cpuMicrosPerRequest * r.requests, 0) / requests)),
        toExpress: Math.round((rateOf(list) / expressRate) * 1000) / 1000,
        errors: list.reduce((sum, r) => sum + r.non2xx + r.socketErrors, 0),
      };
    });
    if (decisionRounds.every((list) => list.length > 0)) {
      decisions = decisionRounds.map((list, index) => ({
        name: servers[index]!.name,
        cpuMicrosPerDecision: round1(list.reduce((sum, micros) => sum + micros, 0) / list.length),
        roundMicros: list.map(round1),
      }));
    }
  } finally {
    for (const { server } of servers) await server.stop();
    certs.remove();
    rmSync(directory, { recursive: true, force: true });
  }

  const { path, envelope } = section.finish<VersusFigures>({ settings, baseCommit, thisCommit, baseRuntime: chartRuntimeEnv('server', settings.base), contenders, ...(decisions ? { decisions } : {}) });
  process.stdout.write(
    `${table([
      ['server', 'answers/s (all rounds)', 'each round', 'CPU per answer', 'of express', 'errors'],
      ...contenders.map((c) => [c.name, String(c.requestsPerSecond), c.roundRates.join(' '), `${c.cpuMicrosPerRequest} µs`, c.toExpress.toFixed(3), String(c.errors)]),
    ])}\n` +
      (decisions ? `${table([['decision alone (decideBody, Node\'s defaults)', 'CPU per decision', 'each round'], ...decisions.map((d) => [d.name, `${d.cpuMicrosPerDecision} µs`, d.roundMicros.join(' ')])])}\n` : '') +
      `wrk -t1 -c${settings.connections}, ${settings.rounds} rounds of ${settings.seconds} s, interleaved; ` +
      `load average (1 min) ${envelope.loadAverageAtStart.oneMinute} at start, ${envelope.loadAverageAtEnd.oneMinute} at end (${envelope.machine.cores} cores); written to ${path}\n`,
  );
  if (contenders.some((c) => c.errors > 0)) process.exitCode = 1;
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:versus failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
