import { formatFlagHelp, parseFlags, type FlagSpecs } from '../../../src/cli/args';
import { UsageError } from '../../../src/cli/errors';
import { UsageError as ContractUsageError } from '../../../src/drain-contract';

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
    expect(usageErrorOf('--dif')).toContain("unknown flag --dif; did you mean '--diff'?");
  });

  test("it is the drain contract's parser and error: one UsageError class for both", () => {
    expect(UsageError).toBe(ContractUsageError);
  });

  test('short forms: -fFILE, -f=FILE; a value that looks like a flag is refused unless written with =', () => {
    expect(parse('-fa.yaml', '-f=b.yaml').filename).toEqual(['a.yaml', 'b.yaml']);
    expect(usageErrorOf('-f', '-x')).toBe(`drainguard inject: -f needs a value: "-x" looks like a flag (write -f=-x if it is the value) (see 'drainguard inject --help')`);
    expect(parse('--config=-x').config).toBe('-x');
  });

  test('a positional argument is rejected', () => {
    expect(usageErrorOf('envoy.yaml')).toContain('unexpected argument "envoy.yaml"');
  });

  test('a missing value is rejected', () => {
    expect(usageErrorOf('-f')).toContain('-f needs a value');
    expect(usageErrorOf('-f', '--diff')).toContain('-f needs a value: "--diff" looks like a flag');
  });

  test('a value for a boolean flag is rejected', () => {
    expect(usageErrorOf('--diff=yes')).toContain('--diff takes no value');
  });

  test('a single-valued flag given twice is rejected instead of silently taking the last', () => {
    expect(usageErrorOf('--config', 'a', '--config', 'b')).toContain('--config given more than once');
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
