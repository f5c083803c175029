/**
 * The goals `npm run bench` reads its figures against, and the tables it reports. Benchmarks report;
 * nothing here fails a run. The same rows feed the terminal and docs/benchmarks.md.
 */
import type { GrowthReport } from '../growth';
import type { HttpReport, MicrosSummary, PacedFigures, ServerFigures } from '../http';
import type { ReporterReport } from '../report';
import type { KubeBenchFigures } from '../report-kube';
import type { ShutdownReport } from '../shutdown';
import type { CallTiming, TightLoopReport } from '../tight-loop';

export interface BenchFigures {
  tightLoop: TightLoopReport;
  growth: GrowthReport;
  http: HttpReport;
  shutdown: ShutdownReport;
  /** Absent in results written before the reporter had a benchmark. */
  report?: ReporterReport;
  /** The reporter and `check -A` on a real kube-apiserver (absent in results written before issue 33). */
  kube?: KubeBenchFigures;
}

export interface ReportRow {
  figure: string;
  value: string;
  goal: string;
  /** undefined: reported without a goal, or the figure could not be measured in this run. */
  met?: boolean;
  /** Shown in the last column of a figure reported without a goal. */
  note?: string;
}

/** The goals, each a number drainguard must reach in one run of `npm run bench`. */
export const GOALS = {
  throughputToExpress: 0.6,
  throughputToPepr: 3,
  decideTightLoopMicros: 20,
  decideInServerMicros: 40,
  p99RatePerSecond: 1000,
  p99Ms: 5,
  mutateContourMicros: 50,
  mutateLargeMicros: 2000,
  /** Issue-level goals for the drain program (docs/envoy-shutdown.md): host architecture, not emulated. */
  shutdownFirstRequestMs: 10,
  shutdownPeakRssMiB: 8,
  shutdownExecutableMB: 4,
  /** `drainguard report` with 10,000 watched pods and 100 drains/s (issues 22, 33): its p99 from termination to Event. */
  reporterLatencyP99Ms: 100,
  reporterCores: 1,
  /** Issue 33: resident when ready and at the peak, CPU per drain, spawn to ready. */
  reporterRssMiB: 96,
  reporterCpuPerDrainMs: 0.5,
  reporterReadyMs: 3000,
  /** Issue 33: `drainguard serve` resident after 30 s of 300 Contour reviews a second, and idle after it. */
  serveRssMiB: 96,
  /** CPU of one 10,000-listener stats poll, spent inside Envoy's cgroup once per poll interval (issue 25 item 7). */
  shutdownPollCpuMs: 10,
} as const;

/** peakRssMB is measured in MB (10^6 bytes); the goal is in MiB. */
const MIB_PER_MB = 1.048576;
const us = (value: number) => `${value.toFixed(1)} µs`;
const ms = (value: number) => `${value.toFixed(value < 10 ? 2 : 1)} ms`;
const rps = (value: number) => `${Math.round(value).toLocaleString('en-US')} req/s`;
const ratio = (value: number | undefined) => (value === undefined || Number.isNaN(value) ? 'not measured' : value.toFixed(2));
const timing = (t: CallTiming) => `${us(t.medianMicros)} median (mean ${us(t.meanMicros)}, p99 ${us(t.p99Micros)})`;
const inServer = (t: MicrosSummary) => `${us(t.medianMicros)} median (mean ${us(t.meanMicros)}, p99 ${us(t.p99Micros)}, ${t.samples} requests)`;

export function pacedAt(server: ServerFigures | undefined, rate: number): PacedFigures | undefined {
  return server?.paced.find((p) => p.ratePerSecond === rate);
}

/** One row per goal, in the order of the goals. */
export function goalRows({ tightLoop, growth, http, shutdown, report }: BenchFigures): ReportRow[] {
  return [...serverGoalRows({ tightLoop, growth, http, shutdown }), ...(report ? reporterGoalRows(report) : [])];
}

