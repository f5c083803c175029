/**
 * Prometheus metrics of one server instance. Each server owns its registry (never prom-client's global
 * default), so several servers in one process (tests, or a future multi-port setup) never collide.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { AdmissionOutcome } from '../admission/decide';
import type { ClosedReason } from './connection-guard';
import type { ConnectionState } from './connection-table';

const CONNECTION_STATES: readonly ConnectionState[] = ['idle', 'receiving', 'answering'];

/**
 * Sub-millisecond buckets: the decision itself takes tens of microseconds on a typical pod. The last two
 * reach the webhook timeout (at most 5 s in the chart), so a p99 near it can be told from one of 1 s.
 */
export const LATENCY_BUCKETS_SECONDS = [
  0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5, 5,
];

/**
 * Counts by label value, kept as plain numbers on every admission and handed to prom-client when metrics
 * are scraped: an admission adds up to ten counts (one per mutation action), and prom-client's `inc`
 * hashes and validates its labels on every call.
 */
class LabelCounts {
  private readonly counts = new Map<string, number>();

  add(value: string): void {
    this.counts.set(value, (this.counts.get(value) ?? 0) + 1);
  }

  /** A `collect` for a counter with one label: its values become exactly these counts. */
  collector(label: string): (this: Counter<string>) => void {
    const { counts } = this;
    return function collect(this: Counter<string>) {
      this.reset();
      for (const [value, count] of counts) this.inc({ [label]: value }, count);
    };
  }
}

