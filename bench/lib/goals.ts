/**
 * The figures `npm run bench` reports and the goals of issue 6 they are read against. Benchmarks
 * report; nothing here fails a run. The same rows feed the terminal table and the README table.
 */
import type { HttpReport, ServerCpu, ServerFigures } from '../http';
import type { PacedLoadResult } from './paced-load';
import type { MutateReport } from '../mutate';
import type { ShutdownReport } from '../shutdown';

export interface BenchFigures {
  mutate: MutateReport;
  http: HttpReport;
  shutdown: ShutdownReport;
}

export interface ReportRow {
  figure: string;
  value: string;
  goal: string;
  /** undefined: reported without a goal. */
  met?: boolean;
}

const us = (value: number) => `${value.toFixed(1)} µs`;
const ms = (value: number) => `${value.toFixed(value < 10 ? 2 : 1)} ms`;
const rps = (value: number) => `${Math.round(value)} req/s`;

export function reportRows({ mutate, http, shutdown }: BenchFigures): ReportRow[] {
  const server = (kind: string) => http.servers.find((s) => s.server === kind);
  const drainguard = server('drainguard');
  const servers = http.servers;
  const pollPlus = shutdown.pollIntervalMs + 100;

  const rows: ReportRow[] = [
    { figure: `mutate() Contour pod (${mutate.contour.bytes} B), median`, value: us(mutate.contour.medianMicros), goal: '≤ 50 µs', met: mutate.contour.medianMicros <= 50 },
    { figure: 'mutate() Contour pod, p99', value: us(mutate.contour.p99Micros), goal: '' },
    { figure: `mutate() ${Math.round(mutate.large.bytes / 1024)} KiB pod, median`, value: us(mutate.large.medianMicros), goal: '≤ 2 ms', met: mutate.large.medianMicros <= 2000 },
    { figure: `mutate() ${Math.round(mutate.large.bytes / 1024)} KiB pod, p99`, value: us(mutate.large.p99Micros), goal: '' },
    {
      figure: `mutate() growth ${mutate.growth.points.map((p) => Math.round(p.bytes / 1024)).join('/')} KiB`,
      value: `${mutate.growth.microsPerKiB.toFixed(2)} µs/KiB, r² ${mutate.growth.r2.toFixed(3)}`,
      goal: 'linear',
      met: mutate.growth.r2 >= 0.95,
    },
  ];
  for (const figures of servers) {
    rows.push({
      figure: `HTTPS ${figures.server}: max throughput (${figures.max.connections} conns), p50/p99; server CPU per request`,
      value: `${rps(figures.max.requestsPerSecond)}, ${ms(figures.max.latencyP50Ms)}/${ms(figures.max.latencyP99Ms)}; ${us(figures.cpu.max.microsPerRequest)}`,
      goal: '',
    });
  }
  const ratio = http.throughputRatio;
  rows.push(
    { figure: 'HTTPS throughput ratio drainguard / express baseline', value: ratio.express.toFixed(2), goal: '≥ 0.85', met: ratio.express >= 0.85 },
    { figure: 'HTTPS throughput ratio drainguard / bare node baseline', value: ratio.node.toFixed(2), goal: '' },
    { figure: 'HTTPS throughput ratio decision-only / express baseline (ceiling for the decision)', value: ratio.decisionCeiling.toFixed(2), goal: '' },
    { figure: "HTTPS throughput ratio drainguard / decision-only (drainguard's server overhead)", value: ratio.adapter.toFixed(2), goal: '' },
  );
  const pacedRow = (figures: ServerFigures, run: PacedLoadResult, cpu: ServerCpu, label: string): ReportRow => ({
    figure: `HTTPS ${figures.server} at ${Math.round(run.ratePerSecond)} req/s (${label}), p50/p99 from due time (from send); server busy, CPU per request`,
    value:
      `${ms(run.latencyP50Ms)}/${ms(run.latencyP99Ms)} (${ms(run.serviceLatencyP50Ms)}/${ms(run.serviceLatencyP99Ms)}); ` +
      `${Math.round(cpu.busy * 100)}%, ${us(cpu.microsPerRequest)}`,
    goal: '',
  });
  for (const figures of servers) {
    const row = pacedRow(figures, figures.halfRate, figures.cpu.halfRate, 'half max');
    rows.push(figures === drainguard ? { ...row, goal: 'p99 ≤ 10 ms', met: figures.halfRate.latencyP99Ms <= 10 } : row);
  }
  if (drainguard?.quarterRate && drainguard.cpu.quarterRate) {
    rows.push(pacedRow(drainguard, drainguard.quarterRate, drainguard.cpu.quarterRate, 'quarter max'));
  }
  rows.push(
    { figure: 'envoy-shutdown size on disk (executable + lib)', value: `${(shutdown.sizeBytes / 1e6).toFixed(1)} MB`, goal: '' },
    { figure: `envoy-shutdown install, median/max of ${shutdown.installMs.runs}`, value: `${ms(shutdown.installMs.median)}/${ms(shutdown.installMs.max)}`, goal: '' },
    {
      figure: `envoy-shutdown start → first admin request, median/max of ${shutdown.firstAdminRequestMs.runs}`,
      value: `${ms(shutdown.firstAdminRequestMs.median)}/${ms(shutdown.firstAdminRequestMs.max)}`,
      goal: '≤ 100 ms',
      met: shutdown.firstAdminRequestMs.max <= 100,
    },
    {
      figure: 'envoy-shutdown peak RSS during a drain, median/max',
      value: `${shutdown.peakRssMB.median.toFixed(1)}/${shutdown.peakRssMB.max.toFixed(1)} MB`,
      goal: '≤ 64 MB',
      met: shutdown.peakRssMB.max <= 64,
    },
    {
      figure: `envoy-shutdown reaction (count at threshold → exit), poll ${shutdown.pollIntervalMs} ms, median/max`,
      value: `${ms(shutdown.reactionMs.median)}/${ms(shutdown.reactionMs.max)}`,
      goal: `≤ ${pollPlus} ms`,
      met: shutdown.reactionMs.max <= pollPlus,
    },
  );
  return rows;
}

export function metLabel(row: ReportRow): string {
  return row.met === undefined ? '' : row.met ? 'met' : 'NOT met';
}
