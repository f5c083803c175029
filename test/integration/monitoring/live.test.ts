/**
 * Every query of the monitoring pack returns data from the real parts: the compiled `drainguard serve`
 * in its own process (tls.mode self against the API double, as the chart installs it by default) and
 * the compiled `drainguard report` in its own (watching the same API double, where the kubelet
 * simulator runs and ends protected Envoy pods), a real Prometheus scraping both with the chart's two
 * ServiceMonitors as helm renders them (the reporter's with honorLabels), and each dashboard query,
 * dashboard variable and alert expression asked through Prometheus' HTTP API. A query that names a
 * metric or label drainguard does not export returns nothing, and fails here; the drain queries must
 * also return the Envoy workload's own series (its namespace, not the reporter's).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:tls';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { writeFileSync, readFileSync } from 'node:fs';
import { DASHBOARD_JSON } from '../../../charts/drainguard/dashboards/drainguard';
import { assertDistBuilt, CLI_MAIN } from '../../support/build';
import { NODE } from '../../support/repo';
import { findOne, renderChart, reporterObjects, REPO_ROOT, webhookObjects, type K8sObject } from '../../support/helm';
import { KubeApiDouble } from '../../support/kube-api-double';
import { KubeletSimulator } from '../../support/kube/kubelet';
import { drainedExit, envoyWorkload, finishedRecord, rollPod, runPod, ENVOY, type Workload } from '../report/scenario';
import { admissionReview, eventually, fixturePods, httpsRequest, temporaryDirectory } from '../server/webhook-test-kit';
import { PrometheusServer, prometheusVersion, type Sample } from './prometheus';
import { dashboardQueries, metricsOf, readsReporter } from './queries';

const NAMESPACE = 'drainguard-system';
const RELEASE = 'drainguard';
/** Where the Envoy pods whose drains the reporter reports run. */
const ENVOY_NAMESPACE = 'projectcontour';
const ENVOY_WORKLOAD = 'daemonset/envoy';
/** Grafana's $__rate_interval is at least four scrape intervals; this leaves room on a loaded machine. */
const RATE_INTERVAL = '15s';

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

// The chart as the test installs it: the ServiceMonitor scraping every second, the rules with
// thresholds every alert crosses on what this test drives (the alert's own text otherwise).
const chart = renderChart({
  releaseName: RELEASE,
  namespace: NAMESPACE,
  set: {
    'metrics.serviceMonitor.enabled': true,
    'metrics.serviceMonitor.interval': '1s',
    'metrics.serviceMonitor.scrapeTimeout': '1s',
    'monitoring.rules.enabled': true,
    // A year of validity (self mode) is within 400 days.
    'monitoring.rules.certificateExpiry.days': 400,
  },
  setJson: { 'monitoring.rules.admissionLatency.timeoutFraction': 0.000001 },
});
type Deployment = K8sObject & { spec: { template: { spec: { containers: { name: string }[] } } } };
type ServiceMonitor = K8sObject & { spec: { endpoints: ServiceMonitorEndpoint[] } };
/** A Service, the Deployment behind it and the ServiceMonitor that scrapes it: the webhook's, the reporter's. */
const scrapeTarget = (objects: K8sObject[]) => ({
  service: findOne(objects, 'Service'),
  deployment: findOne(objects, 'Deployment') as Deployment,
  monitor: findOne(objects, 'ServiceMonitor') as ServiceMonitor,
});
const webhook = scrapeTarget(webhookObjects(chart));
const reporterParts = scrapeTarget(reporterObjects(chart));
const { service } = webhook;
const rules = (findOne(chart, 'PrometheusRule') as K8sObject & { spec: { groups: { rules: Rule[] }[] } }).spec.groups.flatMap((g) => g.rules);
const webhookConfigName = findOne(chart, 'MutatingWebhookConfiguration').metadata.name;
const dashboard = dashboardQueries(JSON.parse(readFileSync(join(REPO_ROOT, DASHBOARD_JSON), 'utf8')));

/**
 * The scrape job the Prometheus Operator generates for a ServiceMonitor's endpoint (its
 * generateServiceMonitorConfig): scheme, path, interval, timeout, honor_labels and TLS settings from
 * the endpoint; target labels namespace, service, pod, container, job (the Service's name) and
 * endpoint (the port's name). Kubernetes service discovery becomes one static target: this test's
 * process.
 */
