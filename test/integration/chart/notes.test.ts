/** NOTES.txt, rendered by a client-side dry-run install (no cluster): how to opt in and verify. */
import { CHART_DIR, helm, helmBinary } from '../../support/helm';

function notes(...set: string[]): string {
  const args = ['install', 'drainguard', CHART_DIR, '--namespace', 'drainguard-system', '--dry-run=client'];
  for (const s of set) args.push('--set', s);
  const { status, stdout, stderr } = helm(args);
  expect(stderr).toBe('');
  expect(status).toBe(0);
  const at = stdout.indexOf('NOTES:');
  expect(at).toBeGreaterThanOrEqual(0);
  return stdout.slice(at);
}

beforeAll(() => {
  helmBinary();
});

test('explains how to opt a namespace in and how to check a pod was rewritten', () => {
  const text = notes();
  expect(text).toContain('kubectl label namespace <namespace> drainguard.io/inject=enabled');
  expect(text).toContain("-o jsonpath='{.metadata.annotations.drainguard\\.io/status}'");
  expect(text).toMatch(/kubectl -n <namespace> get pod <envoy-pod> -o yaml/);
  expect(text).toContain('drainguard-install');
  expect(text).toContain('rollout status deployment/drainguard');
});

test('follows the TLS mode and failure policy', () => {
  expect(notes()).toContain('caBundle');
  expect(notes('tls.mode=certManager')).toContain('get certificate drainguard-serving');
  expect(notes('webhook.failurePolicy=Fail')).toContain('an unreachable webhook rejects pods');
  expect(notes()).toContain('failurePolicy Ignore lets pods');
});

test('names drainguard check as the next step, with this release, and helm test', () => {
  expect(notes()).toContain('drainguard check --release drainguard --drainguard-namespace drainguard-system --all-namespaces --wait 120s');
  expect(notes('fullnameOverride=dg')).toContain('--fullname dg --all-namespaces');
  expect(notes()).toContain('helm test drainguard -n drainguard-system --logs');
  expect(notes('helmTest.enabled=false')).not.toContain('helm test');
});
