import fc from 'fast-check';
import { countConnections, listenerOfGauge, ListenerGaugeScanner, MAX_NAME_BYTES } from '../../../src/shutdown/listener-stats';

const body = (stats: object[]) => JSON.stringify({ stats });

describe('listener gauges', () => {
  test('listener segment of a gauge name', () => {
    expect(listenerOfGauge('listener.0.0.0.0_8080.downstream_cx_active')).toBe('0.0.0.0_8080');
    expect(listenerOfGauge('listener.[::]_8443.downstream_cx_active')).toBe('[::]_8443');
    expect(listenerOfGauge('listener.envoy-gateway-listener.downstream_cx_active')).toBe('envoy-gateway-listener');
    expect(listenerOfGauge('listener.0.0.0.0_8080.worker_12.downstream_cx_active')).toBeUndefined();
    expect(listenerOfGauge('listener.admin.main_thread.downstream_cx_active')).toBeUndefined();
    expect(listenerOfGauge('listener.0.0.0.0_8080.downstream_cx_total')).toBeUndefined();
    expect(listenerOfGauge('server.total_connections')).toBeUndefined();
  });

  test('sums listeners once, without admin, per-handler duplicates, internal or excluded listeners', () => {
    const count = countConnections(
      body([
        { name: 'control_plane.identifier', value: '' },
        { name: 'listener.0.0.0.0_8080.downstream_cx_active', value: 3 },
        { name: 'listener.0.0.0.0_8080.worker_0.downstream_cx_active', value: 2 },
        { name: 'listener.0.0.0.0_8080.worker_1.downstream_cx_active', value: 1 },
        { name: 'listener.[::]_8443.downstream_cx_active', value: 4 },
        { name: 'listener.0.0.0.0_8002.downstream_cx_active', value: 6 },
        { name: 'listener.[::]_8002.downstream_cx_active', value: 6 },
        { name: 'listener.envoy_internal_tunnel.downstream_cx_active', value: 9 },
        { name: 'listener.admin.downstream_cx_active', value: 1 },
        { name: 'listener.admin.main_thread.downstream_cx_active', value: 1 },
        { name: 'server.total_connections', value: 99 },
        { histograms: { supported_quantiles: [], computed_quantiles: [] } },
      ]),
      [/_8002$/],
    );
    expect(count.total).toBe(7);
    expect(count.listeners.map((l) => [l.listener, l.role])).toEqual([
      ['0.0.0.0_8080', 'counted'],
      ['[::]_8443', 'counted'],
      ['0.0.0.0_8002', 'excluded'],
      ['[::]_8002', 'excluded'],
      ['envoy_internal_tunnel', 'internal'],
      ['admin', 'admin'],
    ]);
  });

  test('no listener gauge at all is unknown, not zero', () => {
    expect(countConnections('{"stats":[]}', []).total).toBeNull();
    expect(countConnections(body([{ name: 'listener.admin.downstream_cx_active', value: 1 }]), []).total).toBeNull();
  });

  test('only excluded listeners visible is a known zero', () => {
    expect(countConnections(body([{ name: 'listener.0.0.0.0_8002.downstream_cx_active', value: 2 }]), [/_8002$/]).total).toBe(0);
  });

  test('malformed bodies throw', () => {
    expect(() => countConnections('not json', [])).toThrow();
    expect(() => countConnections('{"nostats":1}', [])).toThrow(/stats/);
  });
});

