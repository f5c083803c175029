/**
 * Every query of the monitoring pack returns data from the real parts: drainguard installed by helm on
 * the real API server (the webhook in tls.mode self, as the chart installs it by default, and the
 * reporter, each a pod the kubelet stand-in runs from this checkout's dist/), Envoy pods ending in every
 * way the reporter counts, a real Prometheus scraping both pods with the chart's two ServiceMonitors as
 * helm renders them (the reporter's with honorLabels), and each dashboard query, dashboard variable and
 * alert expression asked through Prometheus' HTTP API. A query that names a metric or label drainguard
 * does not export returns nothing, and fails here; the drain queries must also return the Envoy
 * workloads' own series (their namespace, not the reporter's).
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect as connectTcp, type Socket } from 'node:net';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { DASHBOARD_JSON } from '../../charts/drainguard/dashboards/drainguard';
import { findOne, renderChart, reporterObjects, REPO_ROOT, webhookObjects, type K8sObject } from '../support/helm';
import { createNamespace, deleteNamespace, eventually, installDrainguard, uninstallDrainguard, type DrainguardRelease } from '../support/cluster/lane';
import { admissionReview, fixturePods, httpsRequest, temporaryDirectory } from '../integration/server/webhook-test-kit';
import { PrometheusServer, prometheusVersion, type Sample } from '../integration/monitoring/prometheus';
import { dashboardQueries, metricsOf, readsReporter } from '../integration/monitoring/queries';
import { contourEnvoy, readyPods, reporterPods, sharedCluster, type EnvoyWorkload, type PodObject } from './report/workloads';

/** Grafana's $__rate_interval is at least four scrape intervals; this leaves room on a loaded machine. */
const RATE_INTERVAL = '15s';
/** The webhook keeps serving /metrics, not ready, this long after SIGTERM (the test ends it sooner). */
const SHUTDOWN_DELAY_SECONDS = 60;

interface ServiceMonitorEndpoint {
  port: string;
  scheme: string;
  path: string;
  interval: string;
  scrapeTimeout: string;
  honorLabels?: boolean;
  tlsConfig?: Record<string, unknown>;
}
interface Rule {
  alert: string;
  expr: string;
}
type Deployment = K8sObject & { spec: { template: { spec: { containers: { name: string }[] } } } };
type ServiceMonitor = K8sObject & { spec: { endpoints: ServiceMonitorEndpoint[] } };

const cluster = sharedCluster();
const dashboard = dashboardQueries(JSON.parse(readFileSync(join(REPO_ROOT, DASHBOARD_JSON), 'utf8')));

/** A Service, the Deployment behind it and the ServiceMonitor that scrapes it: the webhook's, the reporter's. */
const scrapeTarget = (objects: K8sObject[]) => ({
  service: findOne(objects, 'Service'),
  deployment: findOne(objects, 'Deployment') as Deployment,
  monitor: findOne(objects, 'ServiceMonitor') as ServiceMonitor,
});
type ScrapeTarget = ReturnType<typeof scrapeTarget>;

/**
 * The scrape job the Prometheus Operator generates for a ServiceMonitor's endpoint (its
 * generateServiceMonitorConfig): scheme, path, interval, timeout, honor_labels and TLS settings from
 * the endpoint; target labels namespace, service, pod, container, job (the Service's name) and
 * endpoint (the port's name). Kubernetes service discovery becomes one static target: the pod's IP and
 * port.
 */