export class WebhookMetrics {
  readonly registry = new Registry();
  private readonly results = new LabelCounts();
  private readonly actions = new LabelCounts();
  private readonly skipReasons = new LabelCounts();
  // These three take their values from the counts above when scraped (`collect`).
  private readonly requests = new Counter({
    name: 'drainguard_admission_requests_total',
    help: 'AdmissionReview requests answered, by result',
    labelNames: ['result'] as const,
    registers: [this.registry],
    collect: this.results.collector('result'),
  });
  private readonly mutations = new Counter({
    name: 'drainguard_mutations_total',
    help: 'Mutations applied to admitted pods, by action',
    labelNames: ['action'] as const,
    registers: [this.registry],
    collect: this.actions.collector('action'),
  });
  private readonly skips = new Counter({
    name: 'drainguard_skipped_pods_total',
    help: 'Pods admitted untouched because they are not drainguard candidates, by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
    collect: this.skipReasons.collector('reason'),
  });
  private readonly latency = new Histogram({
    name: 'drainguard_admission_duration_seconds',
    help: 'Time from request body received to response written, by result',
    labelNames: ['result'] as const,
    buckets: LATENCY_BUCKETS_SECONDS,
    registers: [this.registry],
  });
  private readonly throttled = new Counter({
    name: 'drainguard_admissions_throttled_total',
    help: 'AdmissionReview requests refused with 429 because every admission slot and the waiting line were taken',
    registers: [this.registry],
  });
  /** Where the two gauges below are read when metrics are scraped (not set on every admission). */
  private admissionLoad: { readonly active: number; readonly queued: number } = { active: 0, queued: 0 };
  private readonly inProgress: Gauge = new Gauge({
    name: 'drainguard_admissions_in_progress',
    help: 'Admissions holding a slot (body being read, decided or answered)',
    registers: [this.registry],
    collect: (): void => this.inProgress.set(this.admissionLoad.active),
  });
  private readonly waiting: Gauge = new Gauge({
    name: 'drainguard_admissions_waiting',
    help: 'Admissions waiting for a slot',
    registers: [this.registry],
    collect: (): void => this.waiting.set(this.admissionLoad.queued),
  });
  private readonly slowBodies = new Counter({
    name: 'drainguard_admissions_slow_bodies_total',
    help: 'Admissions answered 408 because their body arrived slower than the minimum rate for a large slot',
    registers: [this.registry],
  });
  private readonly droppedConnections = new Counter({
    name: 'drainguard_connections_dropped_total',
    help: 'Connections refused at once: the server had its maximum number of connections and none could be closed for it',
    registers: [this.registry],
  });
  private readonly closedConnections = new Counter({
    name: 'drainguard_connections_closed_total',
    help: 'Connections the server closed: evicted (to make room for a source holding fewer) or idle-timeout (no request in time)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  /** Where the gauge below reads the open connections by state when metrics are scraped. */
  private connectionLoad: { count(state: ConnectionState): number } = { count: () => 0 };
  private readonly connections: Gauge<'state'> = new Gauge({
    name: 'drainguard_connections',
    help: 'Open connections by state: idle (no request under way), receiving (a body still arriving), answering',
    labelNames: ['state'] as const,
    registers: [this.registry],
    collect: (): void => {
      for (const state of CONNECTION_STATES) this.connections.set({ state }, this.connectionLoad.count(state));
    },
  });
  private readonly tlsFailures = new Counter({
    name: 'drainguard_tls_handshake_failures_total',
    help: 'Connections closed because the TLS handshake failed or did not finish in time, by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  private readonly certificateExpiry = new Gauge({
    name: 'drainguard_certificate_expiry_timestamp_seconds',
    help: 'notAfter of the serving certificate currently in use, as a Unix timestamp',
    registers: [this.registry],
  });
  /**
   * Only where drainguard is the CA (self mode): in files mode the CA the API server trusts is not its
   * to know. Registered when first set, so files mode has no series (an unset gauge would read 0, expired).
   */
  private caCertificateExpiry: Gauge | undefined;
  /** Read when metrics are scraped, like the load gauges. */
  private readiness: () => boolean = () => false;
  private readonly readyGauge: Gauge = new Gauge({
    name: 'drainguard_ready',
    help: '1 while the server reports ready (a certificate loaded, not shutting down), else 0',
    registers: [this.registry],
    collect: (): void => this.readyGauge.set(this.readiness() ? 1 : 0),
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'drainguard_' });
  }

  recordAdmission(outcome: AdmissionOutcome, seconds: number): void {
    this.results.add(outcome.result);
    this.latency.observe({ result: outcome.result }, seconds);
    for (const action of outcome.actions) this.actions.add(action);
    if (outcome.skipReason) this.skipReasons.add(outcome.skipReason);
  }

  /** A request rejected before it reached the decision (413, 415, unparseable JSON). */
  recordRejected(): void {
    this.results.add('invalid');
  }

  /** A 429: no slot and no room in the waiting line. */
  recordThrottled(): void {
    this.throttled.inc();
  }

  /** The admission limiter whose slots and waiting line the gauges report. */
  observeAdmissionLoad(load: { readonly active: number; readonly queued: number }): void {
    this.admissionLoad = load;
  }

  /** A 408: a body too slow for the large slot it held. */
  recordSlowBody(): void {
    this.slowBodies.inc();
  }

  recordDroppedConnection(): void {
    this.droppedConnections.inc();
  }

  recordClosedConnection(reason: ClosedReason): void {
    this.closedConnections.inc({ reason });
  }

  /** The connection guard whose open connections the gauge reports. */
  observeConnections(load: { count(state: ConnectionState): number }): void {
    this.connectionLoad = load;
  }

  recordTlsFailure(reason: 'timeout' | 'protocol'): void {
    this.tlsFailures.inc({ reason });
  }

  setCertificateExpiry(notAfter: Date): void {
    this.certificateExpiry.set(notAfter.getTime() / 1000);
  }

  setCaCertificateExpiry(notAfter: Date): void {
    this.caCertificateExpiry ??= new Gauge({
      name: 'drainguard_ca_certificate_expiry_timestamp_seconds',
      help: 'notAfter of the CA that signed the serving certificate (self mode only), as a Unix timestamp',
      registers: [this.registry],
    });
    this.caCertificateExpiry.set(notAfter.getTime() / 1000);
  }

  /** Where the `drainguard_ready` gauge reads the server's readiness. */
  observeReadiness(isReady: () => boolean): void {
    this.readiness = isReady;
  }
}