describe('the streaming scanner', () => {
  /**
   * The count JSON.parse plus a filter gives: what the scanner must equal. A listener gauge whose value
   * is not a non-negative whole number makes it no count at all.
   */
  function reference(text: string, excludes: RegExp[]): number | null | 'not a count' {
    const stats = (JSON.parse(text) as { stats: { name?: unknown; value?: unknown }[] }).stats;
    let total = 0;
    let visible = 0;
    let notACount = false;
    for (const { name, value } of stats) {
      if (typeof name !== 'string' || typeof value !== 'number') continue;
      const listener = listenerOfGauge(name);
      if (listener === undefined) continue;
      if (!Number.isSafeInteger(value) || value < 0 || Object.is(value, -0)) notACount = true;
      if (listener === 'admin') continue;
      visible++;
      if (!/^envoy_internal_/.test(listener) && !excludes.some((e) => e.test(listener))) total += value;
    }
    if (notACount) return 'not a count';
    return visible === 0 ? null : total;
  }

  /** The scanner's result as the reference gives it. */
  function counted(scan: ReturnType<ListenerGaugeScanner['finish']>): number | null | 'not a count' {
    if (!scan.ok) return /not a count/.test(scan.error) ? 'not a count' : (scan.error as never);
    return scan.total;
  }

  function scanInPieces(bytes: Buffer, cuts: number[], excludes: RegExp[] = []) {
    const scanner = new ListenerGaugeScanner(excludes, 100);
    const points = [...new Set(cuts.filter((c) => c > 0 && c < bytes.length))].sort((a, b) => a - b);
    let start = 0;
    for (const end of [...points, bytes.length]) {
      scanner.push(bytes.subarray(start, end));
      start = end;
    }
    return scanner.finish();
  }

  const listenerName = fc.oneof(
    fc.constantFrom('0.0.0.0_8080', '[::]_8443', '0.0.0.0_8002', 'admin', 'envoy_internal_x', 'lst "q"', 'ünï\\code', 'a.worker_1', 'b.main_thread'),
    fc.string({ maxLength: 12 }),
  );
  const element = fc.oneof(
    fc.record({ name: listenerName.map((l) => `listener.${l}.downstream_cx_active`), value: fc.oneof(fc.nat(1000), fc.nat(1000), fc.constantFrom(-10, 0.5, 1e300, -1)) }),
    fc.record({ name: fc.string({ maxLength: 20 }), value: fc.oneof(fc.nat(), fc.constant('text')) }),
    fc.constant({ histograms: { supported_quantiles: [0, 50], computed_quantiles: [{ name: 'x', values: [] }] } }),
    fc.record({ value: fc.nat(5), name: listenerName.map((l) => `listener.${l}.downstream_cx_active`), extra: fc.boolean() }),
  );

  test('equals JSON.parse and a filter, for any answer split anywhere (escapes, unicode, other shapes)', () => {
    fc.assert(
      fc.property(fc.array(element, { maxLength: 15 }), fc.array(fc.nat(400), { maxLength: 8 }), fc.boolean(), (elements, cuts, spaced) => {
        const text = JSON.stringify({ stats: elements }, null, spaced ? 1 : undefined);
        const scan = scanInPieces(Buffer.from(text), cuts, [/_8002$/]);
        expect(counted(scan)).toBe(reference(text, [/_8002$/]));
      }),
      { numRuns: 300 },
    );
  });

  /** A listener's gauge followed by copies as Envoy sorts them, some of which are not per-handler copies at all. */
  const listenerGroup = fc
    .tuple(
      listenerName,
      fc.nat(9),
      fc.array(
        fc.tuple(
          fc.constantFrom('worker_0', 'worker_17', 'main_thread', 'worker_', 'worker_x', 'main_thread2', 'other', ''),
          fc.boolean(), // true: the copy names another listener
          fc.nat(9),
        ),
        { maxLength: 4 },
      ),
    )
    .map(([listener, value, copies]) => [
      { name: `listener.${listener}.downstream_cx_active`, value },
      ...copies.map(([handler, other, copyValue]) => ({
        name: `listener.${other ? `${listener}x` : listener}.${handler}.downstream_cx_active`,
        value: copyValue,
      })),
    ]);

  test("equals JSON.parse and a filter for Envoy's compact answers of listener groups, split anywhere", () => {
    fc.assert(
      fc.property(fc.array(listenerGroup, { maxLength: 8 }), fc.array(fc.nat(600), { maxLength: 8 }), (groups, cuts) => {
        const text = JSON.stringify({ stats: groups.flat() });
        const scan = scanInPieces(Buffer.from(text), cuts, [/_8002$/]);
        expect(counted(scan)).toBe(reference(text, [/_8002$/]));
      }),
      { numRuns: 500 },
    );
  });

  test.each([
    ['truncated', '{"stats":[{"name":"listener.a.downstream_cx_active","value":3}'],
    ['trailing garbage', '{"stats":[]} x'],
    ['a bare word', '{"stats":[{"name":"listener.a.downstream_cx_active","value":three}]}'],
    ['an unterminated string', '{"stats":[{"name":"listener.a.downstream_cx_'],
    ['no stats array', '{"stats":{}}'],
    ['not an object', '[1,2]'],
    ['a missing comma', '{"stats":[{"name":"a","value":1}{"name":"b","value":2}]}'],
    ['nesting beyond the limit', `{"stats":[${'['.repeat(100)}${']'.repeat(100)}]}`],
    ['an empty body', ''],
  ])('%s: unknown, never a count', (_name, text) => {
    expect(scanInPieces(Buffer.from(text), [7]).ok).toBe(false);
  });

  test('a listener gauge name too long to judge makes the count unknown', () => {
    const name = `listener.${'x'.repeat(MAX_NAME_BYTES)}.downstream_cx_active`;
    const scan = scanInPieces(Buffer.from(JSON.stringify({ stats: [{ name, value: 1 }] })), [5000, 10000]);
    expect(scan).toMatchObject({ ok: false, error: expect.stringMatching(/longer than/) });
  });

  test('memory does not grow with the answer: a million elements keep only the listeners asked for', () => {
    const scanner = new ListenerGaugeScanner([], 10);
    scanner.push(Buffer.from('{"stats":['));
    const piece = Buffer.from(Array.from({ length: 1000 }, (_, i) => `{"name":"listener.l${i}.downstream_cx_active","value":1},`).join(''));
    for (let i = 0; i < 1000; i++) scanner.push(piece);
    scanner.push(Buffer.from('{"name":"x","value":0}]}'));
    const scan = scanner.finish();
    expect(scan).toMatchObject({ ok: true, total: 1_000_000, omitted: 999_990 });
    if (scan.ok) expect(scan.listeners).toHaveLength(10);
  });
});

describe('a count is a count (issue 20 item 6)', () => {
  const answer = (values: unknown[]) =>
    `{"stats":[${values.map((v, i) => `{"name":"listener.l${i}.downstream_cx_active","value":${String(v)}}`).join(',')}]}`;
  test.each([
    ['a negative gauge (5 and -10)', [5, -10]],
    ['a fraction', [0.5]],
    ['1e400 (Infinity as a double)', ['1e400']],
    ['-0', ['-0']],
    ['a duplicate that cancels the other out', [5, -5]],
  ])('%s: the reading is unknown, never a count', (_case, values) => {
    const scanner = new ListenerGaugeScanner([]);
    scanner.push(Buffer.from(answer(values)));
    expect(scanner.finish()).toEqual({ ok: false, error: expect.stringContaining('not a count') });
  });

  test('a listener given twice with counts sums to at least each of them: never below the real count', () => {
    const text = '{"stats":[{"name":"listener.a.downstream_cx_active","value":5},{"name":"listener.a.downstream_cx_active","value":0}]}';
    expect(countConnections(text, []).total).toBe(5);
  });
});
