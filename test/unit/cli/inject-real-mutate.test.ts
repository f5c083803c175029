import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { applyPatch, type Operation } from 'fast-json-patch';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { injectStream } from '../../../src/cli/inject';
import { findWorkloads } from '../../../src/cli/pod-templates';
import { podViewOf } from '../../../src/cli/yaml-patch';
import { DocumentPatcher } from '../../../src/cli/yaml-splice';
import { parseYamlStream } from '../../../src/cli/yaml-stream';
import { defaultConfig } from '../../../src/config/defaults';
import { mutate } from '../../../src/mutate';
import type { Pod } from '../../../src/k8s';
import { CONTOUR_FIXTURES } from '../../support/repo';
import { unjustifiedChanges } from './changed-lines';

/** The CLI plumbing with the real core, on the core's pod fixtures and Contour's DaemonSets. */

const POD_FIXTURES_DIR = resolve(__dirname, '../../fixtures/pods');
const POD_FIXTURES = readdirSync(POD_FIXTURES_DIR)
  .filter((name) => name.endsWith('.yaml'))
  .map((name) => join(POD_FIXTURES_DIR, name));

const config = defaultConfig();
const inject = (source: string, text: string) => injectStream(source, text, mutate, config);
const yaml11 = (text: string) => parse(text, { version: '1.1' }) as Record<string, unknown>;

/** What the webhook's answer does to a pod: the core's patch applied by fast-json-patch. */
function webhookResult(pod: Pod): Pod {
  const result = mutate(structuredClone(pod), config);
  return applyPatch(JSON.parse(JSON.stringify(pod)) as Pod, result.patch as Operation[], true, false).newDocument;
}

test('the fixtures are there', () => {
  expect(POD_FIXTURES.length).toBeGreaterThanOrEqual(8);
});

describe.each([...POD_FIXTURES, ...CONTOUR_FIXTURES])('%s', (fixture) => {
  const text = readFileSync(fixture, 'utf8');
  const once = inject(fixture, text);

  test('the output is the input with exactly the webhook patch applied', () => {
    const input = yaml11(text);
    const output = yaml11(once.output);
    if (input.kind === 'Pod') {
      expect(output).toEqual(webhookResult(input as unknown as Pod));
    } else {
      const template = (input.spec as { template: Pod }).template;
      expect((output.spec as { template: Pod }).template).toEqual(webhookResult(template));
      expect({ ...output, spec: { ...(output.spec as object), template: null } }).toEqual({ ...input, spec: { ...(input.spec as object), template: null } });
    }
  });

  test('injecting the output again gives identical bytes, reported as unchanged (or skipped)', () => {
    const twice = inject(fixture, once.output);
    expect(twice.output).toBe(once.output);
    const expected = once.workloads.map((workload) => (workload.outcome.status === 'mutated' ? 'unchanged' : workload.outcome.status));
    expect(twice.workloads.map((workload) => workload.outcome.status)).toEqual(expected);
  });

  test('every line the diff shows states a value the patch changed: nothing is re-indented or re-quoted', () => {
    expect(unjustifiedChanges(text, once.output)).toEqual([]);
  });

  test('the patch is spliced into the text, not re-serialised', () => {
    for (const streamDocument of parseYamlStream(text, fixture)) {
      const patcher = new DocumentPatcher(streamDocument);
      let patched = false;
      for (const { template } of findWorkloads(streamDocument.document)) {
        const { patch } = mutate(podViewOf(streamDocument.document, template!), config);
        if (patch.length > 0) patcher.apply(template!, patch);
        patched ||= patch.length > 0;
      }
      if (patched) expect(patcher.print()).toEqual({ text: once.output, spliced: true, fallbackReason: null });
    }
  });

  test("the file's comments are kept", () => {
    const comments = text.split('\n').filter((line) => line.trimStart().startsWith('#'));
    for (const comment of comments) expect(once.output).toContain(comment.trim());
  });
});

