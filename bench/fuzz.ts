/**
 * `npm run bench:fuzz`: generated AdmissionReviews, valid and garbage, through a real `drainguard serve`
 * over HTTPS, mixed with reviews of ~3 MiB of each kind of large pod content and, at the same time,
 * hostile clients (a 1 GiB declared body, `Expect: 100-continue`, a long pipeline, a weak TLS suite, an
 * unfinished handshake; a connection flood between the phases) and, last, crowding clients from a
 * second loopback address (silent and idle connections, slow bodies; ./fuzz/crowding) while a client
 * shaped like the API server's sends good reviews, whose success rate and p99 are reported. A prober
 * checks `/healthz` throughout and the server's memory is watched. Exits non-zero on any 5xx, a crash, a valid review not answered as
 * the core decides, a patch that does not apply or leaves an invalid pod, or a hostile client handled
 * wrongly: those are correctness failures. The /healthz latency is reported against its 100 ms goal.
 *
 *   npm run bench:fuzz [-- --seed N] [-- --quick] [-- --crowding-only]
 */
import { readFileSync } from 'node:fs';
import { DEFAULT_COUNTS, generateCases, resubmissionCase, type CaseClass, type FuzzCase } from './fuzz/cases';
import { judge, type Verdict } from './fuzz/check';
import { rawCases, sendRaw } from './fuzz/raw';
import { describeHealthz, startHealthzProbe, type HealthzFigures } from './fuzz/healthz-probe';
import { runConnectionFlood, runHostileScenarios, type HostileOutcome } from './fuzz/hostile';
import { CROWD_ADDRESS, runCrowdingScenarios, type CrowdingOutcome } from './fuzz/crowding';
import { watchMemory, type MemoryFigures } from './fuzz/memory-watch';
import { admissionLimits, memoryLimitMiB } from '../src/server/sizing';
import { DEFAULT_HANDSHAKE_TIMEOUT_MS } from '../src/server/webhook-server';
import { createHttpsClient, type ClientTarget, type HttpsClient } from './lib/https-client';
import { contourPod, fixturePods } from '../test/support/generators/pods';
import { reviewBody } from '../test/support/generators/review';
import { beginSection, progress } from './lib/results';
import { startDrainguard, type RunningServer } from './lib/servers';
import { table } from './lib/stats';
import { createBenchCertificates } from './lib/tls';
import type { Pod } from '../src/mutate';

type Tally = Record<string, Record<string, number>>;

export interface FuzzReport {
  seed: number;
  total: number;
  /** Requests by case class, then by HTTP status (`0`: closed without an answer, `error`: transport error). */
  byClass: Tally;
  /** Valid reviews answered with a patch that applied (rfc6902) and left a pod passing validatePod. */
  patchesVerified: number;
  failures: number;
  failureSamples: string[];
  internalErrors: number;
  internalErrorSamples: string[];
  unexpectedStatuses: number;
  unexpectedStatusSamples: string[];
  /** Lines the server logged at level error or above. */
  serverErrorLogLines: number;
  serverAliveAtEnd: boolean;
  healthzAtEnd: number;
  /** /healthz probed on its own connection during the whole run. */
  healthz: HealthzFigures;
  /** The server's peak memory during the run, and the limit the chart sets for its limits. */
  memory: MemoryFigures & { memoryLimitMiB: number };
  hostile: HostileOutcome[];
  /** The crowding clients, each with the API-server-like client's figures while it ran. */
  crowding: CrowdingOutcome[];
  durationSeconds: number;
}

const CONCURRENCY = 8;
const SAMPLES_KEPT = 20;

class Findings {
  readonly byClass: Tally = {};
  total = 0;
  readonly lists = { failure: [] as string[], 'internal-error': [] as string[], 'unexpected-status': [] as string[] };
  readonly counts = { failure: 0, 'internal-error': 0, 'unexpected-status': 0 };
  /** Valid reviews whose patch was applied (rfc6902) and whose result passed validatePod. */
  patchesVerified = 0;

  count(cls: CaseClass, status: string): void {
    const row = (this.byClass[cls] ??= {});
    row[status] = (row[status] ?? 0) + 1;
    this.total += 1;
  }

  record(cls: CaseClass, verdict: Verdict): void {
    if (verdict.kind === 'ok') return;
    this.counts[verdict.kind] += 1;
    const list = this.lists[verdict.kind];
    if (list.length < SAMPLES_KEPT) list.push(`${cls}: ${verdict.detail}`);
  }
}

/** Runs `work` over `items` with at most `limit` in flight. */
async function pool<T>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
}

