/**
 * The webhook's matchConditions, evaluated for real: the CEL expression the real helm renders is run by
 * a CEL implementation (@bufbuild/cel, with RE2 regular expressions like the API server's) against pods,
 * and compared with what drainguard's core does with the same pods under the same configuration. The
 * condition may let through a pod drainguard then leaves alone, but it must never hold back a pod
 * drainguard would change or deny: such a pod would silently miss its drain.
 */
import { run, type CelInput } from '@bufbuild/cel';
import fc from 'fast-check';
import { defaultConfig } from '../../../src/config';
import type { Config } from '../../../src/config/types';
import { mutate, type Container, type Pod } from '../../../src/mutate';
import { renderChart, findOne, type K8sObject, type RenderOptions } from '../../support/helm';
import { fixturePods } from '../server/webhook-test-kit';

type Webhook = { matchConditions?: { name: string; expression: string }[] };

function expressionFor(options: RenderOptions): string {
  const config = findOne(renderChart({ kubeVersion: '1.31.0', ...options }), 'MutatingWebhookConfiguration') as K8sObject & { webhooks: Webhook[] };
  const conditions = config.webhooks[0]!.matchConditions!;
  expect(conditions).toHaveLength(1);
  return conditions[0]!.expression;
}

/** JSON as CEL sees Kubernetes objects: objects are maps with string keys. */
function toCel(value: unknown): CelInput {
  if (Array.isArray(value)) return value.map(toCel);
  if (value !== null && typeof value === 'object') return new Map(Object.entries(value).map(([key, item]) => [key, toCel(item)]));
  return value as CelInput;
}

function apiServerCalls(expression: string, pod: Pod): boolean {
  const result = run(expression, { object: toCel(pod) });
  if (typeof result !== 'boolean') throw new Error(`matchCondition evaluated to ${String(result)}`);
  return result;
}

/** What drainguard does with a pod it is sent: anything but "not an Envoy pod of drainguard's" needs the call. */
function drainguardActsOn(pod: Pod, config: Config): boolean {
  const result = mutate(structuredClone(pod), config);
  return !(result.status === 'skipped' && (result.reason === 'not-envoy' || result.reason === 'no-containers' || result.reason === 'envoy-supervised'));
}

const defaults = expressionFor({});
const pods = fixturePods();

test.each(pods.map(({ name, pod }) => [name, pod] as const))('fixture %s: sent to drainguard exactly when it is an Envoy pod', (_name, pod) => {
  expect(apiServerCalls(defaults, pod)).toBe(drainguardActsOn(pod, defaultConfig()));
});

