import { isMap, parse } from 'yaml';
import { DocumentPatcher, type PrintedDocument } from '../../../src/cli/yaml-splice';
import { parseYamlStream } from '../../../src/cli/yaml-stream';
import { findWorkloads } from '../../../src/cli/pod-templates';
import type { PatchOperation } from '../../../src/mutate/result';
import { unjustifiedChanges } from './changed-lines';

/** Patches the document's root map as the pod template (a Pod without apiVersion and kind). */
function patchRoot(text: string, patch: PatchOperation[]): PrintedDocument {
  const [streamDocument] = parseYamlStream(text, 'p.yaml');
  const root = streamDocument!.document.contents;
  if (!isMap(root)) throw new Error('test input must be a map');
  const patcher = new DocumentPatcher(streamDocument!);
  patcher.apply(root, patch);
  return patcher.print();
}

/** Patches every workload of every document with its own patch, as `inject` does. */
function patchWorkloads(text: string, patchFor: (index: number) => PatchOperation[]): { text: string; printed: PrintedDocument[] } {
  let index = 0;
  const printed = parseYamlStream(text, 'p.yaml').map((streamDocument) => {
    const patcher = new DocumentPatcher(streamDocument);
    for (const workload of findWorkloads(streamDocument.document)) patcher.apply(workload.template!, patchFor(index++));
    return patcher.print();
  });
  return { text: printed.map((document) => document.text).join(''), printed };
}

/** Asserts that the text was spliced and that every line it changed states a changed value. */
function expectSpliced(before: string, printed: PrintedDocument): string {
  expect(printed.fallbackReason).toBeNull();
  expect(printed.spliced).toBe(true);
  expect(unjustifiedChanges(before, printed.text)).toEqual([]);
  return printed.text;
}

const STATUS = { op: 'add', path: '/metadata/annotations/drainguard.io~1status', value: '{"version":"test"}' } as const;

