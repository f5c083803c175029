/**
 * The chart's PrometheusRule (monitoring.rules), rendered by the real helm and checked by the real
 * promtool: the rules load (`promtool check rules`), and each alert fires on its condition and stays
 * silent otherwise, `for:` durations included (`promtool test rules` with alerts.promtool.yaml and
 * certificates.promtool.yaml beside this file). The object validates against the Prometheus Operator's
 * CRD schema, thresholds come from the values, and every runbook_url names a section of
 * docs/monitoring.md.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { findOne, renderChart, REPO_ROOT, type K8sObject, type RenderOptions } from '../../support/helm';
import { promtool } from './prometheus';
import { validateObject } from '../chart/validate';

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}
type PrometheusRule = K8sObject & { spec: { groups: { name: string; rules: Rule[] }[] } };

const PROMTOOL_TESTS = ['alerts.promtool.yaml', 'certificates.promtool.yaml'];

function renderRules(options: RenderOptions = {}): PrometheusRule {
  const objects = renderChart({ ...options, set: { 'monitoring.rules.enabled': true, ...options.set } });
  return findOne(objects, 'PrometheusRule') as PrometheusRule;
}
const alerts = (rule: PrometheusRule): Rule[] => rule.spec.groups.flatMap((group) => group.rules);
const alert = (rule: PrometheusRule, name: string): Rule => {
  const found = alerts(rule).find((r) => r.alert === name);
  if (!found) throw new Error(`no alert ${name}`);
  return found;
};

/** A directory with the rendered groups as rules.yaml and the promtool unit tests beside them. */
function ruleDirectory(rule: PrometheusRule): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), 'drainguard-rules-'));
  writeFileSync(join(path, 'rules.yaml'), stringify({ groups: rule.spec.groups }));
  for (const file of PROMTOOL_TESTS) copyFileSync(join(__dirname, file), join(path, file));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

const defaults = renderRules();

test('absent unless monitoring.rules.enabled', () => {
  expect(renderChart().some((o) => o.kind === 'PrometheusRule')).toBe(false);
});

test('the rules load in promtool, and each alert fires on its condition only (promtool test rules)', () => {
  const directory = ruleDirectory(defaults);
  try {
    const check = promtool(['check', 'rules', 'rules.yaml'], directory.path);
    expect(check).toEqual({ status: 0, output: expect.stringContaining(`SUCCESS: ${alerts(defaults).length} rules found`) });
    const unit = promtool(['test', 'rules', ...PROMTOOL_TESTS], directory.path);
    expect(unit.output).not.toMatch(/FAILED/);
    expect(unit.status).toBe(0);
  } finally {
    directory.remove();
  }
});

test('every alert of the chart has a promtool unit test that expects it to fire', () => {
  const tested = PROMTOOL_TESTS.map((file) => readFileSync(join(__dirname, file), 'utf8')).join('\n');
  const firing = new Set([...tested.matchAll(/alertname: (\w+)\n\s+exp_alerts:\n\s+- exp_labels/g)].map((m) => m[1]));
  expect(alerts(defaults).map((r) => r.alert).filter((name) => !firing.has(name))).toEqual([]);
});

test('the PrometheusRule validates against the Prometheus Operator CRD schema, which refuses a misspelt field', async () => {
  expect(await validateObject(defaults)).toEqual([]);
  const broken = structuredClone(defaults);
  (broken.spec.groups[0]!.rules[0] as unknown as Record<string, unknown>).exprs = 'up';
  delete (broken.spec.groups[0]!.rules[0] as Partial<Rule>).expr;
  broken.spec.groups[1]!.name = broken.spec.groups[0]!.name;
  const errors = (await validateObject(broken)).join('\n');
  expect(errors).toMatch(/additional properties/);
  expect(errors).toMatch(/expr/);
  expect(errors).toMatch(/x-kubernetes-list-map-keys/);
});

