/** JSON Pointer escaping, the patch builder, and verification. */
import { mutate, PatchVerificationError } from '../../../src/mutate';
import { escapeSegment, PatchBuilder, toPointer } from '../../../src/mutate/patch/builder';
import { verifyPatch } from '../../../src/mutate/patch/verify';
import { cloneJson } from '../../../src/json';
import { defaultConfig } from '../../../src/config';
import { applyIndependently, loadPod, withAnnotations } from './support';

describe('RFC 6901 escaping', () => {
  test.each([
    ['plain', 'plain'],
    ['a/b', 'a~1b'],
    ['a~b', 'a~0b'],
    ['~1', '~01'],
    ['/~', '~1~0'],
    ['drainguard.io/status', 'drainguard.io~1status'],
  ])('%j → %j', (segment, escaped) => {
    expect(escapeSegment(segment)).toBe(escaped);
  });

  test('a pointer to an annotation with `/` and `~` in its key resolves to that key', () => {
    const pointer = toPointer(['metadata', 'annotations', 'example.com/a~1b']);
    expect(pointer).toBe('/metadata/annotations/example.com~1a~01b');
    const pod = { metadata: { annotations: { 'example.com/a~1b': 'old', 'example.com/a/b': 'other' } }, spec: { containers: [] } };
    const after = applyIndependently(pod, [{ op: 'replace', path: pointer, value: 'new' }]);
    expect(after.metadata?.annotations).toEqual({ 'example.com/a~1b': 'new', 'example.com/a/b': 'other' });
  });

  test('user annotations with `/` and `~` survive a mutation untouched', () => {
    const annotations = { 'example.com/a~b': '1', 'x~1y': '2', 'drainguard.io~1status': 'not ours' };
    const pod = withAnnotations(loadPod('contour-main.yaml'), annotations);
    const result = mutate(pod, defaultConfig());
    expect(result.status).toBe('mutated');
    const after = applyIndependently(pod, result.patch);
    expect(after.metadata?.annotations).toMatchObject(annotations);
    expect(after.metadata?.annotations?.['drainguard.io/status']).toContain('"version"');
  });
});

/** `value` and everything in it frozen: a write anywhere below it throws (these modules are strict). */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

