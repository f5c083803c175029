import { parse, parseAllDocuments } from 'yaml';
import { defaultConfig } from '../../../src/config/defaults';
import { ConfigError } from '../../../src/config/load';
import { DrainguardBugError, InputError, UsageError } from '../../../src/cli/errors';
import { injectStream, joinStreams, runInject, type InjectEnvironment, type MutateFunction } from '../../../src/cli/inject';
import { mutate, PatchVerificationError } from '../../../src/mutate';
import { summarize } from '../../../src/cli/inject-results';
import type { PatchOperation } from '../../../src/mutate/result';
import { unjustifiedChanges } from './changed-lines';
import { VERSION } from '../../../src/version';

/** The CLI's YAML plumbing, with the real core. */
const inject = (text: string, core: MutateFunction = mutate) => injectStream('in.yaml', text, core, defaultConfig());

/** A core with a bug: it throws. */
const throwingMutate: MutateFunction = () => {
  throw new Error('patch does not apply');
};

/** The one warning the core gives for DAEMONSET below. */
const HEADROOM_WARNING =
  `container envoy: memory limit 128Mi leaves less than ${defaultConfig().shutdownProgramMemory} above the request 128Mi for the drain program, ` +
  "which runs in Envoy's cgroup during preStop; Envoy may be OOM-killed mid-drain";

const SERVICE = `# the Service stays exactly as written
apiVersion: v1
kind: Service
metadata: {name: envoy, namespace: projectcontour}   # flow style kept
spec:
  ports: [{port: 80}]
`;

const DAEMONSET = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: envoy
  namespace: projectcontour
spec:
  template:
    # no metadata in this template
    spec:
      containers:
      - name: shutdown-manager   # removed by the mutation
        image: ghcr.io/projectcontour/contour:v1.33.6
        command: [/bin/contour]
        args: [envoy, shutdown-manager]
      - name: envoy
        image: envoyproxy/envoy:v1.33.6   # keep this comment
        args: [-c, /config/envoy.json]
        # "on" reads as a boolean in YAML 1.1 unless quoted; drainguard copies it into the liveness probe.
        ports: [{name: "on", containerPort: 8002}]
        readinessProbe: {httpGet: {path: /ready, port: "on"}}
        resources: {limits: {memory: 128Mi}}
        volumeMounts:
          - {name: config, mountPath: /config}
      volumes:
      - name: config
        emptyDir: {}
      securityContext:
        fsGroup: 0644
`;

const NOT_ENVOY = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: nginx}]
`;

const DENIED = `apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {drainguard.io/envoy-cpu-request: lots}\nspec:\n  containers: [{name: envoy, command: [envoy]}]\n`;
const DENIAL =
  'annotation drainguard.io/envoy-cpu-request: invalid value "lots"; expected a positive Kubernetes quantity (e.g. "100m", "0.5", "128Mi", "1G")';