async function sendCases(client: HttpsClient, cases: readonly FuzzCase[], findings: Findings, patched: Pod[], label: string): Promise<void> {
  let done = 0;
  await pool(cases, CONCURRENCY, async (fuzzCase) => {
    try {
      const answer = await client.send(fuzzCase.request, 30_000);
      findings.count(fuzzCase.class, String(answer.status));
      const verdict = judge(fuzzCase, answer.status, answer.body);
      findings.record(fuzzCase.class, verdict);
      if (verdict.kind === 'ok' && verdict.patchedPod) {
        findings.patchesVerified += 1;
        patched.push(verdict.patchedPod);
      }
    } catch (error) {
      // The server may close a connection on a request it refuses (e.g. an oversized body) before the
      // client finished sending; that is only a failure for a valid review.
      findings.count(fuzzCase.class, 'error');
      if (fuzzCase.class.startsWith('valid:') || fuzzCase.class === 'large:content') findings.record(fuzzCase.class, { kind: 'failure', detail: `transport error: ${(error as Error).message}` });
    }
    done += 1;
    if (done % 2000 === 0) progress(`fuzz ${label}: ${done}/${cases.length}`);
  });
}

function numberFlag(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index < 0 ? fallback : Number(process.argv[index + 1]);
}

function errorLogLines(logPath: string | undefined): number {
  if (!logPath) return 0;
  return readFileSync(logPath, 'utf8')
    .split('\n')
    .filter((line) => {
      try {
        return (JSON.parse(line) as { level?: number }).level! >= 50;
      } catch {
        return false;
      }
    }).length;
}

/** A review of `pod` with `uid`, and one of the same pod grown past 64 KiB (the large lane). */
function crowdingReviews() {
  const pod = contourPod();
  const large = { ...pod, metadata: { ...pod.metadata, annotations: { ...pod.metadata?.annotations, padding: 'x'.repeat(100 * 1024) } } };
  return { small: (uid: string) => reviewBody(pod, uid), large: (uid: string) => reviewBody(large, uid) };
}

async function fuzz(server: RunningServer, target: ClientTarget, seed: number, quick: boolean, crowdingOnly: boolean): Promise<Omit<FuzzReport, 'durationSeconds'>> {
  const findings = new Findings();
  let crashed = false;
  server.child.once('exit', () => (crashed = true));
  const limits = admissionLimits();
  const hostile: HostileOutcome[] = [];

  const counts = quick ? { generated: 300, fixtureVariants: 150, notCreate: 20, fieldReplaced: 200, bodies: 50, largePerKind: 1 } : DEFAULT_COUNTS;
  const fixtures = fixturePods();
  const cases = crowdingOnly ? [] : generateCases(fixtures, counts, seed);
  progress(`fuzz: ${cases.length} generated cases (seed ${seed}) against pid ${server.pid}`);
  // Started only now: generating the cases blocks this process for seconds, which the prober would
  // otherwise count against the server.
  const memory = watchMemory(server.pid);
  const healthz = startHealthzProbe(target);
  const client = createHttpsClient(target, CONCURRENCY);
  const patched: Pod[] = [];
  try {
    const validBody = reviewBody(contourPod());
    const [, alongside] = await Promise.all([
      sendCases(client, cases, findings, patched, 'reviews'),
      // Hostile clients while the reviews are sent; the connection flood is kept for between the phases,
      // where it cannot take the connection a fuzz client reopens after a refused body (or the
      // prober's first one: it once ran here too, and the prober's failures at the start were that).
      crowdingOnly ? [] : runHostileScenarios(target, validBody, { handshakeTimeoutMs: DEFAULT_HANDSHAKE_TIMEOUT_MS }),
    ]);
    hostile.push(...alongside);
    if (!crowdingOnly) hostile.push(await runConnectionFlood(target, { maxConnections: limits.maxConnections }));

    // What the API server sends when it reinvokes the webhook: already patched pods must come back unchanged.
    const resubmitted = patched.slice(0, quick ? 100 : 1000).map(resubmissionCase);
    progress(`fuzz: ${resubmitted.length} patched pods sent again`);
    await sendCases(client, resubmitted, findings, [], 'resubmitted');

    // Last: while a crowd holds the server, nothing else the run sends could be told apart from it.
    progress('fuzz: crowding clients from a second address, with an API-server-like client');
    const crowding = await runCrowdingScenarios(target, crowdingReviews(), quick ? 5_000 : 15_000);
    for (const outcome of [...hostile, ...crowding]) {
      findings.count('hostile:client', outcome.ok ? 'handled' : 'MISHANDLED');
      if (!outcome.ok) findings.record('hostile:client', { kind: 'failure', detail: `${outcome.scenario}: ${outcome.detail}` });
    }

    const raw = crowdingOnly ? [] : rawCases(reviewBody(contourPod()), quick ? 40 : 300, seed + 50);
    progress(`fuzz: ${raw.length} raw TLS payloads`);
    await pool(raw, CONCURRENCY, async (rawCase) => {
      const answer = await sendRaw(target, rawCase.payload);
      findings.count('garbage:raw-protocol', String(answer.status));
      if (answer.status >= 500) findings.record('garbage:raw-protocol', { kind: 'failure', detail: `${rawCase.label}: ${answer.text}` });
    });

    const health = await client.send({ method: 'GET', path: '/healthz' }).catch(() => ({ status: 0 }));
    const healthzFigures = await healthz.stop();
    const memoryFigures = memory.stop();
    if (crashed) findings.record('valid:generated', { kind: 'failure', detail: 'drainguard serve exited during the fuzz run' });
    if (health.status !== 200) findings.record('valid:generated', { kind: 'failure', detail: `/healthz answered ${health.status} at the end` });
    return {
      seed,
      total: findings.total,
      byClass: findings.byClass,
      patchesVerified: findings.patchesVerified,
      failures: findings.counts.failure,
      failureSamples: findings.lists.failure,
      internalErrors: findings.counts['internal-error'],
      internalErrorSamples: findings.lists['internal-error'],
      unexpectedStatuses: findings.counts['unexpected-status'],
      unexpectedStatusSamples: findings.lists['unexpected-status'],
      serverErrorLogLines: errorLogLines(server.logPath),
      serverAliveAtEnd: !crashed,
      healthzAtEnd: health.status,
      healthz: healthzFigures,
      memory: { ...memoryFigures, memoryLimitMiB: memoryLimitMiB(limits) },
      hostile,
      crowding,
    };
  } finally {
    client.close();
  }
}

