import fc from 'fast-check';
import {
  countConnections,
  LISTENER_GAUGE_FILTER,
  LISTENER_GAUGES_PATH,
  listenerOfGauge,
  ListenerGaugeScanner,
  MAX_LINE_BYTES,
  MAX_OPEN_LISTENERS_KEPT,
  udpProxyOfGauge,
} from '../../../src/shutdown/listener-stats';

/** Envoy's plain-text `/stats`: one `name: value` line per stat. */
const lines = (stats: Array<[string, number | string]>) => stats.map(([name, value]) => `${name}: ${value}\n`).join('');
const gauge = (listener: string) => `listener.${listener}.downstream_cx_active`;
const sessions = (statPrefix: string) => `udp.${statPrefix}.downstream_sess_active`;

describe('listener gauges', () => {
  test('listener segment of a gauge name', () => {
    expect(listenerOfGauge('listener.0.0.0.0_8080.downstream_cx_active')).toBe('0.0.0.0_8080');
    // Envoy's name for [::]:8443 (sanitizeStatsName makes every ':' a '_').
    expect(listenerOfGauge('listener.[__]_8443.downstream_cx_active')).toBe('[__]_8443');
    expect(listenerOfGauge('listener.envoy-gateway-listener.downstream_cx_active')).toBe('envoy-gateway-listener');
    expect(listenerOfGauge('listener.0.0.0.0_8080.worker_12.downstream_cx_active')).toBeUndefined();
    expect(listenerOfGauge('listener.admin.main_thread.downstream_cx_active')).toBeUndefined();
    expect(listenerOfGauge('listener.0.0.0.0_8080.downstream_cx_total')).toBeUndefined();
    expect(listenerOfGauge('server.total_connections')).toBeUndefined();
  });

  test('sums listeners once, without admin, per-handler duplicates, internal or excluded listeners', () => {
    const count = countConnections(
      lines([
        ['control_plane.identifier', '""'],
        [gauge('0.0.0.0_8080'), 3],
        [gauge('0.0.0.0_8080.worker_0'), 2],
        [gauge('0.0.0.0_8080.worker_1'), 1],
        [gauge('[__]_8443'), 4],
        [gauge('0.0.0.0_8002'), 6],
        [gauge('[__]_8002'), 6],
        [gauge('envoy_internal_tunnel'), 9],
        [gauge('admin'), 1],
        [gauge('admin.main_thread'), 1],
        ['server.total_connections', 99],
        ['listener.admin.downstream_cx_length_ms', 'No recorded values'],
      ]),
      [/_8002$/],
    );
    expect(count.total).toBe(7);
    expect(count.listeners.map((l) => [l.listener, l.role])).toEqual([
      ['0.0.0.0_8080', 'counted'],
      ['[__]_8443', 'counted'],
      ['0.0.0.0_8002', 'excluded'],
      ['[__]_8002', 'excluded'],
      ['envoy_internal_tunnel', 'internal'],
      ['admin', 'admin'],
    ]);
  });

  test('no listener gauge at all is unknown, not zero', () => {
    expect(countConnections('', []).total).toBeNull();
    expect(countConnections(lines([[gauge('admin'), 1]]), []).total).toBeNull();
  });

  test('only excluded listeners visible is a known zero', () => {
    expect(countConnections(lines([[gauge('0.0.0.0_8002'), 2]]), [/_8002$/]).total).toBe(0);
  });

  test('malformed bodies throw', () => {
    expect(() => countConnections('not stats\n', [])).toThrow(/not "name: value"/);
    expect(() => countConnections(`${gauge('a')}: 1`, [])).toThrow(/ends inside a line/);
  });
});

