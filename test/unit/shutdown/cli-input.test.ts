import { parseAdminAddress, describeAdminAddress } from '../../../src/shutdown/admin-address';
import { parseDuration } from '../../../src/shutdown/duration';
import { parseFlags, UsageError, type FlagSpec } from '../../../src/shutdown/flags';
import { main } from '../../../src/shutdown/main';

describe('durations', () => {
  test.each([
    ['290s', 290_000],
    ['0s', 0],
    ['1500ms', 1500],
  ])('%s', (text, ms) => expect(parseDuration(text)).toBe(ms));
  test.each(['', '5', '5m', '1.5s', '-1s', ' 5s', '5 s', '1h'])('rejects %j', (text) => expect(parseDuration(text)).toBeUndefined());
});

describe('admin address: unix socket or loopback only', () => {
  test.each([
    ['unix:/admin/admin.sock', 'unix:/admin/admin.sock'],
    ['http://127.0.0.1:19000', 'http://127.0.0.1:19000'],
    ['http://127.1.2.3:9901/', 'http://127.1.2.3:9901'],
    ['http://[::1]:9901', 'http://[::1]:9901'],
    ['http://localhost:9901', 'http://127.0.0.1:9901'],
  ])('accepts %s', (text, described) => expect(describeAdminAddress(parseAdminAddress(text))).toBe(described));
  test.each([
    'unix:admin.sock',
    'http://10.0.0.1:9901',
    'http://0.0.0.0:9901',
    'http://example.com:9901',
    'https://127.0.0.1:9901',
    'http://127.0.0.1',
    'http://127.0.0.1:0',
    'http://127.0.0.1:70000',
    'http://127.0.0.256:9901',
    'http://127.0.0.1:9901/path',
    'http://user@127.0.0.1:9901',
    '/admin/admin.sock',
  ])('refuses %s', (text) => expect(() => parseAdminAddress(text)).toThrow(/admin address/));
});

describe('flags', () => {
  const specs: Record<string, FlagSpec> = {
    deadline: { kind: 'duration', default: '290s', help: '' },
    'min-connections': { kind: 'count', default: '0', help: '' },
    'exclude-listener': { kind: 'regex', repeatable: true, help: '' },
    json: { kind: 'boolean', help: '' },
  };
  test('values, = form, repeats and defaults', () => {
    const flags = parseFlags(['--exclude-listener', '_8002$', '--exclude-listener=^admin', '--json'], specs);
    expect(flags.get('deadline')).toEqual([290_000]);
    expect(flags.get('min-connections')).toEqual([0]);
    expect((flags.get('exclude-listener') as RegExp[]).map(String)).toEqual(['/_8002$/', '/^admin/']);
    expect(flags.get('json')).toEqual([true]);
  });
  test.each([
    [['--deadline'], /needs a value/],
    [['--deadline', '5m'], /expected a duration/],
    [['--deadline', '1s', '--deadline', '2s'], /more than once/],
    [['--min-connections', '-1'], /whole number/],
    [['--exclude-listener', '('], /invalid regular expression/],
    [['--nope'], /unknown flag/],
    [['stray'], /unexpected argument/],
    [['--json=yes'], /takes no value/],
  ])('%j is refused', (args, message) => expect(() => parseFlags(args, specs)).toThrow(message));
  test('errors are UsageErrors', () => expect(() => parseFlags(['--nope'], specs)).toThrow(UsageError));
});

describe('main', () => {
  let stderr: jest.SpyInstance;
  let stdout: jest.SpyInstance;
  beforeEach(() => {
    stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    stdout = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
  });
  afterEach(() => jest.restoreAllMocks());

  test.each([
    [['drain']],
    [['drain', '--admin', 'http://10.1.2.3:9901']],
    [['drain', '--admin', 'unix:/a.sock', '--poll-interval', '0s']],
    [['drain', '--admin', 'unix:/a.sock', '--deadline', '0s']],
    [['frobnicate']],
    [[]],
  ])('usage error %j exits 2', async (argv) => {
    expect(await main(argv)).toBe(2);
  });

  test('install refuses to copy a generic runtime', async () => {
    expect(await main(['install', '--to', '/tmp/never'])).toBe(1);
    expect(String(stderr.mock.calls[0]?.[0])).toMatch(/must be run from the built envoy-shutdown executable/);
  });

  test('version and help', async () => {
    expect(await main(['version'])).toBe(0);
    expect(String(stdout.mock.calls[0]?.[0])).toMatch(/^envoy-shutdown \d+\.\d+\.\d+\n$/);
    expect(await main(['help'])).toBe(0);
    const help = String(stdout.mock.calls[1]?.[0]);
    for (const flag of ['--admin', '--deadline', '--drain-delay', '--min-drain', '--min-connections', '--poll-interval', '--exclude-listener', '--request-timeout', '--inbound-only', '--to', '--json']) {
      expect(help).toContain(flag);
    }
  });
});
