/**
 * values.schema.json, enforced by helm itself: bad values make `helm template` fail with a message that
 * names the offending field.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { CHART_DIR, helm, helmBinary, renderChartFailure, type RenderOptions } from '../../support/helm';

let tmp: string;
beforeAll(() => {
  helmBinary();
  tmp = mkdtempSync(join(tmpdir(), 'drainguard-values-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Renders with a values file (YAML keeps numbers typed, unlike --set which turns 1.5 into a string). */
function renderWithValues(values: unknown): { status: number; stderr: string } {
  const file = join(tmp, `values-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, stringify(values));
  return helm(['template', 'drainguard', CHART_DIR, '--namespace', 'drainguard-system', '-f', file]);
}

const REJECTED: [string, RenderOptions, RegExp][] = [
  ['a non-integer replica count (--set)', { set: { replicaCount: 1.5 } }, /\/replicaCount/],
  ['a replica count of zero', { set: { replicaCount: 0 } }, /\/replicaCount/],
  ['an unknown certificate mode', { set: { 'tls.mode': 'letsencrypt' } }, /\/tls\/mode.*'self', 'certManager', 'secret'/],
  ['an invalid failure policy', { set: { 'webhook.failurePolicy': 'Retry' } }, /\/webhook\/failurePolicy.*'Ignore', 'Fail'/],
  ['a webhook timeout above 5 s', { set: { 'webhook.timeoutSeconds': 10 } }, /\/webhook\/timeoutSeconds/],
  ['a negative drain delay', { set: { 'config.drain.drainDelaySeconds': -1 } }, /\/config\/drain\/drainDelaySeconds/],
  ['a negative minimum drain', { set: { 'config.drain.minDrainSeconds': -5 } }, /\/config\/drain\/minDrainSeconds/],
  ['a negative connection threshold', { set: { 'config.drain.minConnections': -1 } }, /\/config\/drain\/minConnections/],
  ['a negative deadline margin', { set: { 'config.drain.deadlineMarginSeconds': -1 } }, /\/config\/drain\/deadlineMarginSeconds/],
  ['a zero poll interval', { set: { 'config.drain.pollIntervalSeconds': 0 } }, /\/config\/drain\/pollIntervalSeconds/],
  ['an unknown sidecar mode', { set: { 'config.sidecarMode': 'keep' } }, /\/config\/sidecarMode/],
  ['a malformed resource quantity', { set: { 'config.requests.envoy.memory': '128 MB' } }, /\/config\/requests\/envoy\/memory/],
  ['a typo in a top-level key', { set: { replicas: 3 } }, /additional properties 'replicas' not allowed/],
  ['a typo in the tls section', { set: { 'tls.mdoe': 'self' } }, /\/tls.*additional properties 'mdoe' not allowed/],
  ['a typo in the drain config', { set: { 'config.drain.drainDelay': 3 } }, /\/config\/drain.*'drainDelay'/],
  ['tls.mode secret without a Secret name or CA', { set: { 'tls.mode': 'secret' } }, /^(?=[\s\S]*\/tls\/secret\/name)(?=[\s\S]*\/tls\/secret\/caBundle)/],
  ['a privileged server port', { set: { 'server.port': 443 } }, /\/server\/port/],
];

test.each(REJECTED)('rejects %s', (_name, opts, message) => {
  const { status, stderr } = renderChartFailure(opts);
  expect(status).not.toBe(0);
  expect(stderr).toContain("values don't meet the specifications of the schema");
  expect(stderr).toMatch(message);
});

test('rejects a fractional replica count from a values file', () => {
  const { status, stderr } = renderWithValues({ replicaCount: 1.5 });
  expect(status).not.toBe(0);
  expect(stderr).toMatch(/\/replicaCount.*want integer/);
});

test('rejects a negative drain setting from a values file', () => {
  const { status, stderr } = renderWithValues({ config: { drain: { minDrainSeconds: -0.5 } } });
  expect(status).not.toBe(0);
  expect(stderr).toMatch(/\/config\/drain\/minDrainSeconds/);
});

test('a grace period shorter than the shutdown delay plus the in-flight allowance is refused by the template', () => {
  const { status, stderr } = renderChartFailure({ set: { terminationGracePeriodSeconds: 14, 'server.shutdownDelaySeconds': 5 } });
  expect(status).not.toBe(0);
  expect(stderr).toMatch(/terminationGracePeriodSeconds must be at least server.shutdownDelaySeconds \+ 10/);
});

test('the same values with valid settings are accepted (the rejections are specific)', () => {
  const ok = renderWithValues({
    replicaCount: 3,
    tls: { mode: 'secret', secret: { name: 'tls', caBundle: 'Q0E=' } },
    webhook: { failurePolicy: 'Fail', timeoutSeconds: 5 },
    config: { drain: { drainDelaySeconds: 3, minDrainSeconds: 0, minConnections: 0 }, sidecarMode: 'disarm' },
  });
  expect(ok.stderr).toBe('');
  expect(ok.status).toBe(0);
});