test('each alert has a summary, a description and a runbook_url naming a section of docs/monitoring.md', () => {
  const doc = readFileSync(join(REPO_ROOT, 'docs', 'monitoring.md'), 'utf8');
  // GitHub's anchor of a heading: lower case, spaces to dashes, punctuation dropped.
  const anchors = new Set([...doc.matchAll(/^#+ (.+)$/gm)].map((m) => m[1]!.toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-')));
  for (const rule of alerts(defaults)) {
    expect(Object.keys(rule.annotations).sort()).toEqual(['description', 'runbook_url', 'summary']);
    const [page, anchor] = rule.annotations.runbook_url!.split('#');
    expect(page).toBe('https://github.com/drainguard/drainguard/blob/main/docs/monitoring.md');
    expect(`${rule.alert}: ${anchors.has(anchor!) ? anchor : `#${anchor} is not a heading`}`).toBe(`${rule.alert}: ${rule.alert.toLowerCase()}`);
  }
});

test('the webhook alerts select this release: job is the Service, namespace the release namespace', () => {
  const rule = renderRules({ releaseName: 'edge', namespace: 'ingress-guard' });
  for (const name of ['DrainguardWebhookUnavailable', 'DrainguardAdmissionErrors', 'DrainguardCertificateExpired']) {
    expect(alert(rule, name).expr).toContain('job="edge-drainguard", namespace="ingress-guard"');
  }
  // The drain alerts are about Envoy's namespaces, wherever drainguard runs.
  expect(alert(rule, 'DrainguardDrainsAtDeadline').expr).not.toContain('job=');
});

test('the unavailable alert says what failurePolicy does: Ignore admits pods unprotected, Fail refuses them', () => {
  const ignore = alert(defaults, 'DrainguardWebhookUnavailable');
  expect(ignore.labels.severity).toBe('warning');
  expect(ignore.annotations.description).toMatch(/failurePolicy is Ignore: Envoy pods created now .* are admitted unprotected/);

  const fail = alert(renderRules({ set: { 'webhook.failurePolicy': 'Fail' } }), 'DrainguardWebhookUnavailable');
  expect(fail.labels.severity).toBe('critical');
  expect(fail.annotations.description).toMatch(/failurePolicy is Fail: Envoy pods created in a namespace .* is refused/);
  // Without matchConditions the API server sends every pod of an opted-in namespace.
  const everyPod = alert(renderRules({ set: { 'webhook.failurePolicy': 'Fail', 'webhook.matchConditions': false } }), 'DrainguardWebhookUnavailable');
  expect(everyPod.annotations.description).toMatch(/failurePolicy is Fail: every pod created/);
});

test('thresholds, durations, labels and the runbook address come from the values', () => {
  const rule = renderRules({
    // helm's --set reads 0.8 as a string, which the schema refuses: fractions go in a values file or --set-json.
    setJson: { 'monitoring.rules.admissionLatency.timeoutFraction': 0.8, 'monitoring.rules.admissionErrors.perSecond': 0.5 },
    set: {
      'webhook.timeoutSeconds': 5,
      'monitoring.rules.admissionsThrottled.for': '15m',
      'monitoring.rules.certificateExpiry.days': 30,
      'monitoring.rules.drainsAtDeadline.perHour': 3,
      'monitoring.rules.alertLabels.team': 'ingress',
      'monitoring.rules.labels.release': 'kube-prometheus-stack',
      'monitoring.rules.runbookUrl': 'https://wiki.example/drainguard',
    },
  });
  expect(alert(rule, 'DrainguardAdmissionLatencyHigh').expr).toMatch(/\) > 4$/);
  expect(alert(rule, 'DrainguardAdmissionErrors').expr).toMatch(/\) > 0\.5$/);
  expect(alert(rule, 'DrainguardAdmissionsThrottled').for).toBe('15m');
  expect(alert(rule, 'DrainguardCACertificateExpiringSoon').expr).toContain('< 30 * 86400');
  expect(alert(rule, 'DrainguardDrainsAtDeadline').expr).toMatch(/\) > 3$/);
  expect(rule.metadata.labels?.release).toBe('kube-prometheus-stack');
  for (const r of alerts(rule)) {
    expect(r.labels.team).toBe('ingress');
    expect(r.annotations.runbook_url).toBe(`https://wiki.example/drainguard#${r.alert.toLowerCase()}`);
  }
});

test('the schema refuses a misspelt or out-of-range monitoring value', () => {
  expect(() => renderRules({ set: { 'monitoring.rules.admissionErrors.perSecnd': 1 } })).toThrow(/perSecnd/);
  expect(() => renderRules({ set: { 'monitoring.rules.admissionLatency.timeoutFraction': 2 } })).toThrow(/timeoutFraction/);
  expect(() => renderRules({ set: { 'monitoring.rules.webhookUnavailable.for': 'soon' } })).toThrow(/for/);
  expect(() => renderChart({ set: { 'monitoring.dashboard.lable': 'x' } })).toThrow(/lable/);
});