/** The reporter's goals: within the chart's memory limit, every drain reported, promptly, with CPU to spare. */
export function reporterGoalRows(report: ReporterReport): ReportRow[] {
  const scale = `${report.settings.pods.toLocaleString('en-US')} watched pods, ${report.settings.drainsPerSecond} drains/s`;
  return [
    {
      figure: `drainguard report resident memory when ready / at the peak, ${scale}`,
      value: `${report.rssReadyMiB} / ${report.peakRssMiB} MiB`,
      goal: `≤ ${GOALS.reporterRssMiB} MiB (the chart's limit: ${report.chartMemoryLimitMiB} MiB)`,
      met: report.rssReadyMiB <= GOALS.reporterRssMiB && report.peakRssMiB <= GOALS.reporterRssMiB,
    },
    {
      figure: `drainguard report: spawn to ready (the list of every pod), ${scale}`,
      value: `${(report.readyMs / 1000).toFixed(1)} s`,
      goal: `≤ ${GOALS.reporterReadyMs / 1000} s`,
      met: report.readyMs <= GOALS.reporterReadyMs,
    },
    {
      figure: `drainguard report: drains reported, ${scale}`,
      value: `${report.eventsCreated} of ${report.drainsSent}`,
      goal: 'all',
      met: report.eventsCreated === report.drainsSent,
    },
    {
      figure: `drainguard report: termination → pod Event p99, ${scale}`,
      value: `${report.reportLatencyMs.p99} ms (p50 ${report.reportLatencyMs.p50} ms)`,
      goal: `≤ ${GOALS.reporterLatencyP99Ms} ms`,
      met: report.reportLatencyMs.p99 <= GOALS.reporterLatencyP99Ms,
    },
    {
      figure: `drainguard report CPU per drain (4 watch events, 2 Event creates), ${scale}`,
      value: `${report.cpuPerDrainMs} ms (${report.cpuCoresWhileDraining} cores while draining)`,
      goal: `≤ ${GOALS.reporterCpuPerDrainMs} ms, ≤ ${GOALS.reporterCores} core`,
      met: report.cpuPerDrainMs <= GOALS.reporterCpuPerDrainMs && report.cpuCoresWhileDraining <= GOALS.reporterCores,
    },
  ];
}

