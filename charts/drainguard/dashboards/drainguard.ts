/**
 * The Grafana dashboard of the chart (monitoring.dashboard), built with Grafana's foundation SDK.
 * drainguard.json beside this file is its output, committed so the chart can ship it: after a change
 * here run `npm run dashboard:generate` (test/integration/monitoring/dashboard.test.ts fails while the
 * JSON is not current). docs/monitoring.md explains every panel.
 *
 * Build tooling, not part of drainguard: nothing in src/ imports it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as common from '@grafana/grafana-foundation-sdk/common';
import * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import * as prometheus from '@grafana/grafana-foundation-sdk/prometheus';
import * as stat from '@grafana/grafana-foundation-sdk/stat';
import * as timeseries from '@grafana/grafana-foundation-sdk/timeseries';

const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };
/** The webhook's series: one drainguard release, as its ServiceMonitor labels them (job = the Service). */
const WEBHOOK = 'job=~"$job"';
/** The reporter's series: the Envoy pods' namespace and top controller. */
const WORKLOADS = 'namespace=~"$namespace", workload=~"$workload"';
/** Drains are rare: their distributions are taken over an hour, not over Grafana's rate interval. */
const DRAIN_WINDOW = '1h';

interface Query {
  expr: string;
  legend: string;
}

const target = ({ expr, legend }: Query, index: number) =>
  new prometheus.DataqueryBuilder()
    .datasource(DATASOURCE)
    .refId(String.fromCharCode(65 + index))
    .expr(expr)
    .legendFormat(legend);

function graph(title: string, description: string, unit: string, queries: Query[]): timeseries.PanelBuilder {
  const panel = new timeseries.PanelBuilder().title(title).description(description).datasource(DATASOURCE).unit(unit).span(12).height(8);
  queries.forEach((query, index) => panel.withTarget(target(query, index)));
  return panel;
}

function single(title: string, description: string, unit: string, queries: Query[], thresholds: dashboard.Threshold[]): stat.PanelBuilder {
  const panel = new stat.PanelBuilder()
    .title(title)
    .description(description)
    .datasource(DATASOURCE)
    .unit(unit)
    .span(6)
    .height(8)
    .thresholds(new dashboard.ThresholdsConfigBuilder().mode(dashboard.ThresholdsMode.Absolute).steps(thresholds));
  queries.forEach((query, index) => panel.withTarget(target(query, index)));
  return panel;
}

const quantile = (q: number, bucket: string, by: string, window: string): string =>
  `histogram_quantile(${q}, sum by (${by}) (rate(${bucket}[${window}])))`;

function variable(name: string, label: string, query: string): dashboard.QueryVariableBuilder {
  return new dashboard.QueryVariableBuilder(name)
    .label(label)
    .datasource(DATASOURCE)
    .query(query)
    .definition(query)
    .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
    .sort(dashboard.VariableSort.AlphabeticalAsc)
    .multi(true)
    .includeAll(true)
    .allValue('.*');
}