describe('PatchBuilder', () => {
  const pod = () => ({ spec: { containers: [{ name: 'envoy' }] } });

  test('a copied node keeps an own `__proto__` key as a key: it never becomes the copy\'s prototype', () => {
    // JSON.parse (and so the CLI reading a hostile manifest) makes `__proto__` an ordinary own key. A
    // copy that assigned it would lose the key and inherit its fields: here, a liveness probe that is
    // not there, so drainguard would have skipped adding one.
    const base = loadPod('contour-main.yaml');
    const hostile = JSON.parse(
      JSON.stringify(base).replace('"name":"envoy"', '"name":"envoy","__proto__":{"livenessProbe":{"httpGet":{"port":1}}}'),
    ) as typeof base;
    expect(Object.keys(hostile.spec.containers.find((c) => c.name === 'envoy') ?? {})).toContain('__proto__');
    const plain = mutate(base, defaultConfig());
    const withKey = mutate(hostile, defaultConfig());
    expect(withKey.patch.map((op) => op.path)).toEqual(plain.patch.map((op) => op.path));

    const builder = new PatchBuilder(hostile);
    const envoyIndex = hostile.spec.containers.findIndex((c) => c.name === 'envoy');
    builder.set(['spec', 'containers', envoyIndex, 'resources'], {});
    const draftEnvoy = builder.draft.spec.containers[envoyIndex] as object;
    expect(Object.getPrototypeOf(draftEnvoy)).toBe(Object.prototype);
    expect(Object.keys(draftEnvoy)).toContain('__proto__');
    expect('livenessProbe' in draftEnvoy).toBe(false);
  });

  test('a deep copy keeps an own `__proto__` key as a key too', () => {
    const value = JSON.parse('{"a":{"__proto__":{"b":1}}}') as { a: object };
    const copy = cloneJson(value);
    expect(Object.getPrototypeOf(copy.a)).toBe(Object.prototype);
    expect(Object.keys(copy.a)).toEqual(['__proto__']);
    expect(JSON.stringify(copy)).toBe('{"a":{"__proto__":{"b":1}}}');
  });

  test('never writes to the input: it copies only the nodes on the path of each write', () => {
    const input = deepFreeze({
      metadata: { annotations: { a: '1' } },
      spec: { containers: [{ name: 'sidecar' }, { name: 'envoy', args: ['-c', 'x'] }], volumes: [{ name: 'v', emptyDir: {} }] },
    });
    const builder = new PatchBuilder(input as never);
    builder.set(['spec', 'containers', 1, 'resources', 'requests'], { cpu: '1' });
    builder.set(['spec', 'containers', 1, 'resources', 'requests', 'memory'], '1Gi');
    builder.append(['spec', 'initContainers'], { name: 'init' });
    builder.set(['metadata', 'annotations', 'b'], '2');
    builder.remove(['spec', 'containers', 0]);
    expect(builder.draft).toEqual({
      metadata: { annotations: { a: '1', b: '2' } },
      spec: {
        containers: [{ name: 'envoy', args: ['-c', 'x'], resources: { requests: { cpu: '1', memory: '1Gi' } } }],
        volumes: [{ name: 'v', emptyDir: {} }],
        initContainers: [{ name: 'init' }],
      },
    });
    // What no operation went below is the input's own node, not a copy.
    expect(builder.draft.spec.volumes).toBe(input.spec.volumes);
    expect(builder.draft.spec.containers[0]?.args).toBe(input.spec.containers[1]?.args);
    expect(applyIndependently(input, builder.patch)).toEqual(builder.draft);
  });

  test('a value the caller passes is copied: changing it afterwards changes neither the draft nor the patch', () => {
    const builder = new PatchBuilder(pod());
    const probe = { httpGet: { path: '/ready', port: 8002 } };
    builder.set(['spec', 'containers', 0, 'livenessProbe'], probe);
    probe.httpGet.port = 1;
    expect(builder.draft.spec.containers[0]?.livenessProbe).toEqual({ httpGet: { path: '/ready', port: 8002 } });
    expect(builder.patch[0]).toEqual({ op: 'add', path: '/spec/containers/0/livenessProbe', value: { httpGet: { path: '/ready', port: 8002 } } });
  });

  test('creates every missing parent with one add', () => {
    const builder = new PatchBuilder(pod());
    builder.set(['spec', 'containers', 0, 'lifecycle', 'preStop'], { sleep: { seconds: 1 } });
    builder.set(['metadata', 'annotations', 'a/b'], 'x');
    builder.set(['metadata', 'annotations', 'c'], 'y');
    expect(builder.patch).toEqual([
      { op: 'add', path: '/spec/containers/0/lifecycle', value: { preStop: { sleep: { seconds: 1 } } } },
      { op: 'add', path: '/metadata', value: { annotations: { 'a/b': 'x' } } },
      { op: 'add', path: '/metadata/annotations/c', value: 'y' },
    ]);
    expect(applyIndependently(pod(), builder.patch)).toEqual(builder.draft);
  });

  test('replaces an existing value and a null parent', () => {
    const start = { metadata: { annotations: null }, spec: { containers: [{ name: 'envoy' }], terminationGracePeriodSeconds: 5 } };
    const builder = new PatchBuilder(start as never);
    builder.set(['spec', 'terminationGracePeriodSeconds'], 60);
    builder.set(['metadata', 'annotations', 'k'], 'v');
    expect(builder.patch).toEqual([
      { op: 'replace', path: '/spec/terminationGracePeriodSeconds', value: 60 },
      { op: 'replace', path: '/metadata/annotations', value: { k: 'v' } },
    ]);
  });

  test('append creates a missing array, then uses explicit indices', () => {
    const builder = new PatchBuilder(pod());
    builder.append(['spec', 'initContainers'], { name: 'a' });
    builder.append(['spec', 'initContainers'], { name: 'b' });
    expect(builder.patch.map((op) => op.path)).toEqual(['/spec/initContainers', '/spec/initContainers/1']);
  });

  test('remove of a missing path is a no-op; of an array element shifts the draft', () => {
    const builder = new PatchBuilder({ spec: { containers: [{ name: 'a' }, { name: 'b' }] } });
    builder.remove(['spec', 'containers', 0, 'lifecycle']);
    builder.remove(['spec', 'containers', 0]);
    expect(builder.patch).toEqual([{ op: 'remove', path: '/spec/containers/0' }]);
    expect(builder.draft.spec.containers).toEqual([{ name: 'b' }]);
  });

  test('refuses paths outside /metadata and /spec (the CLI applies the patch to a template)', () => {
    const builder = new PatchBuilder(pod());
    expect(() => builder.set(['status', 'phase'], 'x')).toThrow(/outside/);
    expect(() => builder.set(['spec'], {})).toThrow(/outside/);
  });

  test('a patch that copies dozens of nodes writes each copy once, leaves the input alone and verifies', () => {
    const containers = Array.from({ length: 40 }, (_, i) => ({ name: `c${i}`, resources: { limits: { cpu: '1' } } }));
    const input = deepFreeze({ spec: { containers } });
    const builder = new PatchBuilder(input as never);
    // Two writes below each container: the second finds the copies the first made (past the short list).
    for (let i = 0; i < containers.length; i += 1) {
      builder.set(['spec', 'containers', i, 'resources', 'requests', 'cpu'], '1');
      builder.set(['spec', 'containers', i, 'resources', 'limits', 'memory'], '1Gi');
    }
    expect(builder.size).toBe(80);
    expect(builder.draft.spec.containers[39]).toEqual({ name: 'c39', resources: { limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '1' } } });
    expect(applyIndependently(input, builder.patch)).toEqual(builder.draft);
    expect(() => verifyPatch(input as never, builder.patch, builder.draft)).not.toThrow();
  });

  test('values in operations are copies: later changes to the draft do not alter emitted operations', () => {
    const builder = new PatchBuilder(pod());
    builder.set(['spec', 'containers', 0, 'resources'], { requests: { cpu: '1' } });
    builder.set(['spec', 'containers', 0, 'resources', 'requests', 'memory'], '1Gi');
    expect(builder.patch[0]).toEqual({ op: 'add', path: '/spec/containers/0/resources', value: { requests: { cpu: '1' } } });
  });
});