describe('injectStream', () => {
  const stream = `${SERVICE}---\n${DAEMONSET}---\n${NOT_ENVOY}`;

  test('non-workloads and untouched workloads are copied byte for byte', () => {
    const { output } = inject(stream);
    const [service, , deployment] = output.split(/^---\n/m);
    expect(service).toBe(SERVICE);
    expect(deployment).toBe(NOT_ENVOY);
  });

  test("the patch is applied to the template, Pod-root-relative, adding the metadata a template may omit", () => {
    const daemonSet = parseAllDocuments(inject(stream).output)[1]!.toJS();
    const template = daemonSet.spec.template;
    expect(template.metadata.annotations['drainguard.io/status']).toContain(`"version":"${VERSION}"`);
    expect(template.spec.containers.map((container: { name: string }) => container.name)).toEqual(['envoy']);
    expect(template.spec.containers[0].livenessProbe.httpGet).toEqual({ path: '/ready', port: 'on' });
    expect(template.spec.initContainers).toEqual([
      expect.objectContaining({ name: 'drainguard-install', command: [expect.stringMatching(/envoy-shutdown$/), 'install', '--to', '/config/drainguard'] }),
    ]);
    // Everything else in the object is intact.
    expect(daemonSet.metadata).toEqual({ name: 'envoy', namespace: 'projectcontour' });
    expect(Object.keys(template)).toEqual(['metadata', 'spec']);
  });

  test('an edited document keeps its comments and the exact text of every line the patch does not change', () => {
    const edited = inject(stream).output.split(/^---\n/m)[1]!;
    expect(edited).toContain('    # no metadata in this template\n    spec:\n');
    expect(edited).toContain('\n        image: envoyproxy/envoy:v1.33.6   # keep this comment\n');
    expect(edited).toContain('\n      volumes:\n      - name: config\n        emptyDir: {}\n      securityContext:\n        fsGroup: 0644\n');
    expect(unjustifiedChanges(DAEMONSET, edited)).toEqual([]);
  });

  test('YAML 1.1 meanings survive: 0644 stays octal, new strings that would read as booleans or numbers are quoted', () => {
    const edited = inject(stream).output.split(/^---\n/m)[1]!;
    const reread = parse(edited, { version: '1.1' }).spec.template.spec;
    expect(reread.containers[0].livenessProbe.httpGet.port).toBe('on');
    const command: unknown[] = reread.containers[0].lifecycle.preStop.exec.command;
    expect(command[command.indexOf('--min-connections') + 1]).toBe('0');
    expect(command.every((arg) => typeof arg === 'string')).toBe(true);
    expect(reread.securityContext.fsGroup).toBe(0o644);
  });

  test('injecting the output again gives identical bytes', () => {
    const once = inject(stream).output;
    const twice = inject(once);
    expect(twice.output).toBe(once);
    expect(twice.workloads.map((workload) => workload.outcome.status)).toEqual(['unchanged', 'skipped']);
  });

  test('reports every workload with its location, and counts documents passed through', () => {
    const result = inject(stream);
    expect(result.workloads.map(({ source, document, item, kind, name, outcome }) => [source, document, item, kind, name, outcome.status])).toEqual([
      ['in.yaml', 2, null, 'DaemonSet', 'projectcontour/envoy', 'mutated'],
      ['in.yaml', 3, null, 'Deployment', 'web', 'skipped'],
    ]);
    expect(result.passedThrough).toBe(1);
    expect(summarize([result])).toBe('1 workload mutated, 0 unchanged, 1 skipped (1 not-envoy), 1 document passed through');
  });

  test('empty documents (files concatenated with their own ---) are copied but not counted', () => {
    const result = inject(`${SERVICE}---\n---\n# nothing\n---\n`);
    expect(result.output).toBe(`${SERVICE}---\n---\n# nothing\n---\n`);
    expect(result.passedThrough).toBe(1);
    expect(inject('~\n').passedThrough).toBe(1);
  });

  test('List items and CronJobs are mutated in place; a List item without a template is skipped', () => {
    const list = `apiVersion: v1
kind: List
items:
- apiVersion: batch/v1
  kind: CronJob
  metadata: {name: nightly}
  spec:
    jobTemplate:
      spec:
        template:
          metadata:
            annotations: {team: edge}
          spec:
            containers: [{name: envoy, image: envoyproxy/envoy:v1.33.6}]
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: empty}
  spec: {replicas: 0}
`;
    const result = inject(list);
    const items = parse(result.output).items;
    const template = items[0].spec.jobTemplate.spec.template;
    expect(template.metadata.annotations).toEqual({
      team: 'edge',
      'cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes': 'drainguard',
      'drainguard.io/status': expect.any(String),
    });
    expect(template.spec.initContainers).toHaveLength(1);
    expect(items[1]).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'empty' }, spec: { replicas: 0 } });
    expect(result.workloads.map((workload) => [workload.item, workload.outcome.status])).toEqual([
      [1, 'mutated'],
      [2, 'skipped'],
    ]);
    expect(summarize([result])).toContain('1 skipped (1 no-pod-template)');
  });

  test('a denied workload is reported with file, document, item, workload and the message', () => {
    expect(inject(`${SERVICE}---\n${DENIED}`).rejections).toEqual([`in.yaml: document 2: Pod p: denied: ${DENIAL}`]);
  });

  test('an exception from mutate is reported as a drainguard bug, with the location', () => {
    expect(() => inject(DAEMONSET, throwingMutate)).toThrow(DrainguardBugError);
    expect(() => inject(DAEMONSET, throwingMutate)).toThrow('in.yaml: document 1: DaemonSet projectcontour/envoy: Error: patch does not apply');
  });

  test("the core's PatchVerificationError is a drainguard bug naming its violations", () => {
    const failing: MutateFunction = () => {
      throw new PatchVerificationError('the patched pod fails validation', ['volumeMount drainguard names no volume']);
    };
    expect(() => inject(DAEMONSET, failing)).toThrow(
      'in.yaml: document 1: DaemonSet projectcontour/envoy: PatchVerificationError: the patched pod fails validation (volumeMount drainguard names no volume)',
    );
  });

  test('a patch that does not apply to the template is a drainguard bug', () => {
    const badPatch: MutateFunction = () => ({
      status: 'mutated',
      patch: [{ op: 'replace', path: '/spec/nothing/here', value: 1 }],
      warnings: [],
      actions: [],
      timeline: { gracePeriodSeconds: 30, gracePeriodSource: 'kubernetes-default', drainDelaySeconds: 0, minDrainSeconds: 5, deadlineSeconds: 20, minConnections: 0, adminAddress: 'x', livenessBudgetSeconds: null, livenessSource: 'none' },
    });
    expect(() => inject(DAEMONSET, badPatch)).toThrow(DrainguardBugError);
  });

  test('a pod template that is a YAML alias is an input error naming the workload', () => {
    const text = `kind: List\nitems:\n- {apiVersion: apps/v1, kind: Deployment, metadata: {name: a}, spec: {template: &t {spec: {containers: [{name: envoy}]}}}}\n- {apiVersion: apps/v1, kind: Deployment, metadata: {name: b}, spec: {template: *t}}\n`;
    expect(() => inject(text)).toThrow(InputError);
    expect(() => inject(text)).toThrow(/^in\.yaml: document 1, item 2: Deployment b: its pod template is a YAML alias/);
  });

  test('editing through a YAML alias is refused rather than changing every user of the anchor', () => {
    const aliased = `apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - &envoy {name: envoy, command: [envoy]}\n  - *envoy\n`;
    const throughAlias: MutateFunction = (pod, config) => {
      const result = mutate(pod, config);
      return result.status === 'mutated' ? { ...result, patch: [{ op: 'add', path: '/spec/containers/1/image', value: 'x' }] } : result;
    };
    expect(() => inject(aliased, throughAlias)).toThrow(InputError);
    expect(() => inject(aliased, throughAlias)).toThrow(/^in\.yaml: document 1: Pod p: drainguard must edit \/spec\/containers\/1\/image, which is a YAML alias/);
  });

  test('changing a node that holds an anchor an alias uses is refused rather than changing the alias too', () => {
    const anchored = `apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - &sidecar {name: shutdown-manager}\n  - name: envoy\n    command: [envoy]\n  x-copy: *sidecar\n`;
    const withPatch =
      (patch: PatchOperation[]): MutateFunction =>
      (pod, config) => {
        const result = mutate(pod, config);
        return result.status === 'mutated' ? { ...result, patch } : result;
      };
    const removing = withPatch([{ op: 'remove', path: '/spec/containers/0' }]);
    expect(() => inject(anchored, removing)).toThrow(InputError);
    expect(() => inject(anchored, removing)).toThrow(
      /^in\.yaml: document 1: Pod p: drainguard must remove \/spec\/containers\/0, which holds the YAML anchor &sidecar that an alias uses elsewhere/,
    );
    const editingInside = withPatch([{ op: 'add', path: '/spec/containers/0/image', value: 'x' }]);
    expect(() => inject(anchored, editingInside)).toThrow(/drainguard must edit \/spec\/containers\/0\/image, which holds the YAML anchor &sidecar/);
    // An anchor nobody refers to is no obstacle.
    expect(inject(anchored.replace('  x-copy: *sidecar\n', ''), removing).output).not.toContain('shutdown-manager');
  });
});

