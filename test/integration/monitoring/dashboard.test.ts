/**
 * The Grafana dashboard: the committed JSON is what the generator (charts/drainguard/dashboards/
 * drainguard.ts) makes now, and the chart ships exactly it in a ConfigMap labelled for Grafana's
 * dashboard sidecar (monitoring.dashboard). Its queries return data: live.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DASHBOARD_JSON, dashboardJson } from '../../../charts/drainguard/dashboards/drainguard';
import { findOne, renderChart, REPO_ROOT, type K8sObject } from '../../support/helm';
import { validateObject } from '../chart/validate';
import { dashboardQueries } from './queries';

const committed = readFileSync(join(REPO_ROOT, DASHBOARD_JSON), 'utf8');

test('the committed dashboard JSON is the generator output (else: npm run dashboard:generate)', () => {
  expect(dashboardJson()).toBe(committed);
});

type ConfigMap = K8sObject & { data: Record<string, string> };
const dashboardConfigMap = (set: Record<string, string | boolean> = {}): ConfigMap =>
  findOne(renderChart({ set: { 'monitoring.dashboard.enabled': true, ...set } }), 'ConfigMap', 'drainguard-dashboard') as ConfigMap;

test('absent unless monitoring.dashboard.enabled', () => {
  expect(renderChart().filter((o) => o.kind === 'ConfigMap').map((o) => o.metadata.name)).toEqual(['drainguard-config']);
});

test('the chart ships the committed JSON in a ConfigMap with the sidecar label grafana_dashboard: "1"', async () => {
  const configMap = dashboardConfigMap();
  expect(await validateObject(configMap)).toEqual([]);
  expect(configMap.metadata.namespace).toBe('drainguard-system');
  expect(configMap.metadata.labels?.grafana_dashboard).toBe('1');
  expect(Object.keys(configMap.data)).toEqual(['drainguard.json']);
  // A block scalar keeps the text; `|-` drops the final newline.
  expect(`${configMap.data['drainguard.json']}\n`).toBe(committed);
});

test('label, label value, namespace and annotations follow the values (for a sidecar configured otherwise)', async () => {
  const configMap = dashboardConfigMap({
    'monitoring.dashboard.label': 'grafana.example/dashboard',
    'monitoring.dashboard.labelValue': 'ingress',
    'monitoring.dashboard.namespace': 'monitoring',
    'monitoring.dashboard.annotations.grafana_folder': 'Ingress',
  });
  expect(await validateObject(configMap)).toEqual([]);
  expect(configMap.metadata.labels?.['grafana.example/dashboard']).toBe('ingress');
  expect(configMap.metadata.labels?.grafana_dashboard).toBeUndefined();
  expect(configMap.metadata.namespace).toBe('monitoring');
  expect(configMap.metadata.annotations).toEqual({ grafana_folder: 'Ingress' });
});

test('variables for the data source, the drainguard release, and the Envoy namespace and workload', () => {
  const dashboard = JSON.parse(committed) as { templating: { list: { name: string; type: string; query: unknown }[] } };
  expect(dashboard.templating.list.map((v) => `${v.name}:${v.type}`)).toEqual(['datasource:datasource', 'job:query', 'namespace:query', 'workload:query']);
  const { panels } = dashboardQueries(JSON.parse(committed));
  // Every query uses the chosen data source, and is scoped by the variables.
  for (const query of panels) {
    expect(`${query.panel}: ${query.datasource}`).toBe(`${query.panel}: \${datasource}`);
    expect(`${query.panel}: ${/\$job|\$namespace/.test(query.expr)}`).toBe(`${query.panel}: true`);
  }
});