function serverGoalRows({ tightLoop, growth, http, shutdown }: BenchFigures): ReportRow[] {
  const drainguard = http.servers.find((s) => s.server === 'drainguard');
  const atGoalRate = pacedAt(drainguard, GOALS.p99RatePerSecond);
  const pepr = http.servers.find((s) => s.server === 'pepr');
  const worstInServer = http.decisionInServer.paced
    .map((p) => ({ label: `at ${p.ratePerSecond} req/s`, timing: p.timing }))
    .concat([{ label: 'closed loop', timing: http.decisionInServer.max }])
    .reduce((worst, next) => (next.timing.medianMicros > worst.timing.medianMicros ? next : worst));
  const linearKinds = growth.kinds.filter((k) => k.linear);
  const { admissionLines, admissionsCounted, answersReceived } = http.drainguardLog;
  const pollPlus = shutdown.pollIntervalMs + 100;
  return [
    {
      figure: 'Pepr measured as a peer in the same interleaved run',
      value: pepr ? `Pepr ${http.pepr.version}: ${pepr.answer}` : `not run: ${http.pepr.startupError ?? 'unknown'}`,
      goal: 'present',
      met: pepr !== undefined,
    },
    {
      figure: 'throughput, drainguard / express fixed answer (closed loop)',
      value: ratio(http.ratios.drainguardToExpress),
      goal: `≥ ${GOALS.throughputToExpress.toFixed(2)}`,
      met: http.ratios.drainguardToExpress >= GOALS.throughputToExpress,
    },
    {
      figure: 'throughput, drainguard / Pepr (closed loop)',
      value: ratio(http.ratios.drainguardToPepr),
      goal: `≥ ${GOALS.throughputToPepr}`,
      ...(http.ratios.drainguardToPepr !== undefined ? { met: http.ratios.drainguardToPepr >= GOALS.throughputToPepr } : {}),
    },
    {
      figure: 'decideAdmission, Contour pod, tight loop',
      value: timing(tightLoop.decideAdmission),
      goal: `median ≤ ${GOALS.decideTightLoopMicros} µs`,
      met: tightLoop.decideAdmission.medianMicros <= GOALS.decideTightLoopMicros,
    },
    {
      figure: `decideAdmission per request inside the decision-only server (worst phase: ${worstInServer.label})`,
      value: inServer(worstInServer.timing),
      goal: `median ≤ ${GOALS.decideInServerMicros} µs`,
      met: worstInServer.timing.medianMicros <= GOALS.decideInServerMicros,
    },
    {
      figure: `drainguard p99 at a fixed ${GOALS.p99RatePerSecond} req/s, per-admission log line on`,
      value: atGoalRate ? `${ms(atGoalRate.latencyP99Ms)} (p50 ${ms(atGoalRate.latencyP50Ms)})` : 'not measured',
      goal: `≤ ${GOALS.p99Ms} ms`,
      ...(atGoalRate ? { met: atGoalRate.latencyP99Ms <= GOALS.p99Ms } : {}),
    },
    {
      figure: `cost per KiB flat from ${growth.settings.sizesKiB[0]} KiB to ${growth.settings.sizesKiB.at(-1)} KiB, every kind of content`,
      value: `${linearKinds.length} of ${growth.kinds.length} kinds linear${linearKinds.length < growth.kinds.length ? `; not: ${growth.kinds.filter((k) => !k.linear).map((k) => k.kind).join(', ')}` : ''}`,
      goal: `cost/KiB at the largest ≤ ${growth.settings.linearRatio} × at the smallest`,
      met: linearKinds.length === growth.kinds.length,
    },
    {
      figure: "drainguard's per-admission log line, written synchronously (pino's default destination)",
      value: `${admissionLines} lines for ${admissionsCounted} admissions in its metrics (${answersReceived} answers received by the clients)`,
      goal: 'one line per admission',
      met: admissionsCounted > 0 && admissionLines === admissionsCounted,
    },
    {
      figure: `mutate(), Contour pod (${tightLoop.podBytes} B), tight loop`,
      value: timing(tightLoop.mutate),
      goal: `median ≤ ${GOALS.mutateContourMicros} µs`,
      met: tightLoop.mutate.medianMicros <= GOALS.mutateContourMicros,
    },
    {
      figure: `mutate(), ${Math.round(tightLoop.mutateLarge.podBytes / 1024)} KiB pod, tight loop`,
      value: timing(tightLoop.mutateLarge),
      goal: `median ≤ ${GOALS.mutateLargeMicros / 1000} ms`,
      met: tightLoop.mutateLarge.medianMicros <= GOALS.mutateLargeMicros,
    },
    {
      figure: `envoy-shutdown start → first admin request, median/max of ${shutdown.firstAdminRequestMs.runs}`,
      value: `${ms(shutdown.firstAdminRequestMs.median)}/${ms(shutdown.firstAdminRequestMs.max)}`,
      goal: `≤ ${GOALS.shutdownFirstRequestMs} ms`,
      met: shutdown.firstAdminRequestMs.max <= GOALS.shutdownFirstRequestMs,
    },
    {
      figure: `envoy-shutdown peak RSS during a drain against ${shutdown.listeners.toLocaleString('en-US')} listeners' stats, median/max`,
      value: `${(shutdown.peakRssMB.median / MIB_PER_MB).toFixed(2)}/${(shutdown.peakRssMB.max / MIB_PER_MB).toFixed(2)} MiB`,
      goal: `≤ ${GOALS.shutdownPeakRssMiB} MiB`,
      met: shutdown.peakRssMB.max / MIB_PER_MB <= GOALS.shutdownPeakRssMiB,
    },
    ...shutdown.architectures.map((a) => ({
      figure: `envoy-shutdown executable, linux/${a.arch} (static, nothing ships beside it)`,
      value: `${(a.sizeBytes / 1e6).toFixed(2)} MB`,
      goal: `≤ ${GOALS.shutdownExecutableMB} MB`,
      met: a.sizeBytes / 1e6 <= GOALS.shutdownExecutableMB,
    })),
    {
      figure: `envoy-shutdown reaction (count at threshold → exit), poll ${shutdown.pollIntervalMs} ms, median/max`,
      value: `${ms(shutdown.reactionMs.median)}/${ms(shutdown.reactionMs.max)}`,
      goal: `≤ ${pollPlus} ms`,
      met: shutdown.reactionMs.max <= pollPlus,
    },
    {
      figure: `envoy-shutdown one stats poll of ${shutdown.listeners.toLocaleString('en-US')} listeners' gauges, back to back, mean of ${shutdown.poll.polls}`,
      value: `${ms(shutdown.poll.wallMs)} wall / ${ms(shutdown.poll.cpuMs)} CPU`,
      goal: `≤ ${GOALS.shutdownPollCpuMs} ms CPU`,
      met: shutdown.poll.cpuMs <= GOALS.shutdownPollCpuMs,
    },
  ];
}

