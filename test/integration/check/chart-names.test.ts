/**
 * `drainguard check` finds an installation by the names the chart gives its objects: its naming rules
 * must agree with what `helm template` renders, for the default release and for the others.
 */
import { chartNames } from '../../../src/check/names';
import { findOne, webhookObjects, renderChart, type RenderOptions } from '../../support/helm';

const cases: [string, RenderOptions & { fullnameOverride?: string }][] = [
  ['the default release', { releaseName: 'drainguard', namespace: 'drainguard-system' }],
  ['a release named after the chart', { releaseName: 'drainguard-prod', namespace: 'ops' }],
  ['a release with another name', { releaseName: 'edge', namespace: 'ingress-tools' }],
  ['fullnameOverride', { releaseName: 'edge', namespace: 'ops', fullnameOverride: 'dg' }],
];

test.each(cases)('%s', (_title, { fullnameOverride, ...render }) => {
  const objects = renderChart({ ...render, ...(fullnameOverride ? { set: { fullnameOverride } } : {}) });
  const names = chartNames(render.releaseName!, render.namespace!, fullnameOverride);
  expect(findOne(webhookObjects(objects), 'MutatingWebhookConfiguration').metadata.name).toBe(names.webhookConfiguration);
  expect(findOne(webhookObjects(objects), 'Deployment').metadata.name).toBe(names.deployment);
  expect(findOne(webhookObjects(objects), 'Service').metadata.name).toBe(names.service);
  expect(findOne(webhookObjects(objects), 'ConfigMap').metadata.name).toBe(names.configMap);
  const args = (findOne(webhookObjects(objects), 'Deployment') as unknown as { spec: { template: { spec: { containers: { args: string[] }[] } } } }).spec.template.spec.containers[0]!.args;
  expect(args[args.indexOf('--secret-name') + 1]).toBe(names.tlsSecret);
});