describe('splicing a patch into the text', () => {
  test('a new key goes after the last entry of its map, at its indentation, after comment lines indented under it', () => {
    const text = 'metadata:\n  labels:\n    app: envoy\n    # tier: edge\n  # about spec\nspec:\n  containers: []\n';
    const out = expectSpliced(text, patchRoot(text, [{ op: 'add', path: '/metadata/annotations', value: { a: 'b' } }]));
    expect(out).toBe('metadata:\n  labels:\n    app: envoy\n    # tier: edge\n  annotations:\n    a: b\n  # about spec\nspec:\n  containers: []\n');
  });

  test.each([
    ['one more item at the end', ['/bin/sh', '-ec', 'LONG', 'x', 'y']],
    ['one more item in the middle', ['/bin/sh', 'x', '-ec', 'LONG', 'x']],
    ['an item fewer', ['-ec', 'LONG', 'x']],
    ['a changed neighbour and one more', ['/bin/bash', '-ec', 'LONG', 'x', 'z']],
  ])('a list replaced by a longer or shorter one keeps the text of the items that stay (%s)', (_title, items) => {
    // kubectl folds a long double-quoted string over several lines; an unchanged neighbour keeps that.
    const long = 'consul-k8s-control-plane connect-init -pod-name=${POD_NAME} -pod-namespace=${POD_NAMESPACE} \\\n\t-gateway-kind="api-gateway"';
    const text =
      'metadata: {}\nspec:\n  command:\n  - /bin/sh\n  - -ec\n' +
      '  - "consul-k8s-control-plane connect-init -pod-name=${POD_NAME} -pod-namespace=${POD_NAMESPACE}\n' +
      '    \\\\\\n\\t-gateway-kind=\\"api-gateway\\""\n  - x\n';
    expect((parse(text) as { spec: { command: string[] } }).spec.command[2]).toBe(long);
    const value = items.map((item) => (item === 'LONG' ? long : item));
    const out = expectSpliced(text, patchRoot(text, [{ op: 'replace', path: '/spec/command', value }]));
    expect(out).toContain('  - "consul-k8s-control-plane connect-init -pod-name=${POD_NAME} -pod-namespace=${POD_NAMESPACE}\n    \\\\\\n');
    expect((parse(out) as { spec: { command: string[] } }).spec.command).toEqual(value);
  });

  test('a replaced scalar is rewritten in place; the comment after it stays, also after a tab', () => {
    const text = 'metadata: {}\nspec:\n  port: 8090\t# the old port\n  name: x   # keep\n';
    const out = expectSpliced(text, patchRoot(text, [{ op: 'replace', path: '/spec/port', value: 8091 }]));
    expect(out).toBe('metadata: {}\nspec:\n  port: 8091\t# the old port\n  name: x   # keep\n');
  });

  test('a replaced block value is written again below its key; the comment on the key line stays', () => {
    const text = 'metadata: {}\nspec:\n  preStop: # how envoy stops\n    httpGet:\n      path: /shutdown # sidecar\n      port: 8090\n  after: 1\n';
    const out = expectSpliced(text, patchRoot(text, [{ op: 'replace', path: '/spec/preStop', value: { exec: { command: ['drain', 'on'] } } }]));
    expect(out).toBe('metadata: {}\nspec:\n  preStop: # how envoy stops\n    exec:\n      command:\n        - drain\n        - "on"\n  after: 1\n');
  });

  test('an inline value replaced by a block one keeps its comment on the key line', () => {
    const text = 'metadata: {}\nspec:\n  probe: none # to do\n';
    const out = expectSpliced(text, patchRoot(text, [{ op: 'replace', path: '/spec/probe', value: { port: 8002 } }]));
    expect(out).toBe('metadata: {}\nspec:\n  probe: # to do\n    port: 8002\n');
  });

  test('replacing a map or a list changes only the lines whose values change', () => {
    const text = 'metadata: {}\nspec:\n  command:\n  - drain\n  - --deadline\n  - 290s\n  probe:\n    path: /ready\n    port: 8002\n    old: x\n';
    const out = expectSpliced(
      text,
      patchRoot(text, [
        { op: 'replace', path: '/spec/command', value: ['drain', '--deadline', '590s'] },
        { op: 'replace', path: '/spec/probe', value: { path: '/ready', port: 8003, timeoutSeconds: 5 } },
      ]),
    );
    expect(out).toBe('metadata: {}\nspec:\n  command:\n  - drain\n  - --deadline\n  - 590s\n  probe:\n    path: /ready\n    port: 8003\n    timeoutSeconds: 5\n');
  });

  test('entries appended to a map and to the map that ends it land in their own maps, in the order of the patch', () => {
    const text = 'metadata: {}\nspec:\n  containers:\n  - name: envoy\n    lifecycle:\n      preStop:\n        sleep: {seconds: 5}\n';
    const out = expectSpliced(
      text,
      patchRoot(text, [
        { op: 'add', path: '/spec/containers/0/resources', value: { requests: { cpu: '1' } } },
        { op: 'add', path: '/spec/containers/0/lifecycle/postStart', value: { sleep: { seconds: 1 } } },
        { op: 'add', path: '/spec/containers/0/tty', value: true },
      ]),
    );
    expect(out).toBe(
      'metadata: {}\nspec:\n  containers:\n  - name: envoy\n    lifecycle:\n      preStop:\n        sleep: {seconds: 5}\n      postStart:\n        sleep:\n          seconds: 1\n' +
        '    resources:\n      requests:\n        cpu: "1"\n    tty: true\n',
    );
  });

  test('a removed item takes its lines and the comments indented inside it; the comment line above it stays', () => {
    const text =
      'metadata: {}\nspec:\n  containers:\n  # the sidecar\n  - name: shutdown-manager # removed\n    args:\n      - envoy\n    # inside the sidecar\n  - name: envoy\n';
    const out = expectSpliced(text, patchRoot(text, [{ op: 'remove', path: '/spec/containers/0' }]));
    expect(out).toBe('metadata: {}\nspec:\n  containers:\n  # the sidecar\n  - name: envoy\n');
  });

  test('a removed map entry takes its lines; the first entry of a list item hands the `- ` to the next one', () => {
    const text = 'metadata: {}\nspec:\n  containers:\n  - name: x\n    image: y\n    lifecycle:\n      preStop: {}\n    tty: true\n';
    const out = expectSpliced(
      text,
      patchRoot(text, [
        { op: 'remove', path: '/spec/containers/0/lifecycle' },
        { op: 'remove', path: '/spec/containers/0/name' },
      ]),
    );
    expect(out).toBe('metadata: {}\nspec:\n  containers:\n  - image: y\n    tty: true\n');
  });

  test('removing the last entry leaves {} or []', () => {
    const text = 'metadata: {}\nspec:\n  containers:\n    - name: x\n  nodeSelector:\n    a: b # only one\n';
    const out = expectSpliced(
      text,
      patchRoot(text, [
        { op: 'remove', path: '/spec/containers/0' },
        { op: 'remove', path: '/spec/nodeSelector/a' },
      ]),
    );
    expect(out).toBe('metadata: {}\nspec:\n  containers: []\n  nodeSelector: {}\n');
  });

  test('new list items follow their list: compact or indented, appended or inserted above the comment of the item they precede', () => {
    const text =
      'metadata: {}\nspec:\n  initContainers:\n  - name: bootstrap\n    args:\n    - x\n  volumes:\n      - name: a\n      # the second volume\n      - name: b\n';
    const out = expectSpliced(
      text,
      patchRoot(text, [
        { op: 'add', path: '/spec/initContainers/-', value: { name: 'install', command: ['install', '--to', '/config'] } },
        { op: 'add', path: '/spec/volumes/1', value: { name: 'drainguard', emptyDir: {} } },
      ]),
    );
    expect(out).toBe(
      'metadata: {}\nspec:\n  initContainers:\n  - name: bootstrap\n    args:\n    - x\n  - name: install\n    command:\n    - install\n    - --to\n    - /config\n' +
        '  volumes:\n      - name: a\n      - name: drainguard\n        emptyDir: {}\n      # the second volume\n      - name: b\n',
    );
  });

  test('lists inside a new value take the style of the lists nearest to it', () => {
    // The container's own lists are compact even though the template's other lists are indented.
    const text =
      'metadata: {}\nspec:\n  volumes:\n    - name: a\n  containers:\n    - name: envoy\n      args:\n      - -c\n      ports:\n      - containerPort: 80\n';
    const out = expectSpliced(text, patchRoot(text, [{ op: 'add', path: '/spec/containers/0/lifecycle', value: { preStop: { exec: { command: ['drain'] } } } }]));
    expect(out).toContain('      lifecycle:\n        preStop:\n          exec:\n            command:\n            - drain\n');
  });

  test('new values use the indentation step of the document', () => {
    const text = 'metadata:\n    name: p\nspec:\n    containers:\n        -   name: envoy\n';
    const out = expectSpliced(text, patchRoot(text, [{ op: 'add', path: '/spec/containers/0/resources', value: { requests: { cpu: '100m' } } }]));
    expect(out).toBe('metadata:\n    name: p\nspec:\n    containers:\n        -   name: envoy\n            resources:\n                requests:\n                    cpu: 100m\n');
  });

  test('new strings that YAML 1.1 would read as booleans or octal numbers are quoted', () => {
    const text = 'metadata: {}\nspec:\n  containers:\n  - name: envoy\n';
    const out = expectSpliced(text, patchRoot(text, [{ op: 'add', path: '/spec/containers/0/args', value: ['on', 'yes', '0644', 'no', '1e3', 'true'] }]));
    expect(parse(out, { version: '1.1' }).spec.containers[0].args).toEqual(['on', 'yes', '0644', 'no', '1e3', 'true']);
  });

  test("kubectl's single quotes are kept for new strings when the template quotes that way", () => {
    const text = "metadata:\n  annotations:\n    a: '0'\n    b: 'x'\nspec: {}\n";
    const out = expectSpliced(text, patchRoot(text, [{ op: 'add', path: '/metadata/annotations/c', value: '1' }]));
    expect(out).toBe("metadata:\n  annotations:\n    a: '0'\n    b: 'x'\n    c: '1'\nspec: {}\n");
  });

  test('an empty flow map {} that gets a key becomes a block map', () => {
    const text = 'metadata: {}   # none yet\nspec:\n  containers: []\n';
    const out = expectSpliced(text, patchRoot(text, [{ op: 'add', path: '/metadata/annotations', value: { a: 'b' } }, STATUS]));
    expect(out).toBe("metadata:   # none yet\n  annotations:\n    a: b\n    drainguard.io/status: '{\"version\":\"test\"}'\nspec:\n  containers: []\n");
  });

  test('a flow map edited deep inside becomes block along the edited path; the rest keeps its flow style', () => {
    const text = 'metadata: {name: p, labels: {app: x}}\nspec: {containers: [{name: envoy}], dnsPolicy: None}\n';
    const out = expectSpliced(
      text,
      patchRoot(text, [
        { op: 'add', path: '/metadata/annotations', value: { a: 'b' } },
        { op: 'add', path: '/spec/containers/0/livenessProbe', value: { httpGet: { port: 8002 } } },
      ]),
    );
    expect(out).toBe(
      'metadata:\n  name: p\n  labels: { app: x }\n  annotations:\n    a: b\nspec:\n  containers:\n    - name: envoy\n      livenessProbe:\n        httpGet:\n          port: 8002\n  dnsPolicy: None\n',
    );
  });

  test('a removal from a flow list keeps it a flow list', () => {
    const text = 'metadata: {}\nspec:\n  containers: [{name: sidecar}, {name: envoy}] # two\n';
    const out = expectSpliced(text, patchRoot(text, [{ op: 'remove', path: '/spec/containers/0' }]));
    expect(out).toBe('metadata: {}\nspec:\n  containers: [ { name: envoy } ] # two\n');
  });

  test('a template without metadata gets it before spec, above the comment lines of spec', () => {
    const text = 'apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: envoy}\nspec:\n  template:\n    # no metadata in this template\n    spec:\n      containers: []\n';
    const { text: out, printed } = patchWorkloads(text, () => [{ op: 'add', path: '/metadata/annotations', value: { a: 'b' } }]);
    expectSpliced(text, printed[0]!);
    expect(out).toBe(
      'apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: envoy}\nspec:\n  template:\n    metadata:\n      annotations:\n        a: b\n    # no metadata in this template\n    spec:\n      containers: []\n',
    );
  });

  test('metadata written without a value (null) gets the new map', () => {
    const text = 'metadata:\nspec: {}\n';
    expect(expectSpliced(text, patchRoot(text, [{ op: 'add', path: '/metadata/labels', value: { a: 'b' } }]))).toBe('metadata:\n  labels:\n    a: b\nspec: {}\n');
  });

  test('CRLF line endings stay CRLF in every line written', () => {
    const text = 'metadata:\r\n  labels:\r\n    app: envoy # x\r\nspec:\r\n  containers:\r\n  - name: sidecar\r\n  - name: envoy\r\n';
    const out = expectSpliced(
      text,
      patchRoot(text, [
        { op: 'remove', path: '/spec/containers/0' },
        { op: 'add', path: '/spec/containers/0/args', value: ['a', 'b'] },
        { op: 'add', path: '/metadata/annotations', value: { a: 'multi\nline' } },
      ]),
    );
    expect(out).toBe('metadata:\r\n  labels:\r\n    app: envoy # x\r\n  annotations:\r\n    a: |-\r\n      multi\r\n      line\r\nspec:\r\n  containers:\r\n  - name: envoy\r\n    args:\r\n    - a\r\n    - b\r\n');
  });

  test('a document without a final line break keeps it that way', () => {
    // diff(1) shows the last line as changed when a line is added after it or it is removed: no test of justified lines here.
    const text = 'metadata: {}\nspec:\n  containers:\n  - name: a\n  - name: b';
    const appended = patchRoot(text, [{ op: 'add', path: '/spec/containers/-', value: { name: 'c' } }]);
    expect(appended).toEqual({ text: 'metadata: {}\nspec:\n  containers:\n  - name: a\n  - name: b\n  - name: c', spliced: true, fallbackReason: null });
    const removed = patchRoot(text, [{ op: 'remove', path: '/spec/containers/1' }]);
    expect(removed).toEqual({ text: 'metadata: {}\nspec:\n  containers:\n  - name: a', spliced: true, fallbackReason: null });
  });

  test('document markers, directives and a byte-order mark are kept', () => {
    const text = '\uFEFF%YAML 1.1\n---\n# a pod\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers: [{name: envoy}]\n...\n# after\n';
    const { text: out, printed } = patchWorkloads(text, () => [{ op: 'add', path: '/metadata/annotations', value: { 'drainguard.io/status': '{"version":"test"}' } }]);
    expectSpliced(text, printed[0]!);
    expect(out).toBe(
      '\uFEFF%YAML 1.1\n---\n# a pod\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    drainguard.io/status: \'{"version":"test"}\'\nspec:\n  containers: [{name: envoy}]\n...\n# after\n',
    );
  });

  test('every workload of a List is spliced, also a Pod item whose first key shares the `- ` line', () => {
    const text = [
      'apiVersion: v1',
      'kind: List',
      'items:',
      '- apiVersion: v1',
      '  kind: Pod',
      '  metadata: {name: a}',
      '  spec:',
      '    containers:',
      '    - name: envoy',
      '- spec:',
      '    containers:',
      '    - name: envoy',
      '  kind: Pod',
      '  apiVersion: v1',
      '- apiVersion: apps/v1',
      '  kind: Deployment',
      '  metadata: {name: c}',
      '  spec:',
      '    template:',
      '      spec:',
      '        containers:',
      '          - name: envoy',
      '',
    ].join('\n');
    const { text: out, printed } = patchWorkloads(text, (index) => [
      { op: 'add', path: '/metadata/annotations', value: { n: String(index) } },
      { op: 'add', path: '/spec/containers/0/args', value: ['run'] },
    ]);
    expectSpliced(text, printed[0]!);
    expect(out).toBe(
      [
        'apiVersion: v1',
        'kind: List',
        'items:',
        '- apiVersion: v1',
        '  kind: Pod',
        '  metadata:',
        '    name: a',
        '    annotations:',
        '      "n": "0"',
        '  spec:',
        '    containers:',
        '    - name: envoy',
        '      args:',
        '      - run',
        '- spec:',
        '    containers:',
        '    - name: envoy',
        '      args:',
        '      - run',
        '  kind: Pod',
        '  apiVersion: v1',
        '  metadata:',
        '    annotations:',
        '      "n": "1"',
        '- apiVersion: apps/v1',
        '  kind: Deployment',
        '  metadata: {name: c}',
        '  spec:',
        '    template:',
        '      metadata:',
        '        annotations:',
        '          "n": "2"',
        '      spec:',
        '        containers:',
        '          - name: envoy',
        '            args:',
        '              - run',
        '',
      ].join('\n'),
    );
  });
});

