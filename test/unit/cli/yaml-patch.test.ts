import { isMap } from 'yaml';
import { applyPatchToTemplate, podViewOf } from '../../../src/cli/yaml-patch';
import { parseYamlStream, printDocument } from '../../../src/cli/yaml-stream';
import type { PatchOperation } from '../../../src/mutate/result';

function patched(text: string, patch: PatchOperation[]): string {
  const [parsed] = parseYamlStream(text, 'p.yaml');
  const { document } = parsed!;
  if (!isMap(document.contents)) throw new Error('test input must be a map');
  applyPatchToTemplate(document, document.contents, patch);
  return printDocument(document, text);
}

describe('applyPatchToTemplate', () => {
  test('add, replace and remove on maps and lists, keeping untouched comments', () => {
    const text = 'metadata:\n  name: p # the name\nspec:\n  containers:\n    - name: a\n    - name: b # second\n  x: 1\n';
    expect(
      patched(text, [
        { op: 'add', path: '/spec/containers/1', value: { name: 'new' } },
        { op: 'replace', path: '/spec/x', value: 2 },
        { op: 'remove', path: '/spec/containers/0' },
        { op: 'add', path: '/spec/containers/-', value: { name: 'last' } },
      ]),
    ).toBe('metadata:\n  name: p # the name\nspec:\n  containers:\n    - name: new\n    - name: b # second\n    - name: last\n  x: 2\n');
  });

  test('keys YAML reads as numbers or booleans are still found by their JSON Pointer', () => {
    const text = 'metadata:\n  labels:\n    8080: "yes"\n    on: "x"\nspec: {}\n';
    const out = patched(text, [
      { op: 'replace', path: '/metadata/labels/8080', value: 'no' },
      { op: 'remove', path: '/metadata/labels/true' },
    ]);
    expect(out).toBe('metadata:\n  labels:\n    8080: "no"\nspec: {}\n');
  });

  test('a flow collection drainguard adds to becomes block style; a repeated value is written out, not aliased', () => {
    const shared = { cpu: '10m' };
    const out = patched('metadata: {name: p}\nspec: {containers: [{name: a}]}\n', [
      { op: 'add', path: '/metadata/annotations', value: { a: 'b' } },
      { op: 'add', path: '/spec/initContainers', value: [{ name: 'i', resources: { requests: shared, limits: shared } }] },
    ]);
    expect(out).not.toMatch(/[&*]a1/);
    expect(out).toBe(
      'metadata:\n  name: p\n  annotations:\n    a: b\nspec:\n  containers: [ { name: a } ]\n  initContainers:\n    - name: i\n      resources:\n        requests:\n          cpu: 10m\n        limits:\n          cpu: 10m\n',
    );
  });

  test('a template without metadata gets it before spec; the pod view the core sees has it too', () => {
    const text = 'spec:\n  containers: []\n';
    const [parsed] = parseYamlStream(text, 'p.yaml');
    expect(podViewOf(parsed!.document, parsed!.document.contents as never)).toEqual({ metadata: {}, spec: { containers: [] } });
    expect(patched(text, [{ op: 'add', path: '/metadata/annotations', value: { a: 'b' } }])).toBe(
      'metadata:\n  annotations:\n    a: b\nspec:\n  containers: []\n',
    );
    expect(patched('metadata:\nspec: {}\n', [{ op: 'add', path: '/metadata/labels', value: { a: 'b' } }])).toBe('metadata:\n  labels:\n    a: b\nspec: {}\n');
  });

  test('a patch that does not apply throws', () => {
    expect(() => patched('spec: {}\n', [{ op: 'remove', path: '/spec/containers/3' }])).toThrow();
  });
});