describe('joinStreams', () => {
  test('each file starts a new document', () => {
    expect(joinStreams(['a: 1\n', 'b: 2'])).toBe('a: 1\n---\nb: 2');
    expect(joinStreams(['a: 1', '# about b\n---\nb: 2\n'])).toBe('a: 1\n# about b\n---\nb: 2\n');
    expect(joinStreams(['a: 1\n', '', '%YAML 1.1\n---\nb: 2\n'])).toBe('a: 1\n...\n%YAML 1.1\n---\nb: 2\n');
  });
});

describe('runInject', () => {
  function run(argv: string[], files: Record<string, string> = {}, overrides: Partial<InjectEnvironment> = {}) {
    const out = { stdout: '', stderr: '' };
    const environment: InjectEnvironment = {
      mutate,
      defaultConfig,
      loadConfigFile: () => ({ ...defaultConfig(), sidecarMode: 'disarm' }),
      readSource: (name) => {
        const text = files[name];
        if (text === undefined) throw new InputError(`${name}: no such file`);
        return text;
      },
      stdout: (text) => void (out.stdout += text),
      stderr: (text) => void (out.stderr += text),
      ...overrides,
    };
    const code = runInject(argv, environment);
    return { code, ...out };
  }

  test('several -f: YAML of all files on stdout, prefixed warnings and the summary on stderr', () => {
    const { code, stdout, stderr } = run(['-f', 'a.yaml', '-f', '-'], { 'a.yaml': DAEMONSET, '-': SERVICE });
    expect(code).toBe(0);
    expect(stdout.endsWith(`---\n${SERVICE}`)).toBe(true);
    expect(parseAllDocuments(stdout)).toHaveLength(2);
    expect(stderr).toBe(
      `warning: a.yaml: document 1: DaemonSet projectcontour/envoy: ${HEADROOM_WARNING}\n` +
        '1 workload mutated, 0 unchanged, 0 skipped, 1 document passed through\n',
    );
  });

  test('stdin is labelled <stdin> in messages', () => {
    expect(run(['-f', '-'], { '-': DAEMONSET }).stderr).toContain('warning: <stdin>: document 1:');
  });

  test('--config passes the loaded config to mutate; a config error is an input error', () => {
    const seen: string[] = [];
    const spy: MutateFunction = (pod, config) => {
      seen.push(config.sidecarMode);
      return mutate(pod, config);
    };
    run(['-f', 'a.yaml', '--config', 'c.yaml'], { 'a.yaml': DAEMONSET }, { mutate: spy });
    run(['-f', 'a.yaml'], { 'a.yaml': DAEMONSET }, { mutate: spy });
    expect(seen).toEqual(['disarm', 'remove']);
    const failing = () => {
      throw new ConfigError('c.yaml: drain.minDrainSeconds must be a number');
    };
    expect(() => run(['-f', 'a.yaml', '--config', 'c.yaml'], { 'a.yaml': DAEMONSET }, { loadConfigFile: failing })).toThrow(
      new InputError('c.yaml: drain.minDrainSeconds must be a number'),
    );
    const buggy = () => {
      throw new TypeError('cannot read properties of undefined');
    };
    expect(() => run(['-f', 'a.yaml', '--config', 'c.yaml'], { 'a.yaml': DAEMONSET }, { loadConfigFile: buggy })).toThrow(TypeError);
  });

  test('--diff prints a unified diff per changed file and exits 1, as diff(1) and kubectl diff do', () => {
    const { code, stdout, stderr } = run(['--diff', '-f', 'a.yaml', '-f', 's.yaml'], { 'a.yaml': DAEMONSET, 's.yaml': SERVICE });
    expect(stdout.startsWith('--- a.yaml\toriginal\n+++ a.yaml\tinjected\n@@ ')).toBe(true);
    expect(stdout).toContain('\n-      - name: shutdown-manager   # removed by the mutation\n');
    expect(stdout).not.toContain('s.yaml');
    expect(stderr).toMatch(/^1 workload mutated/m);
    expect(code).toBe(1);
  });

  test('--diff with nothing to change prints nothing and exits 0', () => {
    const injected = inject(DAEMONSET).output;
    const { code, stdout, stderr } = run(['--diff', '-f', 'a.yaml', '-f', 's.yaml'], { 'a.yaml': injected, 's.yaml': SERVICE });
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^0 workloads mutated, 1 unchanged/m);
    expect(code).toBe(0);
  });

  test('--explain prints the timeline table instead of YAML', () => {
    const { stdout } = run(['--explain', '-f', 'a.yaml'], { 'a.yaml': DAEMONSET });
    expect(stdout).toContain('a.yaml: document 1: DaemonSet projectcontour/envoy: mutated');
    expect(stdout).not.toContain('apiVersion');
  });

  test('a denial fails the run with every denied workload and writes no YAML', () => {
    const out = { stdout: '' };
    expect(() =>
      run(['-f', 'a.yaml', '-f', 'b.yaml'], { 'a.yaml': DENIED, 'b.yaml': `${DAEMONSET}---\n${DENIED}` }, { stdout: (text) => void (out.stdout += text) }),
    ).toThrow(new InputError(`a.yaml: document 1: Pod p: denied: ${DENIAL}\nb.yaml: document 2: Pod p: denied: ${DENIAL}`));
    expect(out.stdout).toBe('');
  });

  test.each([
    [[], /at least one -f FILE is required/],
    [['-f', '-', '-f', '-'], /stdin \(-f -\) can be read only once/],
    [['-f', 'a.yaml', '--diff', '--explain'], /--diff and --explain cannot be combined/],
    [['-f', 'a.yaml', '--frobnicate'], /unknown flag --frobnicate/],
  ])('usage errors: %j', (argv, message) => {
    expect(() => run(argv, { 'a.yaml': DAEMONSET })).toThrow(UsageError);
    expect(() => run(argv, { 'a.yaml': DAEMONSET })).toThrow(message);
  });

  test('--help prints the usage with every flag', () => {
    const { code, stdout } = run(['--help']);
    expect(code).toBe(0);
    for (const flag of ['-f, --filename FILE', '--config FILE', '--diff', '--explain', 'Exit status']) expect(stdout).toContain(flag);
  });
});
