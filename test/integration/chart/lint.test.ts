/** `helm lint` with the real helm binary: no errors or warnings, in normal and strict mode. */
import { CHART_DIR, helm, helmBinary } from '../../support/helm';

beforeAll(() => {
  helmBinary();
});

test('helm is the binary shipped on npm, helm 4', () => {
  const { status, stdout } = helm(['version', '--short']);
  expect(status).toBe(0);
  expect(stdout).toMatch(/^v4\./);
});

test.each([[[]], [['--strict']]])('helm lint %j is clean', (extra: string[]) => {
  const { status, stdout, stderr } = helm(['lint', CHART_DIR, ...extra]);
  expect({ status, stderr }).toEqual({ status: 0, stderr: '' });
  expect(stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
  expect(stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
});

test('helm lint is clean for every TLS mode', () => {
  for (const set of ['tls.mode=self', 'tls.mode=certManager', 'tls.mode=secret,tls.secret.name=s,tls.secret.caBundle=Q0E=']) {
    const { status, stdout } = helm(['lint', CHART_DIR, '--strict', '--set', set]);
    expect({ set, status, problems: stdout.match(/\[(WARNING|ERROR)\].*/g) }).toEqual({ set, status: 0, problems: null });
  }
});

test('helm lint fails on a broken chart (the check can fail)', () => {
  const { status, stdout } = helm(['lint', CHART_DIR, '--set', 'tls.mode=nonsense']);
  expect(status).not.toBe(0);
  expect(stdout).toContain('[ERROR]');
});
