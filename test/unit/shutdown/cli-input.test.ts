/**
 * What `envoy-shutdown` accepts on its command line: the drain contract's durations, admin addresses
 * and flags, and the program's exit codes. The webhook checks annotation values with the same
 * functions, so every address refused here is refused in a pod too.
 */
import { isIPv4 } from 'node:net';
import fc from 'fast-check';
import {
  MAX_DEADLINE_SECONDS,
  MAX_UNIX_SOCKET_PATH_BYTES,
  parseDuration,
  parseFlags,
  readAdminAddress,
  UsageError,
  type AdminAddress,
  type FlagSpec,
} from '../../../src/drain-contract';
import { main } from '../../../src/shutdown/main';

function accepted(text: string): AdminAddress {
  const reading = readAdminAddress(text);
  if (!reading.ok) throw new Error(`refused ${text}: ${reading.problem}`);
  return reading.address;
}

describe('durations', () => {
  test.each([
    ['290s', 290_000],
    ['0s', 0],
    ['1500ms', 1500],
    [`${MAX_DEADLINE_SECONDS}s`, MAX_DEADLINE_SECONDS * 1000],
  ])('%s', (text, ms) => expect(parseDuration(text)).toBe(ms));
  test.each(['', '5', '5m', '1.5s', '-1s', ' 5s', '5 s', '1h', '05s', '00s', `${MAX_DEADLINE_SECONDS + 1}s`, '2147484s', '99999999999s'])(
    'rejects %j',
    (text) => expect(parseDuration(text)).toBeUndefined(),
  );
});