describe("UDP proxies' sessions (Envoy Gateway's shutdown manager counts them since its release note 10110)", () => {
  test('the stat prefix of a session gauge', () => {
    expect(udpProxyOfGauge(sessions('dns'))).toBe('dns');
    expect(udpProxyOfGauge(sessions('udproute/ns/name/rule/0'))).toBe('udproute/ns/name/rule/0');
    expect(udpProxyOfGauge(sessions('a.worker_1'))).toBe('a.worker_1');
    expect(udpProxyOfGauge('udp.downstream_sess_active')).toBeUndefined();
    expect(udpProxyOfGauge('udp.dns.downstream_sess_total')).toBeUndefined();
  });

  test('summed apart from the connections, excluded by the same patterns, as Envoy Gateway counts its cases', () => {
    // Envoy Gateway's cases (internal/cmd/envoy/shutdown_manager_test.go): UDP only, then TCP and UDP.
    const udpOnly = countConnections(lines([[gauge('0.0.0.0_5300'), 0], [gauge('0.0.0.0_5300.worker_0'), 0], [sessions('service'), 3]]), []);
    expect([udpOnly.total, udpOnly.sessions]).toEqual([0, 3]);
    const mixed = countConnections(
      lines([
        [gauge('0.0.0.0_8000'), 1],
        [gauge('0.0.0.0_8000.worker_0'), 1],
        [gauge('0.0.0.0_19001'), 2],
        [sessions('service'), 2],
        [sessions('probe_19001'), 4],
        ['udp.service.downstream_sess_total', 7],
      ]),
      [/_19001$/],
    );
    expect([mixed.total, mixed.sessions]).toEqual([1, 2]);
    expect(mixed.udpProxies).toEqual([
      { statPrefix: 'service', sessions: 2, role: 'counted' },
      { statPrefix: 'probe_19001', sessions: 4, role: 'excluded' },
    ]);
    expect(mixed.openUdp).toEqual([{ name: 'service', sessions: 2 }]);
  });

  test('no UDP proxy is 0 sessions; a session gauge alone does not make the count known', () => {
    expect(countConnections(lines([[gauge('0.0.0.0_8080'), 2]]), []).sessions).toBe(0);
    // A stats matcher hiding listener.* alone: the connections are unknown, so the drain goes on.
    expect(countConnections(lines([[sessions('dns'), 0]]), []).total).toBeNull();
  });

  test.each([
    ['negative', '-1'],
    ['a fraction', '0.5'],
    ['a gauge that went below zero (uint64)', '18446744073709551615'],
    ['not a number', 'x'],
  ])('a session gauge that is %s makes the reading unknown', (_case, value) => {
    const scanner = new ListenerGaugeScanner([]);
    scanner.push(Buffer.from(lines([[gauge('a'), 1], [sessions('dns'), value]])));
    expect(scanner.finish()).toEqual({ ok: false, error: expect.stringMatching(/^the gauge of UDP proxy "dns" is .*, not a count$/) });
  });

  test('the UDP proxies holding the most sessions are kept, most first, in bounded memory', () => {
    const count = 5000;
    const body = Array.from({ length: count }, (_, i) => `${sessions(`p${i}`)}: ${(i * 7919) % 1000}\n`).join('');
    const scanner = new ListenerGaugeScanner([]);
    scanner.push(Buffer.from(`${gauge('a')}: 0\n${body}`));
    const scan = scanner.finish();
    if (!scan.ok) throw new Error(scan.error);
    const values = Array.from({ length: count }, (_, i) => (i * 7919) % 1000);
    expect(scan.sessions).toBe(values.reduce((a, b) => a + b, 0));
    expect(scan.openUdp).toHaveLength(MAX_OPEN_LISTENERS_KEPT);
    expect(scan.openUdp.map((u) => u.sessions)).toEqual(values.filter((v) => v > 0).sort((a, b) => b - a).slice(0, MAX_OPEN_LISTENERS_KEPT));
    expect(scan.openUdpOmitted).toBe(values.filter((v) => v > 0).length - MAX_OPEN_LISTENERS_KEPT);
    // The drain keeps no rows: nothing grows with the number of UDP proxies (the idle ones are passed over unread).
    expect(scan.udpProxies).toEqual([]);
    expect(scan.udpOmitted).toBe(values.filter((v) => v > 0).length);
  });
});