function scrapeConfig({ service, deployment, monitor }: ScrapeTarget, namespace: string, address: string, pod: string): Record<string, unknown> {
  const [endpoint] = monitor.spec.endpoints;
  const { insecureSkipVerify, ...unsupported } = endpoint!.tlsConfig ?? {};
  if (Object.keys(unsupported).length > 0) throw new Error(`tlsConfig ${Object.keys(unsupported).join(', ')}: refer to Secrets this test does not have`);
  const label = (target_label: string, replacement: string) => ({ target_label, replacement });
  return {
    job_name: `serviceMonitor/${namespace}/${monitor.metadata.name}/0`,
    scheme: endpoint!.scheme,
    metrics_path: endpoint!.path,
    scrape_interval: endpoint!.interval,
    scrape_timeout: endpoint!.scrapeTimeout,
    honor_labels: endpoint!.honorLabels ?? false,
    ...(endpoint!.tlsConfig ? { tls_config: { insecure_skip_verify: insecureSkipVerify } } : {}),
    static_configs: [{ targets: [address] }],
    relabel_configs: [
      label('namespace', namespace),
      label('service', service.metadata.name),
      label('pod', pod),
      label('container', deployment.spec.template.spec.containers[0]!.name),
      label('job', service.metadata.name),
      label('endpoint', endpoint!.port),
    ],
  };
}

/** What Grafana sends for a panel query with every variable on "All" (allValue .*). */
const asGrafanaSends = (expr: string): string =>
  expr.replaceAll('$__rate_interval', RATE_INTERVAL).replaceAll(/\$(job|namespace|workload)\b/g, '.*');

let directory: ReturnType<typeof temporaryDirectory>;
let release: DrainguardRelease;
let envoyNamespace: string;
let daemonSet: EnvoyWorkload;
let prometheus: PrometheusServer | undefined;
let webhook: ScrapeTarget;
let rules: Rule[];
let webhookPod: PodObject;
let caBundle: string;
const started = Date.now();

beforeAll(async () => {
  directory = temporaryDirectory();
  // One large admission slot and no waiting line: a second large review while one holds the slot gets 429.
  const server = {
    'report.enabled': 'true',
    'report.replicaCount': '1',
    'server.maxConcurrentAdmissions': '1',
    'server.maxQueuedAdmissions': '0',
    'server.shutdownDelaySeconds': String(SHUTDOWN_DELAY_SECONDS),
    terminationGracePeriodSeconds: String(SHUTDOWN_DELAY_SECONDS + 10),
  };
  release = await installDrainguard('monitoring', server);
  // The chart as this release is installed, with the ServiceMonitors scraping every second and the rules
  // with thresholds every alert crosses on what this test drives (the alert's own text otherwise).
  const chart = renderChart({
    releaseName: release.release,
    namespace: release.namespace,
    set: {
      ...server,
      'metrics.serviceMonitor.enabled': true,
      'metrics.serviceMonitor.interval': '1s',
      'metrics.serviceMonitor.scrapeTimeout': '1s',
      'monitoring.rules.enabled': true,
      // A year of validity (self mode) is within 400 days.
      'monitoring.rules.certificateExpiry.days': 400,
    },
    setJson: { 'monitoring.rules.admissionLatency.timeoutFraction': 0.000001 },
  });
  webhook = scrapeTarget(webhookObjects(chart));
  rules = (findOne(chart, 'PrometheusRule') as K8sObject & { spec: { groups: { rules: Rule[] }[] } }).spec.groups.flatMap((g) => g.rules);
  const selector = encodeURIComponent(`app.kubernetes.io/instance=${release.release},app.kubernetes.io/name=drainguard`);
  webhookPod = (await cluster.api.list<PodObject>(`/api/v1/namespaces/${release.namespace}/pods?labelSelector=${selector}`)).items[0]!;
  const [reporterPod] = await reporterPods(cluster, release, 1);
  caBundle = await eventually('the caBundle to be published', async () => {
    const stored = await cluster.api.get<{ webhooks: { clientConfig: { caBundle?: string } }[] }>(`/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${release.webhookConfigName}`);
    const bundle = stored.webhooks[0]!.clientConfig.caBundle;
    return bundle ? Buffer.from(bundle, 'base64').toString('utf8') : undefined;
  });
  prometheus = await PrometheusServer.start(
    {
      global: { evaluation_interval: '1s' },
      scrape_configs: [
        scrapeConfig(webhook, release.namespace, `${webhookPod!.status.podIP}:8443`, webhookPod!.metadata.name),
        scrapeConfig(scrapeTarget(reporterObjects(chart)), release.namespace, `${reporterPod!.status.podIP}:8080`, reporterPod!.metadata.name),
      ],
    },
    directory.path,
    // The expired-certificate alerts are asked at a time after the certificates' notAfter: a lookback
    // longer than their validity lets that evaluation see the samples scraped now.
    ['--query.lookback-delta=800d'],
  );
  envoyNamespace = await createNamespace('monitoring-envoy', release.optIn);
  // A grace period of 15 s: the drain's deadline is 5 s.
  daemonSet = await contourEnvoy(cluster, envoyNamespace, { gracePeriodSeconds: 15 });
}, 300_000);

