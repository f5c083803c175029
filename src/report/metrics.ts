/**
 * The reporter's Prometheus metrics, named as the team contract names them (docs/report.md,
 * "Metrics"). Every label value is a namespace, a workload (`<kind>/<name>` of the pod's controller,
 * `none`) or one of a fixed set: nothing in a record ever becomes a label, so the series are bounded by
 * workloads, never by pods or by what a pod wrote. Only the replica whose Event create succeeded counts
 * a termination (./reporter.ts), so the sum over replicas counts each one once.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Termination } from './termination';

/**
 * The drain metrics this reporter exports, by name: the contract the dashboard's drain panels and
 * alerts query (docs/report.md). The tests check the registry and the queries against this one list.
 */
export const DRAIN_METRIC_NAMES = [
  'drainguard_drains_total',
  'drainguard_drain_duration_seconds',
  'drainguard_drain_connections_left',
  'drainguard_drain_udp_sessions_left',
  'drainguard_terminations_unreported_total',
  'drainguard_envoy_exits_total',
  'drainguard_drain_records_unreadable_total',
] as const;

/** Drains last seconds (a grace period is 30 s by default, drainguard's deadline 290 s for Contour). */
export const DURATION_BUCKETS_SECONDS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600];
/** Connections left: 0 is a clean drain; anything above is cut. */
export const CONNECTIONS_BUCKETS = [0, 1, 5, 10, 50, 100, 500, 1000, 5000, 10000];

/** The reporter's state the gauges report. */
export interface ReporterState {
  watchedPods: () => number;
  pendingReports: () => number;
}

/** How often the event-loop delay metrics (drainguard_nodejs_eventloop_lag_*) sample the loop. */
export const EVENT_LOOP_SAMPLE_MS = 1000;

export class ReporterMetrics {
  readonly registry = new Registry();
  private readonly drains = new Counter({
    name: 'drainguard_drains_total',
    help: 'Envoy drains that left a record, by how they ended (interrupted: a started record that never finished)',
    labelNames: ['namespace', 'workload', 'reason'] as const,
    registers: [this.registry],
  });
  private readonly duration = new Histogram({
    name: 'drainguard_drain_duration_seconds',
    help: 'How long drains took, from the drain program start to its end (or to the kill, for interrupted drains)',
    labelNames: ['namespace', 'workload'] as const,
    buckets: DURATION_BUCKETS_SECONDS,
    registers: [this.registry],
  });
  private readonly connectionsLeft = new Histogram({
    name: 'drainguard_drain_connections_left',
    help: 'Connections still open when a drain ended, when the drain knew the count',
    labelNames: ['namespace', 'workload'] as const,
    buckets: CONNECTIONS_BUCKETS,
    registers: [this.registry],
  });
  private readonly udpSessionsLeft = new Histogram({
    name: 'drainguard_drain_udp_sessions_left',
    help: "UDP sessions still open when a drain ended (a UDP proxy's session ends only at its idle timeout), when the drain counted them",
    labelNames: ['namespace', 'workload'] as const,
    buckets: CONNECTIONS_BUCKETS,
    registers: [this.registry],
  });
  private readonly unreported = new Counter({
    name: 'drainguard_terminations_unreported_total',
    help: 'Envoy containers that ended while their pod was ending, with no drain record (hook failed, program missing, killed before it wrote)',
    labelNames: ['namespace', 'workload'] as const,
    registers: [this.registry],
  });
  private readonly exits = new Counter({
    name: 'drainguard_envoy_exits_total',
    help: 'Envoy containers that exited by themselves, not in a drain, by the runtime reason (OOMKilled, Error, Completed, other)',
    labelNames: ['namespace', 'workload', 'reason'] as const,
    registers: [this.registry],
  });
  private readonly unreadable = new Counter({
    name: 'drainguard_drain_records_unreadable_total',
    help: 'Envoy termination messages that are not a drain record the reporter can read',
    labelNames: ['namespace', 'workload'] as const,
    registers: [this.registry],
  });
  /** Where the two gauges below are read when metrics are scraped. */
  private state: ReporterState = { watchedPods: () => 0, pendingReports: () => 0 };
  private readonly watchedPods: Gauge = new Gauge({
    name: 'drainguard_reporter_watched_pods',
    help: 'Pods labelled drainguard.io/protected=true the reporter watches',
    registers: [this.registry],
    collect: (): void => this.watchedPods.set(this.state.watchedPods()),
  });
  private readonly pendingReports: Gauge = new Gauge({
    name: 'drainguard_reporter_pending_reports',
    help: 'Terminations seen and not yet reported (waiting, retrying or in flight)',
    registers: [this.registry],
    collect: (): void => this.pendingReports.set(this.state.pendingReports()),
  });
  private readonly unseen = new Counter({
    name: 'drainguard_reporter_terminations_unseen_total',
    help: 'Protected pods this replica last saw with Envoy running that were gone when it listed again (ended and deleted while its watch was down)',
    labelNames: ['namespace', 'workload'] as const,
    registers: [this.registry],
  });
  private readonly ignored = new Counter({
    name: 'drainguard_reporter_terminations_ignored_total',
    help: "Terminations of pods that carry drainguard's label and hook in a namespace drainguard's webhook does not select: not drainguard's, so not reported",
    labelNames: ['namespace'] as const,
    registers: [this.registry],
  });
  private readonly abandoned = new Counter({
    name: 'drainguard_reporter_reports_abandoned_total',
    help: 'Terminations the reporter could not report before they were older than --max-report-age (the API refused or failed every attempt)',
    registers: [this.registry],
  });