describe('the filter Envoy applies', () => {
  const filter = new RegExp(LISTENER_GAUGE_FILTER);

  test('is in the query, percent-encoded, with the gauges type and no format (plain text on every release)', () => {
    expect(LISTENER_GAUGES_PATH).toBe(`/stats?type=Gauges&filter=${encodeURIComponent(LISTENER_GAUGE_FILTER)}`);
    // Only what RE2 and ECMAScript read alike: no lookaround, no backreference, no lazy quantifier.
    expect(LISTENER_GAUGE_FILTER).not.toMatch(/\(\?[=!<]|\\[1-9]|[*+?]\?/);
  });

  test("takes the UDP proxies' session gauges, nothing else of theirs", () => {
    expect(filter.test(sessions('dns'))).toBe(true);
    expect(filter.test(sessions('udproute/default/coredns/rule/0'))).toBe(true);
    expect(filter.test(sessions('a.b'))).toBe(true);
    expect(filter.test('udp.dns.downstream_sess_total')).toBe(false);
    expect(filter.test('udp.downstream_sess_active')).toBe(false);
    expect(filter.test('cluster.x.udp.sess_rx_datagrams')).toBe(false);
    expect(filter.test(`x${sessions('dns')}`)).toBe(false);
  });

  test('takes the listener-level gauges and leaves out the per-handler copies', () => {
    expect(filter.test(gauge('0.0.0.0_8080'))).toBe(true);
    expect(filter.test(gauge('[__]_8443'))).toBe(true);
    expect(filter.test(gauge('admin'))).toBe(true);
    expect(filter.test(gauge('0.0.0.0_8080.worker_0'))).toBe(false);
    expect(filter.test(gauge('0.0.0.0_8080.worker_17'))).toBe(false);
    expect(filter.test(gauge('admin.main_thread'))).toBe(false);
    expect(filter.test('listener.0.0.0.0_8080.downstream_cx_total')).toBe(false);
    expect(filter.test('cluster.x.downstream_cx_active')).toBe(false);
  });

  /** Segments close to the per-handler ones, which a hand-made complement gets wrong first. */
  const segment = fc.oneof(
    fc.constantFrom('worker_0', 'worker_17', 'worker_', 'worker_1x', 'worker_x1', 'worke', 'workers_1', 'wworker_1', 'main_thread', 'main_threads', 'main_threa', 'amain_thread', 'main', 'w', 'm', ''),
    fc.constantFrom('0', '0_8080', '[__]_8443', 'admin', 'ingress_https'),
    fc.string({ unit: fc.constantFrom('w', 'o', 'r', 'k', 'e', '_', '1', 'm', 'a', 'i', 'n', 't', 'h', 'd', 'x'), maxLength: 12 }),
    fc.string({ maxLength: 8 }).map((s) => s.replace(/[.\n]/g, '')),
  );

  test('matches exactly the names the scanner counts, for any name without a newline', () => {
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 4 }), (segments) => {
        const name = gauge(segments.join('.'));
        expect(filter.test(name)).toBe(listenerOfGauge(name) !== undefined);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('the streaming scanner', () => {
  interface Reading {
    total: number | null;
    /** Counted listeners holding connections: [name, connections], most first, then by name. */
    open: Array<[string, number]>;
  }

  /**
   * The reading a whole-text parse gives: what the scanner must equal. `unknown` for an answer that is not
   * lines of `name: value`, has a line too long to judge, or a listener gauge that is not a count.
   */
  function reference(text: string, excludes: RegExp[]): Reading | 'unknown' {
    if (text !== '' && !text.endsWith('\n')) return 'unknown';
    let total = 0;
    let visible = 0;
    const open: Array<[string, number]> = [];
    for (const line of text === '' ? [] : text.slice(0, -1).split('\n')) {
      const parts = /^([^:]*): ([^]*)$/.exec(line);
      if (!parts || Buffer.byteLength(line) > MAX_LINE_BYTES) return 'unknown';
      const listener = listenerOfGauge(parts[1] as string);
      if (listener === undefined) continue;
      const value = Number(parts[2]);
      if (!/^(?:0|[1-9][0-9]*)$/.test(parts[2] as string) || !Number.isSafeInteger(value)) return 'unknown';
      if (listener === 'admin') continue;
      visible++;
      if (listener.startsWith('envoy_internal_') || excludes.some((e) => e.test(listener))) continue;
      total += value;
      if (value > 0) open.push([listener, value]);
    }
    return { total: visible === 0 ? null : total, open: sortOpen(open) };
  }

  const sortOpen = (open: Array<[string, number]>) => open.sort(([a, x], [b, y]) => y - x || (a < b ? -1 : a > b ? 1 : 0));

  /** The scanner's reading, as the reference gives it (every open listener, when they all fit). */
  function read(bytes: Buffer, cuts: number[], excludes: RegExp[], keepListeners: number): Reading | 'unknown' {
    const scanner = new ListenerGaugeScanner(excludes, keepListeners);
    const points = [...new Set(cuts.filter((c) => c > 0 && c < bytes.length))].sort((a, b) => a - b);
    let start = 0;
    for (const end of [...points, bytes.length]) {
      if (!scanner.push(bytes.subarray(start, end))) break;
      start = end;
    }
    const scan = scanner.finish();
    if (!scan.ok) return 'unknown';
    return { total: scan.total, open: sortOpen(scan.open.map((l) => [l.name, l.connections])) };
  }

  const listenerName = fc.oneof(
    fc.constantFrom('0.0.0.0_8080', '[__]_8443', '0.0.0.0_8002', 'admin', 'envoy_internal_x', 'lst "q"', 'ünï\\code', '日本_80', 'a.worker_1', 'b.main_thread', 'a.worker_x'),
    fc.string({ maxLength: 12 }),
    fc.string({ unit: 'grapheme', maxLength: 6 }),
  );
  /** Mostly what Envoy writes, with the ways an answer can be wrong mixed in. */
  const line = fc.oneof(
    { weight: 6, arbitrary: fc.tuple(listenerName, fc.oneof(fc.constant(0), fc.constant(0), fc.nat(1000))).map(([l, v]) => `${gauge(l)}: ${v}\n`) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(listenerName, fc.constantFrom('-1', '0.5', '1e3', '007', '', ' 0', '0 ', '"text"', '18446744073709551615', '9007199254740993', 'No recorded values'))
        .map(([l, v]) => `${gauge(l)}: ${v}\n`),
    },
    { weight: 2, arbitrary: fc.tuple(fc.string({ maxLength: 20 }), fc.oneof(fc.nat().map(String), fc.constantFrom('"text: 1"', 'No recorded values', 'P0(nan,0) P25(nan,0)'))).map(([n, v]) => `${n}: ${v}\n`) },
    { weight: 1, arbitrary: fc.constantFrom('garbage\n', '\n', `${gauge('x')}:0\n`, `${gauge('x')} : 0\n`, `${gauge('a')}: 0\r\n`) },
  );
  const answer = fc.tuple(fc.array(line, { maxLength: 20 }), fc.constantFrom('', '', '', 'cut: 1')).map(([ls, tail]) => ls.join('') + tail);

  test.each([
    ['the drain (no rows kept: idle zero lines passed over)', 0],
    ['status (rows kept: every line read)', 100],
  ])('equals a whole-text parse, for any answer split anywhere: %s', (_mode, keepListeners) => {
    fc.assert(
      fc.property(answer, fc.array(fc.nat(600), { maxLength: 8 }), (text, cuts) => {
        expect(read(Buffer.from(text), cuts, [/_8002$/], keepListeners)).toEqual(reference(text, [/_8002$/]));
      }),
      { numRuns: 1000 },
    );
  });

  test("Envoy's answer for many idle listeners, split anywhere: the zero lines passed over count as they would read", () => {
    const idle = fc.array(fc.tuple(fc.string({ maxLength: 10 }).map((s) => s.replace(/[:\n]/g, '_')), fc.nat(3)), { maxLength: 60 });
    fc.assert(
      fc.property(idle, fc.array(fc.nat(3000), { maxLength: 10 }), (listeners, cuts) => {
        const text = lines(listeners.map(([l, v], i) => [gauge(`${l}_${i}`), v % 3 === 0 ? v : 0]));
        expect(read(Buffer.from(text), cuts, [], 0)).toEqual(reference(text, []));
      }),
      { numRuns: 500 },
    );
  });

  test('a line too long to judge makes the count unknown, in one piece or many', () => {
    const long = `${gauge('x'.repeat(MAX_LINE_BYTES))}: 0\n`;
    const text = `${gauge('a')}: 0\n${long}`;
    for (const cuts of [[], [10, 5000, 30_000], [text.length - 1]]) {
      for (const keep of [0, 10]) expect(read(Buffer.from(text), cuts, [], keep)).toBe('unknown');
    }
    // At the bound, exactly: a line of MAX_LINE_BYTES is read, one byte more is not, whichever path reads it.
    for (const [nameBytes, expected] of [
      [MAX_LINE_BYTES - 3, { total: 2, open: [['b', 2]] }],
      [MAX_LINE_BYTES - 2, 'unknown'],
      [MAX_LINE_BYTES - 1, 'unknown'],
    ] as const) {
      const atBound = `${gauge('a')}: 0\n${'y'.repeat(nameBytes)}: 0\n${gauge('b')}: 2\n`;
      for (const keep of [0, 10]) expect(read(Buffer.from(atBound), [], [], keep)).toEqual(expected);
    }
  });

  test('hostile lines: each makes the count unknown, or is passed over as the stat it names, never counted', () => {
    const both = (text: string, expected: Reading | 'unknown') => {
      for (const keep of [0, 10]) for (const cuts of [[], [1, 7, 20, 41], [text.length - 1]]) expect(read(Buffer.from(text), cuts, [], keep)).toEqual(expected);
      expect(reference(text, [])).toEqual(expected);
    };
    const first = `${gauge('a')}: 1\n`;
    // A name holding ': ' (Envoy sanitises ':' away): the line names the stat before its first ': ', not a listener gauge.
    both(`${first}listener.b: 9.downstream_cx_active: 5\n`, { total: 1, open: [['a', 1]] });
    both(`${first}${gauge('b: 9')}: 5\n`, { total: 1, open: [['a', 1]] });
    // Numbers no gauge holds, CRLF line ends, an answer cut inside its last line.
    both(`${first}${gauge('b')}: ${'9'.repeat(400)}\n`, 'unknown');
    both(`${first}${gauge('b')}: 0\r\n`, 'unknown');
    both(`${first}${gauge('b')}: 0\r\n`.replace(first, `${gauge('a')}: 1\r\n`), 'unknown');
    both(`${first}${gauge('b')}: 2`, 'unknown');
    both(`${first}${gauge('b')}:`, 'unknown');
  });

  test('4 MiB of one line is refused within its first MAX_LINE_BYTES, after a listener gauge or before, idle or not', () => {
    for (const head of ['', `${gauge('a')}: 0\n`]) {
      for (const line of [`${'x'.repeat(4 * 1024 * 1024)}: 0\n`, `${gauge('y'.repeat(4 * 1024 * 1024))}: 0\n`]) {
        const bytes = Buffer.from(head + line);
        for (const keep of [0, 10]) {
          const scanner = new ListenerGaugeScanner([], keep);
          let offered = 0;
          while (offered < bytes.length && scanner.push(bytes.subarray(offered, offered + 64 * 1024))) offered += 64 * 1024;
          expect(offered).toBeLessThanOrEqual(head.length + MAX_LINE_BYTES);
          expect(scanner.finish()).toEqual({ ok: false, error: expect.stringMatching(/longer than/) });
          // In one piece, too.
          expect(read(bytes, [], [], keep)).toBe('unknown');
        }
      }
    }
  });

  test('what a line left unfinished by one piece keeps is bounded, however long the line', () => {
    const scanner = new ListenerGaugeScanner([]);
    const piece = Buffer.alloc(4096, 'x');
    let pieces = 0;
    while (scanner.push(piece)) pieces++;
    expect(pieces * piece.length).toBeLessThanOrEqual(MAX_LINE_BYTES);
    expect(scanner.finish()).toEqual({ ok: false, error: expect.stringMatching(/longer than/) });
  });

  test('memory does not grow with the answer: a million lines keep only the listeners asked for', () => {
    const scanner = new ListenerGaugeScanner([], 10);
    const piece = Buffer.from(Array.from({ length: 1000 }, (_, i) => `${gauge(`l${i}`)}: 1\n`).join(''));
    for (let i = 0; i < 1000; i++) scanner.push(piece);
    const scan = scanner.finish();
    expect(scan).toMatchObject({ ok: true, total: 1_000_000, omitted: 999_990, openOmitted: 1_000_000 - MAX_OPEN_LISTENERS_KEPT });
    if (scan.ok) expect(scan.listeners).toHaveLength(10);
  });

  test('the listeners holding the most connections are kept, most first, whatever passes over the zeros', () => {
    const values = Array.from({ length: 100 }, (_, i) => (i % 7 === 0 ? 0 : (i * 37) % 101));
    const text = lines(values.map((v, i) => [gauge(`l${i}`), v]));
    const scanner = new ListenerGaugeScanner([]);
    scanner.push(Buffer.from(text));
    const scan = scanner.finish();
    const expected = values
      .map((v, i) => ({ name: `l${i}`, connections: v }))
      .filter((l) => l.connections > 0)
      .sort((a, b) => b.connections - a.connections)
      .slice(0, MAX_OPEN_LISTENERS_KEPT);
    expect(scan).toMatchObject({ ok: true, openOmitted: values.filter((v) => v > 0).length - MAX_OPEN_LISTENERS_KEPT });
    if (scan.ok) expect(scan.open.map((l) => l.connections)).toEqual(expected.map((l) => l.connections));
  });
});

describe('a count is a count (issue 20 item 6)', () => {
  const answer = (values: string[]) => values.map((v, i) => `${gauge(`l${i}`)}: ${v}\n`).join('');
  test.each([
    ['a negative gauge (5 and -10)', ['5', '-10']],
    ['a fraction', ['0.5']],
    ['1e400 (Infinity as a double)', ['1e400']],
    ['-0', ['-0']],
    ['a gauge that went below zero (uint64)', ['18446744073709551615']],
    ['beyond 2^53 (not exact as a double)', ['9007199254740993']],
    ['a leading zero', ['07']],
    ['a duplicate that cancels the other out', ['5', '-5']],
  ])('%s: the reading is unknown, never a count', (_case, values) => {
    const scanner = new ListenerGaugeScanner([]);
    scanner.push(Buffer.from(answer(values)));
    expect(scanner.finish()).toEqual({ ok: false, error: expect.stringContaining('not a count') });
  });

  test('a listener given twice with counts sums to at least each of them: never below the real count', () => {
    expect(countConnections(lines([[gauge('a'), 5], [gauge('a'), 0]]), []).total).toBe(5);
  });
});