function scrapeConfig({ service, deployment, monitor }: ReturnType<typeof scrapeTarget>, address: string, pod: string): Record<string, unknown> {
  const [endpoint] = monitor.spec.endpoints;
  const { insecureSkipVerify, ...unsupported } = endpoint!.tlsConfig ?? {};
  if (Object.keys(unsupported).length > 0) throw new Error(`tlsConfig ${Object.keys(unsupported).join(', ')}: refer to Secrets this test does not have`);
  const label = (target_label: string, replacement: string) => ({ target_label, replacement });
  return {
    job_name: `serviceMonitor/${NAMESPACE}/${monitor.metadata.name}/0`,
    scheme: endpoint!.scheme,
    metrics_path: endpoint!.path,
    scrape_interval: endpoint!.interval,
    scrape_timeout: endpoint!.scrapeTimeout,
    honor_labels: endpoint!.honorLabels ?? false,
    ...(endpoint!.tlsConfig ? { tls_config: { insecure_skip_verify: insecureSkipVerify } } : {}),
    static_configs: [{ targets: [address] }],
    relabel_configs: [
      label('namespace', NAMESPACE),
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
let double: KubeApiDouble;
let prometheus: PrometheusServer | undefined;
let server: { child: ChildProcess; port: number; exited: Promise<unknown> } | undefined;
let reporter: { child: ChildProcess; port: number; exited: Promise<unknown> } | undefined;
let kubelet: KubeletSimulator;
let caBundle: string;
const started = Date.now();

/** Starts the compiled `drainguard serve`; resolves with the port of its "listening" log line. */
function serve(kubeconfig: string): Promise<{ child: ChildProcess; port: number; exited: Promise<unknown> }> {
  return startCli(
    [
      'serve',
      ...['--host', '127.0.0.1', '--port', '0', '--tls-mode', 'self', '--kubeconfig', kubeconfig],
      ...['--namespace', NAMESPACE, '--secret-name', `${RELEASE}-tls`, '--webhook-config-name', webhookConfigName, '--service-name', service.metadata.name],
      // One large slot and no waiting line: a second large review while one holds the slot gets 429.
      ...['--max-concurrent-admissions', '1', '--max-queued-admissions', '0'],
      // After SIGTERM it keeps serving /metrics, not ready, this long (the test ends it sooner).
      ...['--shutdown-delay', '60s'],
    ],
    'listening',
  );
}

/** Starts the compiled `drainguard report`; resolves with its port once it has listed the protected pods. */
function report(kubeconfig: string): Promise<{ child: ChildProcess; port: number; exited: Promise<unknown> }> {
  return startCli(['report', '--kubeconfig', kubeconfig, '--host', '127.0.0.1', '--port', '0', '--instance', `${RELEASE}-reporter-0`, '--webhook-config-name', webhookConfigName], 'reporter started');
}

/** The compiled CLI in its own process; resolves with the port of its `started` log line. */
async function startCli(args: string[], started: string): Promise<{ child: ChildProcess; port: number; exited: Promise<unknown> }> {
  const child = spawn(NODE, [CLI_MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = once(child, 'exit');
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const entry = JSON.parse(line) as { msg?: string; port?: number };
      if (entry.msg === started) resolve(entry.port!);
    });
    void exited.then(() => reject(new Error(`drainguard ${args[0]} exited before "${started}": ${stderr}`)));
  });
  return { child, port, exited };
}

beforeAll(async () => {
  assertDistBuilt();
  directory = temporaryDirectory();
  double = await KubeApiDouble.start();
  double.putWebhookConfiguration({
    metadata: { name: webhookConfigName },
    webhooks: [{ name: 'pods.drainguard.io', clientConfig: { service: { name: service.metadata.name, namespace: NAMESPACE } } }],
  });
  const kubeconfig = join(directory.path, 'kubeconfig');
  writeFileSync(kubeconfig, double.kubeconfigYaml());
  server = await serve(kubeconfig);
  kubelet = new KubeletSimulator(double);
  reporter = await report(kubeconfig);
  caBundle = await eventually('the caBundle to be published', async () => {
    const stored = double.webhookConfiguration<{ webhooks: { clientConfig: { caBundle?: string } }[] }>(webhookConfigName);
    const bundle = stored.webhooks[0]!.clientConfig.caBundle;
    return bundle ? Buffer.from(bundle, 'base64').toString('utf8') : undefined;
  });
  prometheus = await PrometheusServer.start(
    {
      global: { evaluation_interval: '1s' },
      scrape_configs: [scrapeConfig(webhook, `127.0.0.1:${server.port}`, `${RELEASE}-0`), scrapeConfig(reporterParts, `127.0.0.1:${reporter.port}`, `${RELEASE}-reporter-0`)],
    },
    directory.path,
    // The expired-certificate alerts are asked at a time after the certificates' notAfter: a lookback
    // longer than their validity lets that evaluation see the samples scraped now.
    ['--query.lookback-delta=800d'],
  );
}, 120_000);

afterAll(async () => {
  server?.child.kill('SIGKILL');
  reporter?.child.kill('SIGKILL');
  await Promise.all([server?.exited, reporter?.exited]);
  await prometheus?.stop();
  await double?.close();
  directory?.remove();
});

const SERVICE_DNS = () => `${service.metadata.name}.${NAMESPACE}.svc`;
const post = (body: string, headers: Record<string, string | number> = {}) =>
  httpsRequest({ port: server!.port, ca: caBundle, servername: SERVICE_DNS(), body, headers });
const scraped = async (name: string): Promise<number | undefined> => {
  const text = (await httpsRequest({ port: server!.port, ca: caBundle, servername: SERVICE_DNS(), method: 'GET', path: '/metrics' })).text;
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : undefined;
};

/** Holds the one large admission slot: headers of a large review, and only part of its body. */
async function holdLargeSlot(): Promise<{ release(): void }> {
  const socket = connect({ host: '127.0.0.1', port: server!.port, ca: caBundle, servername: SERVICE_DNS() });
  await once(socket, 'secureConnect');
  socket.write(`POST /mutate HTTP/1.1\r\nHost: ${SERVICE_DNS()}\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n{"apiVersion":`);
  socket.on('error', () => undefined);
  return { release: () => socket.destroy() };
}

/**
 * One of each way a protected Envoy ends, on pods of the DaemonSet: a drain, a drain that hit its
 * deadline with connections open on a listener, a termination with no record, one whose record cannot
 * be read, and an Envoy OOM-killed while it ran (restarted in place). Five reports.
 */
const REPORTS_PER_ROUND = 5;
function endEnvoys(daemonSet: Workload): void {
  const roll = (exit: Parameters<typeof rollPod>[2]) => rollPod(kubelet, runPod(kubelet, daemonSet), exit);
  roll(drainedExit(finishedRecord('drained', { durationMs: 12_000, connectionsAtStart: 300 })));
  roll(drainedExit(finishedRecord('deadline', { durationMs: 290_000, connectionsAtStart: 40, connectionsAtEnd: 17, openListeners: [{ name: 'ingress_https', connections: 17 }] })));
  roll({ exitCode: 0, reason: 'Completed' });
  roll(drainedExit('{"format":"not a drain record"'));
  const crashing = runPod(kubelet, daemonSet);
  kubelet.containerExited(ENVOY_NAMESPACE, crashing.metadata.name, ENVOY, { exitCode: 137, reason: 'OOMKilled' });
  kubelet.restartContainer(ENVOY_NAMESPACE, crashing.metadata.name, ENVOY);
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
  const daemonSet = envoyWorkload(double, { namespace: ENVOY_NAMESPACE, name: 'envoy' });
  await eventually('Prometheus to scrape the webhook and the reporter', async () => ((await prometheus!.query('up == 1')).length === 2 ? true : undefined), { attempts: 100, intervalMs: 200 });
  await admitOneOfEach();
  endEnvoys(daemonSet);
  await eventually('Prometheus to scrape the five results', async () => ((await scrapedResults()) === 5 ? true : undefined), { attempts: 100, intervalMs: 200 });
  await eventually('Prometheus to scrape the first reports', async () => ((await reportsStored()) === REPORTS_PER_ROUND ? true : undefined), { attempts: 100, intervalMs: 200 });
  await admitOneOfEach();
  endEnvoys(daemonSet);

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
    { attempts: 150, intervalMs: 200 },
  ).catch(async (error: Error) => {
    throw new Error(`${error.message}\nseries per query:\n${describeCounts(counts)}\ntargets:\n${await prometheus!.targets()}\n${prometheus!.log}`);
  });

  // The drain queries (2 variables, 7 panel queries, 2 alerts) answer with the Envoy workload's own
  // series: its namespace, not the reporter's (honorLabels), and the reasons the reporter counted.
  const drainVariables = dashboard.variables.filter((v) => readsReporter(v.selector));
  const drainQueries = [...queries.panels.map((q) => ({ ...q, expr: asGrafanaSends(q.expr) })), ...onRunning].filter((q) => readsReporter(q.expr));
  expect([drainVariables.length, drainQueries.length]).toEqual([2, 9]);
  expect(Object.fromEntries(await Promise.all(drainVariables.map(async (v) => [v.name, await prometheus!.labelValues(v.label, asGrafanaSends(v.selector))])))).toEqual({
    namespace: [ENVOY_NAMESPACE],
    workload: [ENVOY_WORKLOAD],
  });
  const workload = `${ENVOY_NAMESPACE} ${ENVOY_WORKLOAD}`;
  const seriesOf = (samples: Sample[]) => samples.map(({ metric }) => [metric.namespace, metric.workload, metric.reason].filter(Boolean).join(' ')).sort();
  const expectedSeries = (expr: string) =>
    !expr.includes('by (namespace, workload, reason)') ? [workload] : expr.includes('drainguard_envoy_exits_total') ? [`${workload} OOMKilled`] : [`${workload} deadline`, `${workload} drained`];
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

  // The webhook-unavailable alert: silent while the replica is ready, firing once it is not (SIGTERM:
  // readiness fails, /metrics still answers) and staying so when it is gone.
  expect(await prometheus!.query(unavailable.expr)).toEqual([]);
  server!.child.kill('SIGTERM');
  await eventually('the not-ready replica to be scraped', async () => {
    const ready = await prometheus!.query(`drainguard_ready{job="${service.metadata.name}"}`);
    return ready.length === 1 && ready[0]!.value[1] === '0' ? true : undefined;
  }, { attempts: 100, intervalMs: 200 });
  expect(await ask(`${unavailable.what} (after SIGTERM)`, () => prometheus!.query(unavailable.expr))).toBe(1);

  process.stdout.write(
    [`${prometheusVersion()}; ${((Date.now() - started) / 1000).toFixed(1)} s since the suite started`, 'series per query:', describeCounts(counts), ''].join('\n'),
  );
}, 120_000);