describe('verification', () => {
  const pod = { spec: { containers: [{ name: 'envoy' }] } };

  test('a patch that does not apply is a PatchVerificationError', () => {
    expect(() => verifyPatch(pod, [{ op: 'remove', path: '/spec/containers/3' }], pod)).toThrow(PatchVerificationError);
  });

  test('a patch producing a pod other than the computed one is a PatchVerificationError', () => {
    expect(() => verifyPatch(pod, [], { spec: { containers: [] } })).toThrow(/does not produce/);
  });

  test('a patch that introduces a violation is a PatchVerificationError naming it', () => {
    const patch = [{ op: 'add' as const, path: '/spec/containers/1', value: { name: 'envoy' } }];
    const expected = { spec: { containers: [{ name: 'envoy' }, { name: 'envoy' }] } };
    expect(() => verifyPatch(pod, patch, expected)).toThrow(/duplicate container name envoy/);
  });

  test('never writes to the input or to the patch, and refuses operations drainguard never emits', () => {
    const input = deepFreeze({ metadata: { annotations: { 'a/b': 'x' } }, spec: { containers: [{ name: 'envoy', ports: [{ containerPort: 1 }] }] } });
    const patch = deepFreeze([
      { op: 'add' as const, path: '/spec/containers/0/lifecycle', value: { preStop: { sleep: { seconds: 1 } } } },
      { op: 'add' as const, path: '/spec/containers/0/lifecycle/postStart', value: { sleep: { seconds: 2 } } },
      { op: 'replace' as const, path: '/metadata/annotations/a~1b', value: 'y' },
      { op: 'remove' as const, path: '/spec/containers/0/ports/0' },
    ]);
    const expected = {
      metadata: { annotations: { 'a/b': 'y' } },
      spec: { containers: [{ name: 'envoy', ports: [], lifecycle: { preStop: { sleep: { seconds: 1 } }, postStart: { sleep: { seconds: 2 } } } }] },
    };
    expect(() => verifyPatch(input as never, patch, expected as never)).not.toThrow();
    for (const operation of [
      { op: 'move', from: '/spec/containers/0/ports', path: '/metadata/ports' },
      { op: 'copy', from: '/spec/containers/0', path: '/spec/containers/1' },
      { op: 'test', path: '/spec/containers/0/name', value: 'envoy' },
      { op: 'replace', path: '', value: expected },
    ]) {
      expect(() => verifyPatch(input as never, [operation as never], input as never)).toThrow(/does not apply/);
    }
  });

  test('a replace or remove of something missing, or an add past the end of a list, does not apply', () => {
    for (const operation of [
      { op: 'replace', path: '/spec/containers/0/image', value: 'x' },
      { op: 'remove', path: '/spec/containers/1' },
      { op: 'add', path: '/spec/containers/2', value: { name: 'x' } },
      { op: 'add', path: '/spec/missing/child', value: 1 },
      { op: 'add', path: '/spec/containers/first', value: { name: 'x' } },
    ]) {
      expect(() => verifyPatch(pod, [operation as never], pod)).toThrow(/does not apply/);
    }
  });

  test('violations already in the input are not blamed on the patch', () => {
    const invalid = { spec: { containers: [{ name: 'envoy', ports: [{ containerPort: 1, name: 'Way-Too-Long-Port-Name' }] }] } };
    const patch = [{ op: 'add' as const, path: '/spec/terminationGracePeriodSeconds', value: 30 }];
    expect(() => verifyPatch(invalid, patch, { ...invalid, spec: { ...invalid.spec, terminationGracePeriodSeconds: 30 } })).not.toThrow();
  });
});