afterAll(async () => {
  await prometheus?.stop();
  if (envoyNamespace) await deleteNamespace(envoyNamespace);
  if (release) await uninstallDrainguard(release);
  directory?.remove();
}, 300_000);

const serviceDns = () => `${webhook.service.metadata.name}.${release.namespace}.svc`;
/** To the webhook pod, as kube-apiserver calls it. */
const post = (body: string, headers: Record<string, string | number> = {}) =>
  httpsRequest({ host: webhookPod.status.podIP!, port: 8443, ca: caBundle, servername: serviceDns(), body, headers });
const scraped = async (name: string): Promise<number | undefined> => {
  const text = (await httpsRequest({ host: webhookPod.status.podIP!, port: 8443, ca: caBundle, servername: serviceDns(), method: 'GET', path: '/metrics' })).text;
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : undefined;
};

/** Holds the one large admission slot: headers of a large review, and only part of its body. */
async function holdLargeSlot(): Promise<{ release(): void }> {
  const socket = connect({ host: webhookPod.status.podIP!, port: 8443, ca: caBundle, servername: serviceDns() });
  await once(socket, 'secureConnect');
  socket.write(`POST /mutate HTTP/1.1\r\nHost: ${serviceDns()}\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n{"apiVersion":`);
  socket.on('error', () => undefined);
  return { release: () => socket.destroy() };
}

/** The workload label of the pods below that no controller owns. */
const BARE = 'none';
const HOOK = ['/config/drainguard/envoy-shutdown', 'drain', '--admin', 'unix:/admin/admin.sock', '--deadline', '2s'];

/**
 * A pod whose container `envoy` runs `script` (Node, in drainguard's image) under drainguard's preStop
 * hook, which fails there (no drain program in it): plays an Envoy that ends without a drain record,
 * with one that cannot be read, or exits by itself. In the opted-in namespace, so the reporter reports it.
 */