describe('hand-picked pods', () => {
  const contour = pods.find(({ name }) => name.startsWith('contour-main'))!.pod;
  /** The Contour pod with its Envoy container renamed and given `image`, plus `annotations`. */
  const variant = (image: string | undefined, annotations: Record<string, string> = {}, name = 'proxy'): Pod => {
    const pod = structuredClone(contour);
    const envoy = pod.spec.containers.find((c) => c.name === 'envoy') as Container;
    envoy.name = name;
    // Only the image and the name tell here: Contour's `command: [envoy]` would show Envoy by itself.
    delete envoy.command;
    if (image === undefined) delete envoy.image;
    else envoy.image = image;
    pod.metadata = { ...pod.metadata, annotations };
    return pod;
  };

  test.each([
    ['envoyproxy/envoy:v1.33.0', true],
    ['docker.io/envoyproxy/envoy:v1.33.0', true],
    ['registry.example.com:5000/mirror/envoyproxy/envoy-distroless:v1.33.0@sha256:' + 'a'.repeat(64), true],
    ['localhost/envoyproxy/envoy', true],
    ['envoyproxy/envoy-ratelimit:v1', false],
    ['myenvoyproxy/envoy:v1', false],
    ['envoyproxy/envoy.evil:v1', false],
    ['ghcr.io/projectcontour/contour:v1.30.0', false],
  ])('an Envoy container renamed "proxy" running %s: called %s', (image, called) => {
    const pod = variant(image);
    expect(apiServerCalls(defaults, pod)).toBe(called);
    expect(drainguardActsOn(pod, defaultConfig())).toBe(called);
  });

  test.each([
    [{ command: ['envoy'] }, true],
    [{ command: ['/usr/local/bin/envoy', '-c', '/config/envoy.yaml'] }, true],
    [{ command: ['envoy -c /config/envoy.yaml'] }, true],
    [{ args: ['/usr/local/bin/envoy', '-c', '/config/envoy.yaml'] }, true],
    [{ command: [], args: ['envoy'] }, true],
    [{ command: ['/bin/sh'], args: ['envoy'] }, false],
    [{ args: ['-c', '/config/envoy.yaml'] }, false],
    [{ command: ['envoy-gateway'] }, false],
    [{ command: ['consul-dataplane'], args: ['-envoy-executable-path=/usr/local/bin/envoy'] }, false],
  ])('a container named "proxy" with a custom image and %j: called %s (its command runs the envoy binary)', (line, called) => {
    const pod = variant('registry.example/custom-proxy:1');
    const proxy = pod.spec.containers.find((c) => c.name === 'proxy') as Container;
    delete proxy.command;
    delete proxy.args;
    Object.assign(proxy, line);
    expect(apiServerCalls(defaults, pod)).toBe(called);
    if (called) expect(drainguardActsOn(pod, defaultConfig())).toBe(true);
  });

  test('a container without an image, named otherwise, and no annotation: not called', () => {
    expect(apiServerCalls(defaults, variant(undefined))).toBe(false);
  });

  test.each([
    [{ 'drainguard.io/inject': 'disabled' }],
    [{ 'drainguard.io/envoy-container': 'proxy' }],
    [{ 'drainguard.io/drain-delay': 'soon' }],
  ])('any drainguard.io/ annotation (%j) makes the call, so overrides and invalid values reach drainguard', (annotations) => {
    expect(apiServerCalls(defaults, variant('registry.example/custom-proxy:1', annotations))).toBe(true);
  });

  test('other annotations alone do not', () => {
    expect(apiServerCalls(defaults, variant('registry.example/custom-proxy:1', { 'example.com/owner': 'team', 'drainguard.io': 'x' }))).toBe(false);
  });

  test('a configured name and a repository with regular-expression characters are matched literally', () => {
    const expression = expressionFor({ set: { 'config.envoyContainerName': 'edge', 'config.envoyImageRepositories[0]': 'mirror.example/envoy+edge' } });
    const config = { ...defaultConfig(), envoyContainerName: 'edge', envoyImageRepositories: ['mirror.example/envoy+edge'] };
    for (const [image, name, called] of [
      ['registry.example/mirror.example/envoy+edge:v1', 'proxy', true],
      ['registry.example/mirrorXexample/envoyyedge:v1', 'proxy', false],
      ['envoyproxy/envoy:v1.33.0', 'proxy', false],
      ['registry.example/custom:1', 'edge', true],
    ] as const) {
      const pod = variant(image, {}, name);
      expect(`${image} ${name}: ${apiServerCalls(expression, pod)}`).toBe(`${image} ${name}: ${called}`);
      expect(`${image} ${name}: ${drainguardActsOn(pod, config)}`).toBe(`${image} ${name}: ${called}`);
    }
  });
});

test('generated pods: whenever drainguard would act on a pod, the API server calls it', () => {
  const contour = pods.find(({ name }) => name.startsWith('contour-main'))!.pod;
  const image = fc.option(
    fc.constantFrom(
      'envoyproxy/envoy:v1.33.0',
      'envoyproxy/envoy-distroless',
      'docker.io/envoyproxy/envoy@sha256:' + 'b'.repeat(64),
      'registry.example.com:5000/envoyproxy/envoy:v1',
      'quay.io/mirror/envoyproxy/envoy-distroless:v1.30',
      'envoyproxy/envoy-ratelimit:v1',
      'bitnami/envoy:1.33',
      'ghcr.io/projectcontour/contour:v1.30.0',
      'envoy',
      'registry.example/app:1',
    ),
    { nil: undefined },
  );
  const command = fc.option(fc.constantFrom(['envoy'], ['/usr/local/bin/envoy', '-c', 'x'], ['pilot-agent'], ['/bin/sh', '-c', 'envoy'], []), { nil: undefined });
  const args = fc.option(fc.constantFrom(['envoy'], ['-c', '/config/envoy.yaml'], ['proxy', 'router'], ['/usr/local/bin/envoy']), { nil: undefined });
  const container = fc.record({ name: fc.constantFrom('envoy', 'proxy', 'shutdown-manager', 'app', 'envoy-2'), image, command, args });
  const annotations = fc.dictionary(
    fc.constantFrom('drainguard.io/inject', 'drainguard.io/envoy-container', 'drainguard.io/min-drain', 'example.com/team', 'drainguard.io/status'),
    fc.constantFrom('enabled', 'disabled', 'proxy', 'envoy', '5s', 'x'),
    { maxKeys: 2 },
  );
  fc.assert(
    fc.property(fc.uniqueArray(container, { minLength: 1, maxLength: 4, selector: (c) => c.name }), annotations, (containers, notes) => {
      const pod = structuredClone(contour);
      pod.spec.containers = containers.map(({ name, image: img, command: cmd, args: arg }) => ({
        ...(img === undefined ? {} : { image: img }),
        ...(cmd === undefined ? {} : { command: [...cmd] }),
        ...(arg === undefined ? {} : { args: [...arg] }),
        name,
      }));
      delete pod.spec.initContainers;
      pod.metadata = { ...pod.metadata, annotations: notes };
      if (drainguardActsOn(pod, defaultConfig())) expect(apiServerCalls(defaults, pod)).toBe(true);
    }),
    { numRuns: 500, seed: 20261130 },
  );
});
