import { parseDocument } from 'yaml';
import { findWorkloads } from '../../../src/cli/pod-templates';

const POD_SPEC = 'spec:\n  containers:\n  - name: envoy\n';
const indent = (text: string, spaces: number) => text.replace(/^(?=.)/gm, ' '.repeat(spaces));

function found(text: string) {
  const document = parseDocument(text);
  return findWorkloads(document).map((workload) => ({
    kind: workload.kind,
    name: workload.name,
    item: workload.item,
    template: workload.template ? workload.template.toJS(document) : null,
    aliased: workload.aliased,
  }));
}

const template = { spec: { containers: [{ name: 'envoy' }] } };

describe('findWorkloads', () => {
  test('a Pod is its own template', () => {
    expect(found(`apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ns\n${POD_SPEC}`)).toEqual([
      { kind: 'Pod', name: 'ns/p', item: null, template: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'ns' }, ...template }, aliased: false },
    ]);
  });

  test.each([
    ['apps/v1', 'Deployment'],
    ['apps/v1', 'DaemonSet'],
    ['apps/v1', 'StatefulSet'],
    ['apps/v1', 'ReplicaSet'],
    ['batch/v1', 'Job'],
  ])('%s %s: spec.template', (apiVersion, kind) => {
    const text = `apiVersion: ${apiVersion}\nkind: ${kind}\nmetadata:\n  name: w\nspec:\n  template:\n${indent(POD_SPEC, 4)}`;
    expect(found(text)).toEqual([{ kind, name: 'w', item: null, template, aliased: false }]);
  });

  test('CronJob: spec.jobTemplate.spec.template', () => {
    const text = `apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: c\nspec:\n  schedule: "@daily"\n  jobTemplate:\n    spec:\n      template:\n${indent(POD_SPEC, 8)}`;
    expect(found(text)).toEqual([{ kind: 'CronJob', name: 'c', item: null, template, aliased: false }]);
  });

  test('a List: every workload item, numbered from 1, others ignored', () => {
    const text = [
      'apiVersion: v1',
      'kind: List',
      'items:',
      '- apiVersion: v1',
      '  kind: Service',
      '  metadata: {name: s}',
      '- apiVersion: apps/v1',
      '  kind: DaemonSet',
      '  metadata: {name: d, namespace: n}',
      '  spec:',
      '    template:',
      indent(POD_SPEC, 6).trimEnd(),
      '- apiVersion: v1',
      '  kind: Pod',
      '  metadata: {generateName: envoy-}',
      indent(POD_SPEC, 2).trimEnd(),
      '',
    ].join('\n');
    expect(found(text)).toEqual([
      { kind: 'DaemonSet', name: 'n/d', item: 2, template, aliased: false },
      { kind: 'Pod', name: 'envoy-*', item: 3, template: expect.objectContaining(template), aliased: false },
    ]);
  });

  test('non-workloads, scalars, empty documents and same-named kinds of other API groups are not workloads', () => {
    expect(found('apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {}\n')).toEqual([]);
    expect(found('just a string\n')).toEqual([]);
    expect(found('')).toEqual([]);
    expect(found(`apiVersion: example.com/v1\nkind: Deployment\nspec:\n  template:\n${indent(POD_SPEC, 4)}`)).toEqual([]);
    expect(found('apiVersion: v1\nkind: List\nitems: []\n')).toEqual([]);
  });

  test('a workload without a pod template is found, with no template', () => {
    expect(found('apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1}\n')).toEqual([
      { kind: 'Deployment', name: 'd', item: null, template: null, aliased: false },
    ]);
  });

  test('a template reached through a YAML alias is flagged, not mistaken for a missing one', () => {
    const text = [
      'kind: List',
      'items:',
      '- {apiVersion: apps/v1, kind: Deployment, metadata: {name: a}, spec: {template: &t {spec: {containers: [{name: envoy}]}}}}',
      '- {apiVersion: apps/v1, kind: Deployment, metadata: {name: b}, spec: {template: *t}}',
      '',
    ].join('\n');
    expect(found(text).map(({ name, template, aliased }) => [name, template !== null, aliased])).toEqual([
      ['a', true, false],
      ['b', false, true],
    ]);
  });
});
