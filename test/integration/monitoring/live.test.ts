/**
 * Every query of the monitoring pack returns data from the real parts: the compiled `drainguard serve`
 * in its own process (tls.mode self against the API double, as the chart installs it by default), a
 * real Prometheus scraping its /metrics over HTTPS with the chart's ServiceMonitor settings as helm
 * renders them, and each dashboard query, dashboard variable and alert expression asked through
 * Prometheus' HTTP API. A query that names a metric or label drainguard does not export returns
 * nothing, and fails here.
 *
 * The drain panels and alerts read `drainguard report`'s metrics (REPORTER_METRICS). Until the
 * reporter runs in this test, their queries are checked only for naming the agreed metrics (and by
 * promtool's unit tests, rules.test.ts); they join the live checks by adding the reporter to
 * LIVE_SOURCES and starting it below.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:tls';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { writeFileSync, readFileSync } from 'node:fs';
import { REPORTER_METRICS, DASHBOARD_JSON } from '../../../charts/drainguard/dashboards/drainguard';
import { assertDistBuilt, CLI_MAIN } from '../../support/build';
import { NODE } from '../../support/repo';
import { findOne, renderChart, REPO_ROOT, type K8sObject } from '../../support/helm';
import { KubeApiDouble } from '../../support/kube-api-double';
import { admissionReview, eventually, fixturePods, httpsRequest, temporaryDirectory } from '../server/webhook-test-kit';
import { PrometheusServer, prometheusVersion, type Sample } from './prometheus';
import { dashboardQueries, metricsOf, readsReporter } from './queries';

const NAMESPACE = 'drainguard-system';
const RELEASE = 'drainguard';
/** Which exporters run in this test: queries of the others are not asked yet (see the file comment). */
const LIVE_SOURCES = { webhook: true, reporter: false } as const;
/** Grafana's $__rate_interval is at least four scrape intervals; this leaves room on a loaded machine. */
const RATE_INTERVAL = '15s';