async function envoyLike(name: string, script: string): Promise<void> {
  await cluster.api.create(`/api/v1/namespaces/${envoyNamespace}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    // The webhook leaves it as it is (it would install the real drain program, which writes a record).
    metadata: { name, labels: { 'drainguard.io/protected': 'true' }, annotations: { 'drainguard.io/inject': 'disabled' } },
    spec: {
      terminationGracePeriodSeconds: 5,
      securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532 },
      volumes: [{ name: 'scratch', emptyDir: {} }],
      containers: [
        {
          name: 'envoy',
          image: 'ghcr.io/drainguard/drainguard:test',
          // Ready once `script` has run (its termination message written): only then is it deleted.
          command: ['/nodejs/bin/node', '-e', `process.on("SIGTERM", () => process.exit(0)); ${script}; require("http").createServer((q, r) => r.end("ok")).listen(8080);`],
          readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 1 },
          volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
          lifecycle: { preStop: { exec: { command: HOOK } } },
        },
      ],
    },
  });
  await eventually(`pod ${name} ready`, async () => {
    const pod = await cluster.api.get<PodObject>(`/api/v1/namespaces/${envoyNamespace}/pods/${name}`);
    return (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True') ? true : undefined;
  });
}

async function deletePod(name: string): Promise<void> {
  await cluster.api.delete(`/api/v1/namespaces/${envoyNamespace}/pods/${name}`);
}

/**
 * One of each way a protected Envoy ends: a drain, a drain that hit its deadline with a connection
 * open on a listener (the DaemonSet's two pods, drained by the real drain program), a termination
 * with no record, one whose record cannot be read, and an Envoy that exited by itself (restarted in
 * place). Five reports.
 */
const REPORTS_PER_ROUND = 5;
async function endEnvoys(round: number): Promise<void> {
  const [held, clean] = await readyPods(cluster, daemonSet, 2);
  let client: Socket | undefined;
  try {
    client = connectTcp({ host: held!.status.podIP!, port: 8443 });
    client.on('error', () => undefined);
    await once(client, 'connect');
    await envoyLike(`no-record-${round}`, '');
    await envoyLike(`unreadable-${round}`, `require("fs").writeFileSync("/dev/termination-log", ${JSON.stringify('{"format":"not a drain record"')})`);
    // Exits once by itself; runs on after its restart.
    await envoyLike(`exits-${round}`, 'const fs = require("fs"); if (!fs.existsSync("/scratch/ran")) { fs.writeFileSync("/scratch/ran", ""); process.exit(1); }');
    await Promise.all([held, clean].map((pod) => deletePod(pod!.metadata.name)));
    await Promise.all([deletePod(`no-record-${round}`), deletePod(`unreadable-${round}`)]);
    // The connection stays open until its pod is gone: the drain ends at its deadline with it open.
    await eventually(`pod ${held!.metadata.name} gone`, async () => ((await cluster.api.find(`/api/v1/namespaces/${envoyNamespace}/pods/${held!.metadata.name}`)) ? undefined : true));
  } finally {
    client?.destroy();
  }
}

/** Every report of the reporter, as Prometheus has stored them (no series yet: 0). */
async function reportsStored(): Promise<number> {
  const sum = await prometheus!.query(
    'sum(drainguard_drains_total) + sum(drainguard_terminations_unreported_total) + sum(drainguard_drain_records_unreadable_total) + sum(drainguard_envoy_exits_total)',
  );
  return sum.length === 1 ? Number(sum[0]!.value[1]) : 0;
}

/** Each query and how many series Prometheus returned, for the failure message and the log. */
type Counts = Map<string, number>;
const describeCounts = (counts: Counts) => [...counts].map(([what, n]) => `${n} ${what}`).join('\n');

test('every dashboard query, variable and alert expression returns data from drainguard through Prometheus', async () => {
  // Admissions of every result the webhook can give a client here, twice: a rate needs the counter
  // to rise after Prometheus first saw its series (a series appears at its first value).
  const pods = fixturePods();
  const envoy = pods.find(({ name }) => name.startsWith('contour'))!.pod;
  const other = pods.find(({ name }) => name.startsWith('not-envoy'))!.pod;
  const invalidAnnotation = structuredClone(envoy);
  invalidAnnotation.metadata = { ...invalidAnnotation.metadata, annotations: { ...invalidAnnotation.metadata?.annotations, 'drainguard.io/drain-delay': 'soon' } };
  const admitOneOfEach = async () => {
    const answers = {
      mutated: await post(JSON.stringify(admissionReview(envoy))),
      skipped: await post(JSON.stringify(admissionReview(other))),
      ignored: await post(JSON.stringify(admissionReview(envoy, { operation: 'UPDATE' }))),
      denied: await post(JSON.stringify(admissionReview(invalidAnnotation))),
      invalid: await post('{"kind":"AdmissionReview"}'),
    };
    expect(Object.fromEntries(Object.entries(answers).map(([k, a]) => [k, a.status]))).toEqual({ mutated: 200, skipped: 200, ignored: 200, denied: 200, invalid: 400 });
    expect((answers.denied.json as { response: { allowed: boolean } }).response.allowed).toBe(false);
  };
  const scrapedResults = async () => (await prometheus!.query('drainguard_admission_requests_total')).length;
  // Envoy terminations of every kind the reporter counts, twice, for the same reason.
  await eventually('Prometheus to scrape the webhook and the reporter', async () => ((await prometheus!.query('up == 1')).length === 2 ? true : undefined));
  await admitOneOfEach();
  await endEnvoys(1);
  await eventually('Prometheus to scrape the five results', async () => ((await scrapedResults()) === 5 ? true : undefined));
  await eventually('Prometheus to scrape the first reports', async () => ((await reportsStored()) === REPORTS_PER_ROUND ? true : undefined)).catch(async (error: Error) => {
    const stored = await prometheus!.query('{__name__=~"drainguard_(drains|terminations_unreported|drain_records_unreadable|envoy_exits)_total"}');
    throw new Error(`${error.message}; stored: ${stored.map(({ metric, value }) => `${JSON.stringify(metric)} ${value[1]}`).join('; ')}`);
  });
  await admitOneOfEach();
  await endEnvoys(2);

  // A 429: the only large slot is taken and there is no waiting line.
  const held = await holdLargeSlot();
  try {
    await eventually('the held review to take the large slot', async () => ((await scraped('drainguard_admissions_in_progress')) === 1 ? true : undefined));
    const large = JSON.stringify({ ...admissionReview(envoy), padding: 'x'.repeat(70 * 1024) });
    expect((await post(large)).status).toBe(429);
  } finally {
    held.release();
  }

  const queries = {
    panels: dashboard.panels.map((p) => ({ what: `panel "${p.panel}": ${p.expr}`, expr: p.expr })),
    alerts: rules.map((r) => ({ what: `alert ${r.alert}: ${r.expr}`, expr: r.expr, alert: r.alert })),
  };
  const unavailable = queries.alerts.find((a) => a.alert === 'DrainguardWebhookUnavailable')!;
  const expired = queries.alerts.filter((a) => a.alert.endsWith('Expired'));
  const onRunning = queries.alerts.filter((a) => a !== unavailable && !expired.includes(a));

  // Each query returns at least one series, once Prometheus has scraped the admissions above
  // (rates need two scrapes after them).
  const counts: Counts = new Map();
  const ask = async (what: string, run: () => Promise<Sample[] | string[]>): Promise<number> => {
    const n = (await run()).length;
    counts.set(what, n);
    return n;
  };
  await eventually(
    'every query to return a series',
    async () => {
      let empty = 0;
      for (const v of dashboard.variables) if ((await ask(`variable ${v.name}: label_values(${v.selector}, ${v.label})`, () => prometheus!.labelValues(v.label, asGrafanaSends(v.selector)))) === 0) empty++;
      for (const q of queries.panels) if ((await ask(q.what, () => prometheus!.query(asGrafanaSends(q.expr)))) === 0) empty++;
      for (const q of onRunning) if ((await ask(q.what, () => prometheus!.query(q.expr))) === 0) empty++;
      return empty === 0 ? true : undefined;
    },
  ).catch(async (error: Error) => {
    throw new Error(`${error.message}\nseries per query:\n${describeCounts(counts)}\ntargets:\n${await prometheus!.targets()}\n${prometheus!.log}`);
  });

  // The drain queries (2 variables, 7 panel queries, 2 alerts) answer with the Envoy workloads' own
  // series: their namespace, not the reporter's (honorLabels), and the reasons the reporter counted.
  // The drains are the DaemonSet's; the other endings are the pods no controller owns.
  const drainVariables = dashboard.variables.filter((v) => readsReporter(v.selector));
  const drainQueries = [...queries.panels.map((q) => ({ ...q, expr: asGrafanaSends(q.expr) })), ...onRunning].filter((q) => readsReporter(q.expr));
  expect([drainVariables.length, drainQueries.length]).toEqual([2, 9]);
  const drains = `${envoyNamespace} daemonset/envoy`;
  const bare = `${envoyNamespace} ${BARE}`;
  /** The series each drain metric has here: `namespace workload reason`. */
  const seriesOfMetric: Record<string, string[]> = {
    drainguard_drains_total: [`${drains} deadline`, `${drains} drained`],
    drainguard_drain_duration_seconds: [drains],
    drainguard_drain_connections_left: [drains],
    drainguard_terminations_unreported_total: [bare],
    drainguard_drain_records_unreadable_total: [bare],
    drainguard_envoy_exits_total: [`${bare} Error`],
  };
  const seriesOfExpr = (expr: string) => metricsOf(expr).flatMap((name) => seriesOfMetric[name] ?? []);
  const labelIndex = { namespace: 0, workload: 1 } as Record<string, number>;
  expect(Object.fromEntries(await Promise.all(drainVariables.map(async (v) => [v.name, await prometheus!.labelValues(v.label, asGrafanaSends(v.selector))])))).toEqual(
    Object.fromEntries(drainVariables.map((v) => [v.name, [...new Set(seriesOfExpr(v.selector).map((line) => line.split(' ')[labelIndex[v.label]!]!))].sort()])),
  );
  const seriesOf = (samples: Sample[]) => samples.map(({ metric }) => [metric.namespace, metric.workload, metric.reason].filter(Boolean).join(' ')).sort();
  const expectedSeries = (expr: string) => {
    const byReason = expr.includes('by (namespace, workload, reason)');
    return [...new Set(seriesOfExpr(expr).map((line) => (byReason ? line : line.split(' ').slice(0, 2).join(' '))))].sort();
  };
  const answered = await Promise.all(drainQueries.map(async (q) => [q.what, seriesOf(await prometheus!.query(q.expr))] as const));
  expect(Object.fromEntries(answered)).toEqual(Object.fromEntries(drainQueries.map((q) => [q.what, expectedSeries(q.expr)])));

  // Every metric any query names is one the webhook or the reporter exports, as Prometheus stored it.
  const known = new Set((await prometheus!.labelValues('__name__', '{job=~".+"}')).map((name) => name.replace(/_(bucket|sum|count)$/, '')));
  const everyExpr = [...queries.panels, ...queries.alerts].map((q) => q.expr).concat(dashboard.variables.map((v) => v.selector));
  expect([...new Set(everyExpr.flatMap(metricsOf))].filter((name) => !known.has(name))).toEqual([]);

  // Expiry, asked a day after the later of the two certificates' notAfter.
  const notAfter = Math.max(
    ...(await prometheus!.query('drainguard_certificate_expiry_timestamp_seconds or drainguard_ca_certificate_expiry_timestamp_seconds')).map((s) => Number(s.value[1])),
  );
  const afterExpiry = new Date((notAfter + 86_400) * 1000);
  for (const q of expired) expect(`${q.alert}: ${await ask(`${q.what} (asked at ${afterExpiry.toISOString()})`, () => prometheus!.query(q.expr, afterExpiry))}`).toBe(`${q.alert}: 1`);

  // The webhook-unavailable alert: silent while the replica is ready, firing once it is not (its pod
  // deleted: the kubelet's SIGTERM, readiness fails, /metrics still answers for the shutdown delay).
  expect(await prometheus!.query(unavailable.expr)).toEqual([]);
  await cluster.api.delete(`/api/v1/namespaces/${release.namespace}/pods/${webhookPod.metadata.name}`);
  await eventually('the not-ready replica to be scraped', async () => {
    const ready = await prometheus!.query(`drainguard_ready{job="${webhook.service.metadata.name}"}`);
    return ready.length === 1 && ready[0]!.value[1] === '0' ? true : undefined;
  });
  expect(await ask(`${unavailable.what} (after SIGTERM)`, () => prometheus!.query(unavailable.expr))).toBe(1);

  process.stdout.write(
    [`${prometheusVersion()}; ${((Date.now() - started) / 1000).toFixed(1)} s since the suite started`, 'series per query:', describeCounts(counts), ''].join('\n'),
  );
}, 600_000);