export function drainguardDashboard(): dashboard.Dashboard {
  const latency = (q: number) =>
    quantile(q, `drainguard_admission_duration_seconds_bucket{${WEBHOOK}}`, 'le', '$__rate_interval');
  const drainDuration = (q: number) =>
    quantile(q, `drainguard_drain_duration_seconds_bucket{${WORKLOADS}}`, 'namespace, workload, le', DRAIN_WINDOW);
  const perWorkload = (metric: string, by: string) =>
    `sum by (${by}) (increase(${metric}{${WORKLOADS}}[$__rate_interval]))`;

  return new dashboard.DashboardBuilder('drainguard')
    .uid('drainguard')
    .description('The drainguard webhook (admissions, limits, certificates, replicas) and the drains of the Envoy pods it protects. Generated from charts/drainguard/dashboards/drainguard.ts; docs/monitoring.md explains each panel.')
    .tags(['drainguard', 'envoy', 'admission-webhook'])
    .time({ from: 'now-6h', to: 'now' })
    .refresh('1m')
    .timezone('browser')
    .withVariable(new dashboard.DatasourceVariableBuilder('datasource').label('Data source').type('prometheus'))
    .withVariable(variable('job', 'drainguard', 'label_values(drainguard_ready, job)'))
    .withVariable(variable('namespace', 'Envoy namespace', 'label_values(drainguard_drains_total, namespace)'))
    .withVariable(variable('workload', 'Envoy workload', 'label_values(drainguard_drains_total{namespace=~"$namespace"}, workload)'))

    .withRow(new dashboard.RowBuilder('Webhook'))
    .withPanel(
      graph('Admissions by result', 'Reviews answered per second: mutated, unchanged, skipped (not Envoy), ignored (not a CREATE), denied (invalid drainguard.io/ annotation), error (drainguard failed; admitted without the drain), invalid (malformed; the API server applies failurePolicy).', 'reqps', [
        { expr: `sum by (result) (rate(drainguard_admission_requests_total{${WEBHOOK}}[$__rate_interval]))`, legend: '{{result}}' },
      ]).stacking(new common.StackingConfigBuilder().mode(common.StackingMode.Normal)),
    )
    .withPanel(
      graph('Admission latency', 'From the request body read to the answer written (time waiting for a slot is not included: see the waiting line). The API server gives up after webhook.timeoutSeconds.', 's', [
        { expr: latency(0.5), legend: 'p50' },
        { expr: latency(0.99), legend: 'p99' },
      ]),
    )
    .withPanel(
      graph('Refused with 429', 'Reviews refused because every admission slot and the waiting line were taken; the API server retries them within its timeout.', 'reqps', [
        { expr: `sum by (pod) (rate(drainguard_admissions_throttled_total{${WEBHOOK}}[$__rate_interval]))`, legend: '{{pod}}' },
      ]),
    )
    .withPanel(
      graph('Admission slots and waiting line', 'Reviews holding a slot (read, decided, answered) and reviews waiting for one, per replica (limits: server.maxConcurrent*Admissions, server.maxQueuedAdmissions).', 'short', [
        { expr: `sum by (pod) (drainguard_admissions_in_progress{${WEBHOOK}})`, legend: '{{pod}} in a slot' },
        { expr: `sum by (pod) (drainguard_admissions_waiting{${WEBHOOK}})`, legend: '{{pod}} waiting' },
      ]),
    )
    .withPanel(
      single('Certificate expiry', 'Time left on the serving certificate, and (tls.mode self) on the CA that signed it; the earliest of all replicas.', 's', [
        { expr: `min(drainguard_certificate_expiry_timestamp_seconds{${WEBHOOK}}) - time()`, legend: 'serving' },
        { expr: `min(drainguard_ca_certificate_expiry_timestamp_seconds{${WEBHOOK}}) - time()`, legend: 'CA' },
      ], [
        { value: null, color: 'red' },
        { value: 7 * 86400, color: 'orange' },
        { value: 14 * 86400, color: 'green' },
      ]),
    )
    .withPanel(
      single('Replicas', 'Replicas ready (a certificate loaded, not shutting down) and replicas answering scrapes. With none ready the API server applies failurePolicy to every Envoy pod.', 'short', [
        { expr: `sum(drainguard_ready{${WEBHOOK}})`, legend: 'ready' },
        { expr: `sum(up{${WEBHOOK}})`, legend: 'scraped' },
      ], [
        { value: null, color: 'red' },
        { value: 1, color: 'green' },
      ]),
    )

    .withRow(new dashboard.RowBuilder('Drains (drainguard report)'))
    .withPanel(
      graph('Drains by reason', 'Envoy drains that finished, per workload: drained, deadline (stopped with connections open), admin-unreachable, signal, interrupted (started, never finished).', 'short', [
        { expr: perWorkload('drainguard_drains_total', 'namespace, workload, reason'), legend: '{{namespace}}/{{workload}} {{reason}}' },
      ]).drawStyle(common.GraphDrawStyle.Bars),
    )
    .withPanel(
      graph('Drain duration', `From the preStop hook's start to the end of the drain, per workload, over the preceding ${DRAIN_WINDOW}.`, 's', [
        { expr: drainDuration(0.5), legend: '{{namespace}}/{{workload}} p50' },
        { expr: drainDuration(0.99), legend: '{{namespace}}/{{workload}} p99' },
      ]),
    )
    .withPanel(
      graph('Connections left when the drain ended', `Active connections when Envoy was stopped (where the drain could tell), per workload, over the preceding ${DRAIN_WINDOW}: above zero at the deadline, those connections were cut.`, 'short', [
        { expr: quantile(0.99, `drainguard_drain_connections_left_bucket{${WORKLOADS}}`, 'namespace, workload, le', DRAIN_WINDOW), legend: '{{namespace}}/{{workload}} p99' },
      ]),
    )
    .withPanel(
      graph('Terminations without a drain record', 'Envoy terminated with no record (preStop failed, program missing, killed before it wrote), or with a record that could not be read.', 'short', [
        { expr: perWorkload('drainguard_terminations_unreported_total', 'namespace, workload'), legend: '{{namespace}}/{{workload}} no record' },
        { expr: perWorkload('drainguard_drain_records_unreadable_total', 'namespace, workload'), legend: '{{namespace}}/{{workload}} unreadable' },
      ]).drawStyle(common.GraphDrawStyle.Bars),
    )
    .withPanel(
      graph('Envoy exits (not drains)', 'Envoy containers that ended by themselves, by reason: OOMKilled, Error, Completed, other.', 'short', [
        { expr: perWorkload('drainguard_envoy_exits_total', 'namespace, workload, reason'), legend: '{{namespace}}/{{workload}} {{reason}}' },
      ]).drawStyle(common.GraphDrawStyle.Bars),
    )
    .build();
}

/** The generated file, from the repository root (where npm scripts run). */
export const DASHBOARD_JSON = 'charts/drainguard/dashboards/drainguard.json';

/** The committed file's exact text. */
export function dashboardJson(): string {
  return `${JSON.stringify(drainguardDashboard(), null, 2)}\n`;
}

/** `npm run dashboard:generate`, from the repository root. */
export function writeDashboardJson(root = process.cwd()): void {
  writeFileSync(join(root, DASHBOARD_JSON), dashboardJson());
}