describe('falling back to re-serialising the document', () => {
  /** The fallback is correct: the document reads as the patch says, and its comments survive. */
  function expectReserialised(printed: PrintedDocument, reason: RegExp): string {
    expect(printed.spliced).toBe(false);
    expect(printed.fallbackReason).toMatch(reason);
    return printed.text;
  }

  test('a pod template written in flow style', () => {
    const text = 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d # keep\nspec:\n  template: {spec: {containers: [{name: envoy}]}}\n';
    const { printed } = patchWorkloads(text, () => [{ op: 'add', path: '/metadata/annotations', value: { a: 'b' } }]);
    const out = expectReserialised(printed[0]!, /flow style|does not start its own line/);
    expect(parse(out).spec.template).toEqual({ metadata: { annotations: { a: 'b' } }, spec: { containers: [{ name: 'envoy' }] } });
    expect(out).toContain('name: d # keep');
  });

  test('a template that uses an anchor defined outside it', () => {
    const text = 'x-labels: &labels {app: envoy}\nkind: Deployment\napiVersion: apps/v1\nspec:\n  template:\n    metadata:\n      labels: *labels\n    spec:\n      containers: [{name: envoy}]\n';
    const { printed } = patchWorkloads(text, () => [{ op: 'add', path: '/metadata/annotations', value: { 'drainguard.io/status': '{"version":"test"}' } }]);
    const out = expectReserialised(printed[0]!, /reads differently on its own/);
    expect(parse(out).spec.template.metadata).toEqual({ labels: { app: 'envoy' }, annotations: { 'drainguard.io/status': '{"version":"test"}' } });
    expect(out).toContain('*labels');
  });

  test('a comment between a list item’s `-` and its value', () => {
    const text = 'metadata: {}\nspec:\n  containers:\n  - # the sidecar\n    name: sidecar\n  - name: envoy\n';
    const out = expectReserialised(patchRoot(text, [{ op: 'remove', path: '/spec/containers/0' }]), /between a list item/);
    expect(parse(out).spec.containers).toEqual([{ name: 'envoy' }]);
  });

  test('a tag on a replaced value', () => {
    const text = 'metadata: {}\nspec:\n  preStop: !!map\n    httpGet: {port: 8090}\n';
    const out = expectReserialised(patchRoot(text, [{ op: 'replace', path: '/spec/preStop', value: { exec: { command: ['x'] } } }]), /a tag or an anchor/);
    expect(parse(out).spec.preStop).toEqual({ exec: { command: ['x'] } });
  });

  test('the re-serialised document keeps CRLF line endings', () => {
    const text = 'metadata: {}\r\nspec:\r\n  containers:\r\n  - # c\r\n    name: sidecar\r\n  - name: envoy\r\n';
    const out = expectReserialised(patchRoot(text, [{ op: 'remove', path: '/spec/containers/0' }]), /between a list item/);
    expect(out.replaceAll('\r\n', '')).not.toContain('\n');
  });
});