  constructor() {
    // The event-loop delay histogram samples with a timer of its own: at prom-client's default (10 ms)
    // that timer woke the reporter 100 times a second, idle or not (epoll waits over 5 s of drains:
    // 3381 → 2227; its CPU per drain moved within the benchmark's noise). Once a second, a stall of a
    // second or more always shows, a shorter one only when it covers a sample: enough for a process
    // whose work is a few watch events and Events a second. (The webhook keeps 10 ms: a stall there
    // delays admissions, which its latency histogram shows too.)
    collectDefaultMetrics({ register: this.registry, prefix: 'drainguard_', eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  }

  observe(state: ReporterState): void {
    this.state = state;
  }

  /** Counts one termination, in the replica that reported it. */
  count(termination: Termination): void {
    const labels = { namespace: termination.namespace, workload: termination.workload.label };
    const { outcome } = termination;
    switch (outcome.kind) {
      case 'drain':
        this.drains.inc({ ...labels, reason: outcome.reason });
        this.duration.observe(labels, outcome.record.durationMs / 1000);
        if (outcome.record.connectionsAtEnd !== null) this.connectionsLeft.observe(labels, outcome.record.connectionsAtEnd);
        // Not for a program that did not count them (undefined), nor when the count was unknown (null).
        if (typeof outcome.record.udpSessionsAtEnd === 'number') this.udpSessionsLeft.observe(labels, outcome.record.udpSessionsAtEnd);
        return;
      case 'interrupted': {
        this.drains.inc({ ...labels, reason: 'interrupted' });
        // The program's start (its clock) to the container's end (the kubelet's, on the same node).
        const started = Date.parse(outcome.record.startedAt);
        const finished = termination.ended.finishedAtMs;
        if (finished !== null && finished >= started) this.duration.observe(labels, (finished - started) / 1000);
        return;
      }
      case 'not-reported':
        this.unreported.inc(labels);
        return;
      case 'unreadable':
        this.unreadable.inc(labels);
        return;
      case 'exited':
        this.exits.inc({ ...labels, reason: outcome.reason });
        return;
    }
  }

  recordUnseen(namespace: string, workload: string): void {
    this.unseen.inc({ namespace, workload });
  }

  recordIgnored(namespace: string): void {
    this.ignored.inc({ namespace });
  }

  recordAbandoned(): void {
    this.abandoned.inc();
  }
}