describe('every workload kind gets the pod template mutated exactly as the webhook mutates the pod', () => {
  const contourPod = yaml11(readFileSync(join(POD_FIXTURES_DIR, 'contour-main.yaml'), 'utf8')) as unknown as Pod;
  const template: Pod = { metadata: { labels: { app: 'envoy' } }, spec: contourPod.spec };
  const expectedTemplate = webhookResult(template);

  // Cloned so that `stringify` writes each template out instead of an alias to the first one.
  const wrap = (apiVersion: string, kind: string, spec: Record<string, unknown>) => ({
    apiVersion,
    kind,
    metadata: { name: 'envoy', namespace: 'edge' },
    spec: structuredClone(spec),
  });
  const workloads = [
    wrap('apps/v1', 'Deployment', { replicas: 2, template }),
    wrap('apps/v1', 'DaemonSet', { template }),
    wrap('apps/v1', 'StatefulSet', { serviceName: 'envoy', template }),
    wrap('apps/v1', 'ReplicaSet', { template }),
    wrap('batch/v1', 'Job', { template }),
    wrap('batch/v1', 'CronJob', { schedule: '@daily', jobTemplate: { spec: { template } } }),
  ];
  const templateOf = (workload: { kind: string; spec: Record<string, unknown> }): unknown =>
    workload.kind === 'CronJob' ? (workload.spec.jobTemplate as { spec: { template: unknown } }).spec.template : workload.spec.template;

  test.each(workloads.map((workload) => [workload.kind, workload] as const))('%s', (_kind, workload) => {
    const result = inject('w.yaml', stringify(workload));
    expect(result.workloads.map((report) => report.outcome.status)).toEqual(['mutated']);
    expect(templateOf(yaml11(result.output) as never)).toEqual(expectedTemplate);
  });

  test('all of them in one List, beside a Service', () => {
    const list = { apiVersion: 'v1', kind: 'List', items: [{ apiVersion: 'v1', kind: 'Service', metadata: { name: 's' } }, ...workloads] };
    const result = inject('list.yaml', stringify(list));
    expect(result.workloads.map((report) => [report.item, report.kind, report.outcome.status])).toEqual(
      workloads.map((workload, index) => [index + 2, workload.kind, 'mutated']),
    );
    const items = (yaml11(result.output).items as never[]).slice(1);
    for (const item of items) expect(templateOf(item)).toEqual(expectedTemplate);
    expect(inject('list.yaml', result.output).output).toBe(result.output);
  });

  test('a template without metadata gets one, as a pod always has', () => {
    const bare = wrap('apps/v1', 'DaemonSet', { template: { spec: contourPod.spec } });
    const result = inject('bare.yaml', stringify(bare));
    const output = yaml11(result.output) as { spec: { template: Pod } };
    expect(output.spec.template).toEqual(webhookResult({ metadata: {}, spec: contourPod.spec }));
    expect(output.spec.template.metadata?.annotations?.['drainguard.io/status']).toEqual(expect.any(String));
    expect(inject('bare.yaml', result.output).output).toBe(result.output);
  });
});

test('an invalid override is denied with the core message, naming the workload', () => {
  const text = readFileSync(join(POD_FIXTURES_DIR, 'contour-main.yaml'), 'utf8');
  const pod = yaml11(text) as unknown as Pod;
  pod.metadata = { ...pod.metadata, annotations: { 'drainguard.io/admin-address': 'http://example.com:9901' } };
  const result = inject('p.yaml', `---\n${stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } })}---\n${stringify(pod)}`);
  expect(result.rejections).toHaveLength(1);
  expect(result.rejections[0]).toMatch(new RegExp(`^p\\.yaml: document 2: Pod ${pod.metadata.namespace ? `${pod.metadata.namespace}/` : ''}${pod.metadata.name}: denied: .*drainguard\\.io/admin-address`));
});

test('several documents: only the Envoy ones change, the others are copied as they were', () => {
  const envoy = readFileSync(join(POD_FIXTURES_DIR, 'plain-envoy.yaml'), 'utf8');
  const web = readFileSync(join(POD_FIXTURES_DIR, 'not-envoy.yaml'), 'utf8');
  const result = inject('two.yaml', `${web}---\n${envoy}`);
  expect(result.output.startsWith(`${web}---\n`)).toBe(true);
  expect(parseAllDocuments(result.output)).toHaveLength(2);
  expect(result.workloads.map((workload) => workload.outcome.status)).toEqual(['skipped', 'mutated']);
});

test('a malformed pod template is rejected naming the workload and each bad field, never a crash', () => {
  const daemonSet = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'envoy', namespace: 'projectcontour' },
    spec: { template: { spec: { containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.31.0', args: ['-c', 5] }], volumes: { 'envoy-config': {} } } } },
  };
  const result = inject('ds.yaml', stringify(daemonSet));
  expect(result.rejections).toEqual([
    'ds.yaml: document 1: DaemonSet projectcontour/envoy: not a valid pod template: ' +
      'spec.containers[0].args[1] must be a string, got the number 5; spec.volumes must be a list, got an object',
  ]);
  expect(result.workloads).toEqual([]);
});