/** The servers side by side: one row per server, as measured in the interleaved run. */
export function serverTable(http: HttpReport): string[][] {
  const rates = http.settings.rates;
  const express = http.servers.find((s) => s.server === 'express-fixed');
  const header = [
    'server',
    'max req/s',
    'ratio to express fixed answer',
    ...rates.map((rate) => `p50/p99 at ${rate} req/s`),
    `CPU µs/request at max / ${rates.map((rate) => `at ${rate}`).join(' / ')}`,
    'errors',
  ];
  const rows = http.servers.map((s) => {
    const errors = s.max.errors + s.max.non2xx + s.paced.reduce((n, p) => n + p.failures + (p.sent - p.answered) + Object.entries(p.statuses).filter(([status]) => status !== '200').reduce((m, [, c]) => m + c, 0), 0);
    return [
      s.label,
      rps(s.max.requestsPerSecond),
      express ? (s.max.requestsPerSecond / express.max.requestsPerSecond).toFixed(2) : 'n/a',
      ...rates.map((rate) => {
        const p = pacedAt(s, rate);
        return p ? `${ms(p.latencyP50Ms)} / ${ms(p.latencyP99Ms)}` : 'n/a';
      }),
      [s.max.cpu.microsPerRequest, ...rates.map((rate) => pacedAt(s, rate)?.cpu.microsPerRequest ?? NaN)].map((v) => Math.round(v).toString()).join(' / '),
      String(errors),
    ];
  });
  return [header, ...rows];
}

/** The decision's parts in a tight loop and inside the server. */
export function decisionRows({ tightLoop, http }: BenchFigures): ReportRow[] {
  return [
    { figure: `JSON.parse of the ${tightLoop.reviewBytes}-byte review`, value: timing(tightLoop.jsonParse), goal: '' },
    { figure: 'decideAdmission, tight loop', value: timing(tightLoop.decideAdmission), goal: '' },
    { figure: `mutate(), tight loop (${tightLoop.patchOperations} patch operations)`, value: timing(tightLoop.mutate), goal: '' },
    { figure: 'the verification inside mutate() (apply to a copy, compare, validate), tight loop', value: timing(tightLoop.verification), goal: '' },
    { figure: 'decideAdmission inside the decision-only server, closed loop', value: inServer(http.decisionInServer.max), goal: '' },
    ...http.decisionInServer.paced.map((p) => ({ figure: `decideAdmission inside the decision-only server, at ${p.ratePerSecond} req/s`, value: inServer(p.timing), goal: '' })),
  ];
}

/** The growth check: µs/KiB per size and the verdict, one row per kind. */
export function growthTable(growth: GrowthReport): string[][] {
  const sizes = growth.settings.sizesKiB;
  const header = ['content', ...sizes.map((kib) => `${kib >= 1024 ? `${kib / 1024} MiB` : `${kib} KiB`}`), 'verdict'];
  const rows = growth.kinds.map((k) => [
    k.kind,
    ...sizes.map((kib) => {
      const point = k.points.find((p) => p.targetKiB === kib);
      if (point) return `${point.microsPerKiB.toFixed(1)} (${point.parseMicrosPerKiB.toFixed(1)})${point.result === 'mutated' ? '' : ` ${point.result}`}`;
      return k.stoppedAtKiB === kib ? 'stopped' : '';
    }),
    k.verdict,
  ]);
  return [header, ...rows];
}

export function metLabel(row: ReportRow): string {
  return row.met === undefined ? (row.note ?? (row.goal ? 'not measured' : '')) : row.met ? 'met' : 'NOT met';
}