interface ServiceMonitorEndpoint {
  port: string;
  scheme: string;
  path: string;
  interval: string;
  scrapeTimeout: string;
  tlsConfig: Record<string, unknown>;
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
const service = findOne(chart, 'Service');
const deployment = findOne(chart, 'Deployment') as K8sObject & { spec: { template: { spec: { containers: { name: string }[] } } } };
const monitor = findOne(chart, 'ServiceMonitor') as K8sObject & { spec: { endpoints: ServiceMonitorEndpoint[] } };
const rules = (findOne(chart, 'PrometheusRule') as K8sObject & { spec: { groups: { rules: Rule[] }[] } }).spec.groups.flatMap((g) => g.rules);
const webhookConfigName = findOne(chart, 'MutatingWebhookConfiguration').metadata.name;
const dashboard = dashboardQueries(JSON.parse(readFileSync(join(REPO_ROOT, DASHBOARD_JSON), 'utf8')));

/**
 * The scrape job the Prometheus Operator generates for the ServiceMonitor's endpoint (its
 * generateServiceMonitorConfig): scheme, path, interval, timeout and TLS settings from the endpoint;
 * target labels namespace, service, pod, container, job (the Service's name) and endpoint (the port's
 * name). Kubernetes service discovery becomes one static target: this test's server.
 */
function scrapeConfig(address: string, pod: string): Record<string, unknown> {
  const [endpoint] = monitor.spec.endpoints;
  const { insecureSkipVerify, ...unsupported } = endpoint!.tlsConfig;
  if (Object.keys(unsupported).length > 0) throw new Error(`tlsConfig ${Object.keys(unsupported).join(', ')}: refer to Secrets this test does not have`);
  const label = (target_label: string, replacement: string) => ({ target_label, replacement });
  return {
    job_name: `serviceMonitor/${NAMESPACE}/${monitor.metadata.name}/0`,
    scheme: endpoint!.scheme,
    metrics_path: endpoint!.path,
    scrape_interval: endpoint!.interval,
    scrape_timeout: endpoint!.scrapeTimeout,
    tls_config: { insecure_skip_verify: insecureSkipVerify },
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

const live = (expr: string): boolean => (readsReporter(expr) ? LIVE_SOURCES.reporter : LIVE_SOURCES.webhook);

let directory: ReturnType<typeof temporaryDirectory>;
let double: KubeApiDouble;
let prometheus: PrometheusServer | undefined;
let server: { child: ChildProcess; port: number; exited: Promise<unknown> } | undefined;
let caBundle: string;
const started = Date.now();

/** Starts the compiled `drainguard serve`; resolves with the port of its "listening" log line. */
async function serve(kubeconfig: string): Promise<{ child: ChildProcess; port: number; exited: Promise<unknown> }> {
  const child = spawn(
    NODE,
    [
      CLI_MAIN,
      'serve',
      ...['--host', '127.0.0.1', '--port', '0', '--tls-mode', 'self', '--kubeconfig', kubeconfig],
      ...['--namespace', NAMESPACE, '--secret-name', `${RELEASE}-tls`, '--webhook-config-name', webhookConfigName, '--service-name', service.metadata.name],
      // One large slot and no waiting line: a second large review while one holds the slot gets 429.
      ...['--max-concurrent-admissions', '1', '--max-queued-admissions', '0'],
      // After SIGTERM it keeps serving /metrics, not ready, this long (the test ends it sooner).
      ...['--shutdown-delay', '60s'],
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = once(child, 'exit');
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const entry = JSON.parse(line) as { msg?: string; port?: number };
      if (entry.msg === 'listening') resolve(entry.port!);
    });
    void exited.then(() => reject(new Error(`drainguard serve exited before listening: ${stderr}`)));
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
  caBundle = await eventually('the caBundle to be published', async () => {
    const stored = double.webhookConfiguration<{ webhooks: { clientConfig: { caBundle?: string } }[] }>(webhookConfigName);
    const bundle = stored.webhooks[0]!.clientConfig.caBundle;
    return bundle ? Buffer.from(bundle, 'base64').toString('utf8') : undefined;
  });
  prometheus = await PrometheusServer.start(
    { global: { evaluation_interval: '1s' }, scrape_configs: [scrapeConfig(`127.0.0.1:${server.port}`, `${RELEASE}-0`)] },
    directory.path,
    // The expired-certificate alerts are asked at a time after the certificates' notAfter: a lookback
    // longer than their validity lets that evaluation see the samples scraped now.
    ['--query.lookback-delta=800d'],
  );
}, 120_000);

afterAll(async () => {
  server?.child.kill('SIGKILL');
  await server?.exited;
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
  await eventually('Prometheus to scrape drainguard', async () => ((await prometheus!.query('up == 1')).length === 1 ? true : undefined), { attempts: 100, intervalMs: 200 });
  await admitOneOfEach();
  await eventually('Prometheus to scrape the five results', async () => ((await scrapedResults()) === 5 ? true : undefined), { attempts: 100, intervalMs: 200 });
  await admitOneOfEach();

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

  // Each live query returns at least one series, once Prometheus has scraped the admissions above
  // (rates need two scrapes after them).
  const counts: Counts = new Map();
  const ask = async (what: string, run: () => Promise<Sample[] | string[]>): Promise<number> => {
    const n = (await run()).length;
    counts.set(what, n);
    return n;
  };
  const liveVariables = dashboard.variables.filter((v) => live(v.selector));
  const livePanels = queries.panels.filter((q) => live(q.expr));
  const liveAlerts = onRunning.filter((q) => live(q.expr));
  await eventually(
    'every live query to return a series',
    async () => {
      let empty = 0;
      for (const v of liveVariables) if ((await ask(`variable ${v.name}: label_values(${v.selector}, ${v.label})`, () => prometheus!.labelValues(v.label, asGrafanaSends(v.selector)))) === 0) empty++;
      for (const q of livePanels) if ((await ask(q.what, () => prometheus!.query(asGrafanaSends(q.expr)))) === 0) empty++;
      for (const q of liveAlerts) if ((await ask(q.what, () => prometheus!.query(q.expr))) === 0) empty++;
      return empty === 0 ? true : undefined;
    },
    { attempts: 150, intervalMs: 200 },
  ).catch(async (error: Error) => {
    throw new Error(`${error.message}\nseries per query:\n${describeCounts(counts)}\ntargets:\n${await prometheus!.targets()}\n${prometheus!.log}`);
  });

  // Every metric any query names, pending ones included, is one drainguard exports (as Prometheus
  // stored it) or one the reporter's contract names.
  const exported = (await prometheus!.labelValues('__name__', '{job=~".+"}')).map((name) => name.replace(/_(bucket|sum|count)$/, ''));
  const known = new Set([...exported, ...REPORTER_METRICS]);
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

  const pending = [
    ...dashboard.variables.filter((v) => !live(v.selector)).map((v) => `variable ${v.name}: label_values(${v.selector}, ${v.label})`),
    ...[...queries.panels, ...queries.alerts].filter((q) => !live(q.expr)).map((q) => q.what),
  ];
  process.stdout.write(
    [
      `${prometheusVersion()}; ${((Date.now() - started) / 1000).toFixed(1)} s since the suite started`,
      'series per live query:',
      describeCounts(counts),
      `not asked until the reporter runs here (${pending.length}):`,
      ...pending,
      '',
    ].join('\n'),
  );
  // Nothing is silently left out: a query is live, or it reads the reporter's metrics.
  expect([...queries.panels, ...queries.alerts].filter((q) => !live(q.expr) && !readsReporter(q.expr))).toEqual([]);
}, 120_000);