describe('admin address: unix socket or loopback IP literal only', () => {
  test.each([
    ['unix:/admin/admin.sock', { kind: 'unix', path: '/admin/admin.sock' }],
    ['http://127.0.0.1:19000', { kind: 'tcp', host: '127.0.0.1', port: 19000 }],
    ['http://127.1.2.3:9901', { kind: 'tcp', host: '127.1.2.3', port: 9901 }],
    ['http://127.255.0.10:65535', { kind: 'tcp', host: '127.255.0.10', port: 65535 }],
    ['http://[::1]:9901', { kind: 'tcp', host: '::1', port: 9901 }],
    ['http://localhost:9901', { kind: 'tcp', host: '127.0.0.1', port: 9901 }],
  ])('accepts %s, connecting to the literal host', (text, expected) => {
    expect(accepted(text)).toEqual({ ...expected, text });
  });

  test('a unix socket path may use the whole 107 bytes of sun_path, not one more', () => {
    const longest = `/${'a'.repeat(MAX_UNIX_SOCKET_PATH_BYTES - 1)}`;
    expect(accepted(`unix:${longest}`)).toMatchObject({ path: longest });
    expect(readAdminAddress(`unix:${longest}b`)).toEqual({ ok: false, problem: expect.stringContaining('107 bytes') });
  });

  test.each([
    // Not loopback at all.
    'http://10.0.0.1:9901',
    'http://0.0.0.0:9901',
    'http://example.com:9901',
    'http://128.0.0.1:9901',
    // Loopback in a form that a resolver or an inet_aton-style parser reads differently.
    'http://127.0.0.09:9901',
    'http://127.0.0.010:9901',
    'http://127.000.000.001:9901',
    'http://0177.0.0.1:9901',
    'http://0x7f.0.0.1:9901',
    'http://127.0x0.0.1:9901',
    'http://127.1:9901',
    'http://127.0.1:9901',
    'http://2130706433:9901',
    'http://127.0.0.1.:9901',
    'http://127.0.0.256:9901',
    'http://127.0.0.-1:9901',
    'http://127.0.0.1.5:9901',
    'http://localhost.:9901',
    'http://LOCALHOST:9901',
    'http://localhost.localdomain:9901',
    'http://foo.localhost:9901',
    'http://127.0.0.1.nip.io:9901',
    'http://[::ffff:127.0.0.1]:9901',
    'http://[0:0:0:0:0:0:0:1]:9901',
    'http://[::1%25lo]:9901',
    'http://[::]:9901',
    'http://[::1:9901',
    'http://::1:9901',
    // Anything around or inside the authority.
    'https://127.0.0.1:9901',
    'HTTP://127.0.0.1:9901',
    'http://127.0.0.1',
    'http://127.0.0.1:',
    'http://127.0.0.1:0',
    'http://127.0.0.1:09901',
    'http://127.0.0.1:+9901',
    'http://127.0.0.1:70000',
    'http://127.0.0.1:9901/',
    'http://127.0.0.1:9901/path',
    'http://127.0.0.1:9901?x=1',
    'http://127.0.0.1:9901#x',
    'http://user@127.0.0.1:9901',
    'http://127.0.0.1@10.0.0.1:9901',
    'http://127.0.0.1:9901@10.0.0.1:9901',
    'http://127.0.0.1:9901\n',
    ' http://127.0.0.1:9901',
    'http:/127.0.0.1:9901',
    '127.0.0.1:9901',
    // Unix sockets: relative, dot segments, empty segments, odd characters, abstract sockets.
    'unix:admin.sock',
    'unix:',
    'unix:/',
    'unix:/admin/../etc/passwd',
    'unix:/admin/./admin.sock',
    'unix:/admin//admin.sock',
    'unix:/admin/admin.sock/',
    'unix:/admin/admin.sock; rm -rf /',
    'unix:/admin/adm\0in.sock',
    'unix:/admin/ädmin.sock',
    'unix:@abstract',
    'unix://admin/admin.sock',
    '/admin/admin.sock',
  ])('refuses %j', (text) => {
    const reading = readAdminAddress(text);
    expect(reading.ok).toBe(false);
    expect(reading.ok ? '' : reading.problem).not.toBe('');
  });

  const loopbackIPv4 = fc
    .tuple(fc.nat(255), fc.nat(255), fc.nat(255))
    .map(([a, b, c]) => `127.${a}.${b}.${c}`);
  const port = fc.integer({ min: 1, max: 65535 });

  test('every canonical 127.0.0.0/8 address with any port is accepted, connecting to exactly that host', () => {
    fc.assert(
      fc.property(loopbackIPv4, port, (host, p) => {
        expect(accepted(`http://${host}:${p}`)).toEqual({ kind: 'tcp', text: `http://${host}:${p}`, host, port: p });
      }),
    );
  });

  test('whatever string is accepted, the host to connect to is a loopback IP literal that URL parsing leaves as it is', () => {
    // Strings built from the pieces addresses are made of, so that near misses are frequent.
    const piece = fc.constantFrom('http://', 'unix:', '127', '.', '0', '00', '1', '9', '255', '256', '0x7f', ':', '[', ']', '::1', 'localhost', '/', '@', 'a', '%', '..', '9901');
    const candidate = fc.array(piece, { maxLength: 12 }).map((pieces) => pieces.join(''));
    fc.assert(
      fc.property(candidate, (text) => {
        const reading = readAdminAddress(text);
        if (!reading.ok) return;
        const { address } = reading;
        if (address.kind === 'unix') {
          expect(address.path).toMatch(/^(\/[A-Za-z0-9._-]+)+$/);
          expect(address.path.split('/')).not.toContain('..');
          expect(address.path.split('/')).not.toContain('.');
          return;
        }
        // The WHATWG URL parser rewrites 127.0.0.010 to 127.0.0.8 and 127.1 to 127.0.0.1: an accepted
        // address must come out of it unchanged, so every reader connects to the same host.
        const url = new URL(text);
        expect(url.href).toBe(address.port === 80 ? `${text.slice(0, -':80'.length)}/` : `${text}/`);
        if (url.hostname === 'localhost') expect(address.host).toBe('127.0.0.1');
        else if (address.host === '::1') expect(url.hostname).toBe('[::1]');
        else {
          expect(isIPv4(address.host)).toBe(true);
          expect(address.host.startsWith('127.')).toBe(true);
          expect(url.hostname).toBe(address.host);
        }
        expect(Number(url.port || '80')).toBe(address.port);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('flags', () => {
  const specs: Record<string, FlagSpec> = {
    deadline: { kind: 'duration', default: '290s', help: '' },
    'min-connections': { kind: 'count', default: '0', help: '' },
    'exclude-listener': { kind: 'listener-pattern', repeatable: true, help: '' },
    admin: { kind: 'address', help: '' },
    json: { kind: 'boolean', help: '' },
  };
  test('values, = form, repeats and defaults', () => {
    const flags = parseFlags(['--exclude-listener', '_8002$', '--exclude-listener=^admin', '--json', '--admin', 'http://localhost:9901'], specs);
    expect(flags.get('deadline')).toEqual([290_000]);
    expect(flags.get('min-connections')).toEqual([0]);
    expect(flags.get('exclude-listener')).toEqual(['_8002$', '^admin']);
    expect(flags.get('json')).toEqual([true]);
    expect(flags.get('admin')).toEqual([{ kind: 'tcp', text: 'http://localhost:9901', host: '127.0.0.1', port: 9901 }]);
  });
  test.each([
    [['--deadline'], /needs a value/],
    [['--deadline', '5m'], /expected a whole number of seconds or milliseconds/],
    [['--deadline', '2147484s'], /at most 2000000s/],
    [['--deadline', '1s', '--deadline', '2s'], /more than once/],
    [['--min-connections', '-1'], /whole number/],
    [['--min-connections', '1000001'], /from 0 to 1000000/],
    [['--exclude-listener', '('], /\( at 0 is not supported/],
    [['--exclude-listener', '(a+)+$'], /\( at 0 is not supported.*expected a listener name pattern/],
    [['--exclude-listener', ''], /an empty pattern would exclude every listener/],
    [['--exclude-listener', 'a$b'], /\$ at 1: only at the end/],
    [['--exclude-listener', '\\d+'], /only punctuation can be escaped/],
    [['--admin', 'http://127.0.0.010:9901'], /admin address "http:\/\/127\.0\.0\.010:9901": 127\.0\.0\.010 is not a loopback IP literal/],
    [['--nope'], /unknown flag/],
    [['--constructor', 'x'], /unknown flag --constructor/],
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
    [['drain', '--admin', 'http://127.0.0.09:9901']],
    [['drain', '--admin', 'http://127.0.0.010:9901']],
    [['drain', '--admin', 'unix:/a.sock', '--poll-interval', '0s']],
    [['drain', '--admin', 'unix:/a.sock', '--deadline', '0s']],
    [['drain', '--admin', 'unix:/a.sock', '--deadline', '2147484s']],
    [['status', '--admin', 'http://127.0.0.09:9901']],
    [['frobnicate']],
    [[]],
  ])('usage error %j exits 2', async (argv) => {
    expect(await main(argv)).toBe(2);
  });

  test('a refused admin address is named with the reason, and nothing is contacted', async () => {
    expect(await main(['drain', '--admin', 'http://127.0.0.09:9901'])).toBe(2);
    expect(String(stderr.mock.calls[0]?.[0])).toMatch(/^envoy-shutdown drain: --admin: admin address "http:\/\/127\.0\.0\.09:9901": 127\.0\.0\.09 is not a loopback IP literal/);
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