function render(report: FuzzReport): string {
  const statuses = [...new Set(Object.values(report.byClass).flatMap((row) => Object.keys(row)))].sort();
  const rows = Object.entries(report.byClass)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([cls, row]) => [cls, String(Object.values(row).reduce((a, b) => a + b, 0)), ...statuses.map((s) => String(row[s] ?? ''))]);
  const lines = [
    table([['class', 'total', ...statuses], ...rows]),
    '',
    `total ${report.total} requests in ${report.durationSeconds.toFixed(1)} s (seed ${report.seed})`,
    `valid reviews answered with a patch that applied and validated: ${report.patchesVerified}`,
    `failures: ${report.failures}${report.failureSamples.map((s) => `\n  - ${s}`).join('')}`,
    `internal errors (admitted unchanged, garbage input): ${report.internalErrors}${report.internalErrorSamples.map((s) => `\n  - ${s}`).join('')}`,
    `garbage answered with another 4xx than expected: ${report.unexpectedStatuses}${report.unexpectedStatusSamples.map((s) => `\n  - ${s}`).join('')}`,
    `server error log lines: ${report.serverErrorLogLines}; alive at end: ${report.serverAliveAtEnd}; /healthz at end: ${report.healthzAtEnd}`,
    `hostile clients: ${report.hostile.map((o) => `\n  - ${o.ok ? 'ok' : 'MISHANDLED'} ${o.scenario}: ${o.detail}`).join('')}`,
    `crowding clients (from ${CROWD_ADDRESS}; the API-server-like client from 127.0.0.1): ${report.crowding.map((o) => `\n  - ${o.ok ? 'ok' : 'MISHANDLED'} ${o.scenario}: ${o.detail}`).join('')}`,
    `/healthz during the run: ${describeHealthz(report.healthz)}`,
    `server memory: peak resident ${report.memory.peakRssMiB} MiB, peak anonymous ${report.memory.peakAnonMiB} MiB (chart limit for these limits: ${report.memory.memoryLimitMiB} MiB)`,
  ];
  return `${lines.join('\n')}\n`;
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const crowdingOnly = process.argv.includes('--crowding-only');
  const seed = numberFlag('seed', 20261129);
  const section = beginSection('fuzz', 'npm run bench:fuzz', quick);
  const certs = createBenchCertificates();
  const started = Date.now();
  let report: FuzzReport;
  try {
    const server = await startDrainguard(certs);
    try {
      const figures = await fuzz(server, { port: server.port, ca: certs.ca, servername: certs.servername }, seed, quick, crowdingOnly);
      report = { ...figures, durationSeconds: (Date.now() - started) / 1000 };
    } finally {
      await server.stop();
    }
  } finally {
    certs.remove();
  }
  const { path } = section.finish(report);
  process.stdout.write(`${render(report)}written to ${path}\n`);
  if (report.failures > 0) process.exitCode = 1;
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:fuzz failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
