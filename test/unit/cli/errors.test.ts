import { DrainguardBugError, InputError, reportError, UsageError } from '../../../src/cli/errors';
import { PatchVerificationError } from '../../../src/mutate';

function report(error: unknown): { code: number; stderr: string } {
  let stderr = '';
  const code = reportError(error, (text) => void (stderr += text));
  return { code, stderr };
}

const STACK_FRAME = /^\s+at .+:\d+:\d+\)?$/m;

describe('reportError', () => {
  test('a usage error: exit 2, the message alone', () => {
    expect(report(new UsageError("drainguard inject: unknown flag --x (see 'drainguard inject --help')"))).toEqual({
      code: 2,
      stderr: "drainguard inject: unknown flag --x (see 'drainguard inject --help')\n",
    });
  });

  test('an input error: exit 3 (1 means differences found), every line prefixed, no stack trace', () => {
    const { code, stderr } = report(new InputError('a.yaml: document 1: Pod p: denied: x\nb.yaml: document 2: Pod q: denied: y'));
    expect(code).toBe(3);
    expect(stderr).toBe('error: a.yaml: document 1: Pod p: denied: x\nerror: b.yaml: document 2: Pod q: denied: y\n');
    expect(stderr).not.toMatch(STACK_FRAME);
  });

  test('a PatchVerificationError is reported as a drainguard bug (exit 4), with where it happened and the stack', () => {
    const cause = new PatchVerificationError('patched pod fails validation', ['duplicate container name envoy']);
    const { code, stderr } = report(new DrainguardBugError('x.yaml: document 1: DaemonSet ns/envoy: PatchVerificationError: patched pod fails validation', { cause }));
    expect(code).toBe(4);
    expect(stderr).toMatch(/^drainguard: internal error\. This is a bug in drainguard, not in your input/);
    expect(stderr).toContain('x.yaml: document 1: DaemonSet ns/envoy: PatchVerificationError');
    expect(stderr).toMatch(STACK_FRAME);
  });

  test('any other exception is a bug too', () => {
    const { code, stderr } = report(new TypeError('x is undefined'));
    expect(stderr).toMatch(/^drainguard: internal error\.[^]*TypeError: x is undefined/);
    expect(code).toBe(4);
  });
});
