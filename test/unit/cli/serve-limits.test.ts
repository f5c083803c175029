/**
 * The server's limit flags: a value out of range or not a whole number is refused before anything
 * starts, with the flag, its range and the value given; the help names every one of them.
 */
import { runServe, SERVE_USAGE } from '../../../src/cli/serve';
import { EXIT_USAGE } from '../../../src/cli/errors';

const LIMIT_FLAGS: [flag: string, min: number, max: number][] = [
  ['max-body-bytes', 1024, 64 * 1024 * 1024],
  ['max-concurrent-admissions', 1, 64],
  ['max-concurrent-small-admissions', 1, 256],
  ['max-queued-admissions', 0, 10_000],
  ['max-connections', 1, 100_000],
];

async function refusal(argv: string[]): Promise<{ code: number; stderr: string }> {
  let stderr = '';
  const spy = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
  try {
    return { code: await runServe(argv), stderr };
  } finally {
    spy.mockRestore();
  }
}

describe.each(LIMIT_FLAGS)('--%s', (flag, min, max) => {
  test.each([String(min - 1), String(max + 1), 'many', '1.5', '-1', '1e3', ''])('refuses %j', async (value) => {
    const { code, stderr } = await refusal([`--${flag}=${value}`]);
    expect(code).toBe(EXIT_USAGE);
    expect(stderr).toBe(`drainguard serve: --${flag} must be a whole number from ${min} to ${max}; got '${value}' (see 'drainguard serve --help')\n`);
  });

  test('a negative value written as the next argument is refused as a missing value', async () => {
    const { code, stderr } = await refusal([`--${flag}`, '-1']);
    expect(code).toBe(EXIT_USAGE);
    expect(stderr).toBe(`drainguard serve: --${flag} needs a value: "-1" looks like a flag (write --${flag}=-1 if it is the value) (see 'drainguard serve --help')\n`);
  });

  test('is in the help', () => {
    expect(SERVE_USAGE).toContain(`--${flag} N`);
  });
});
