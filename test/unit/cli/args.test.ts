import { formatFlagHelp, parseFlags, type FlagSpecs } from '../../../src/cli/args';
import { UsageError } from '../../../src/cli/errors';

const FLAGS = {
  filename: { type: 'string', short: 'f', multiple: true, valueName: 'FILE', description: 'input' },
  config: { type: 'string', valueName: 'FILE', description: 'config file' },
  diff: { type: 'boolean', description: 'show a diff' },
} as const satisfies FlagSpecs;

const parse = (...argv: string[]) => parseFlags('drainguard inject', argv, FLAGS);

function usageErrorOf(...argv: string[]): string {
  try {
    parse(...argv);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error(`expected a UsageError for ${argv.join(' ')}`);
}

describe('parseFlags', () => {
  test('collects repeated values in order, with short, long and inline forms; "-" is a value', () => {
    expect(parse('-f', 'a.yaml', '--filename', '-', '--filename=b.yaml', '-fc.yaml')).toEqual({
      filename: ['a.yaml', '-', 'b.yaml', 'c.yaml'],
      config: undefined,
      diff: false,
    });
  });

  test('defaults: empty list, undefined, false', () => {
    expect(parse()).toEqual({ filename: [], config: undefined, diff: false });
  });

  test('booleans and single values', () => {
    expect(parse('--diff', '--config', 'c.yaml')).toEqual({ filename: [], config: 'c.yaml', diff: true });
  });

  test('an unknown flag is a usage error naming the flag and the command', () => {
    const message = usageErrorOf('--bogus');
    expect(message).toContain('drainguard inject');
    expect(message).toContain('unknown flag --bogus');
    expect(message).toContain('--help');
    expect(usageErrorOf('-z')).toContain('unknown flag -z');
  });

  test('a positional argument is rejected', () => {
    expect(usageErrorOf('envoy.yaml')).toContain("unexpected argument 'envoy.yaml'");
  });

  test('a missing value is rejected', () => {
    expect(usageErrorOf('-f')).toMatch(/-f, --filename.*argument missing/);
    expect(usageErrorOf('-f', '--diff')).toMatch(/'-f' argument is ambiguous/);
  });

  test('a value for a boolean flag is rejected', () => {
    expect(usageErrorOf('--diff=yes')).toContain("'--diff' does not take an argument");
  });

  test('a single-valued flag given twice is rejected instead of silently taking the last', () => {
    expect(usageErrorOf('--config', 'a', '--config', 'b')).toContain('--config may be given only once');
  });
});

test('formatFlagHelp aligns the descriptions', () => {
  const lines = formatFlagHelp(FLAGS).split('\n');
  expect(lines).toEqual([
    '  -f, --filename FILE   input',
    '      --config FILE     config file',
    '      --diff            show a diff',
  ]);
});
