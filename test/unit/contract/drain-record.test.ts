/**
 * The drain record (src/drain-record.ts): what the drain program writes is what the reporter reads,
 * within the kubelet's 4 KiB, and anything else a pod could leave in its termination message is
 * unreadable rather than guessed at.
 */
import fc from 'fast-check';
import {
  DRAIN_RECORD_FORMAT,
  DRAIN_RECORD_MAX_BYTES,
  encodeDrainRecord,
  readDrainRecord,
  type FinishedRecord,
  type StartedRecord,
} from '../../../src/drain-record';

const started: StartedRecord = { state: 'started', version: '0.1.0', startedAt: '2026-12-01T21:00:00.000Z', deadlineMs: 290_000 };
const finished: FinishedRecord = {
  ...started,
  state: 'finished',
  reason: 'deadline',
  durationMs: 290_004,
  connectionsAtStart: 312,
  connectionsAtEnd: 17,
  openListeners: [{ name: 'ingress_https', connections: 17 }],
  openListenersOmitted: 0,
  healthcheckFailedAtMs: 12,
  envoyVersion: '1.31.2',
};

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

test('a started and a finished record are read back as written, the format key first', () => {
  for (const record of [started, finished, { ...finished, reason: 'signal' as const, signal: 'SIGTERM' }]) {
    const text = encodeDrainRecord(record);
    expect(text.startsWith(`{"format":"${DRAIN_RECORD_FORMAT}"`)).toBe(true);
    expect(readDrainRecord(text)).toEqual({ kind: 'record', record });
  }
});

test('unknown counts are null, a health check never failed is null', () => {
  const record: FinishedRecord = { ...finished, reason: 'admin-unreachable', connectionsAtStart: null, connectionsAtEnd: null, openListeners: [], healthcheckFailedAtMs: null };
  expect(readDrainRecord(encodeDrainRecord(record))).toEqual({ kind: 'record', record });
});

test('10,000 open listeners fit in 4 KiB: the busiest are kept, the rest counted as omitted', () => {
  const openListeners = Array.from({ length: 10_000 }, (_, i) => ({ name: `listener_${i}`, connections: i + 1 }));
  const text = encodeDrainRecord({ ...finished, openListeners });
  expect(bytes(text)).toBeLessThanOrEqual(DRAIN_RECORD_MAX_BYTES);
  const reading = readDrainRecord(text);
  if (reading.kind !== 'record' || reading.record.state !== 'finished') throw new Error(`not read: ${JSON.stringify(reading)}`);
  const kept = reading.record.openListeners;
  expect(kept.length).toBeGreaterThan(10);
  expect(kept[0]).toEqual({ name: 'listener_9999', connections: 10_000 });
  expect(kept.length + reading.record.openListenersOmitted).toBe(10_000);
});

test('any record fits its budget and reads back with every listener accounted for (property)', () => {
  const listener = fc.record({ name: fc.string({ minLength: 0, maxLength: 400, unit: 'binary' }), connections: fc.integer({ min: 1, max: 1_000_000 }) });
  fc.assert(
    fc.property(fc.array(listener, { maxLength: 300 }), fc.integer({ min: 600, max: DRAIN_RECORD_MAX_BYTES }), (openListeners, budget) => {
      const text = encodeDrainRecord({ ...finished, openListeners }, budget);
      expect(bytes(text)).toBeLessThanOrEqual(budget);
      const reading = readDrainRecord(text);
      if (reading.kind !== 'record' || reading.record.state !== 'finished') throw new Error(`not read: ${JSON.stringify(reading)}`);
      expect(reading.record.openListeners.length + reading.record.openListenersOmitted).toBe(openListeners.length);
    }),
  );
});

test('an empty message is no record; anything else that is not exactly a record is unreadable', () => {
  expect(readDrainRecord('')).toEqual({ kind: 'none' });
  expect(readDrainRecord(undefined)).toEqual({ kind: 'none' });
  const wire = JSON.parse(encodeDrainRecord(finished)) as Record<string, unknown>;
  const hostile: [string, string][] = [
    ['not JSON', 'panic: runtime error: invalid memory address'],
    ['4 KiB of garbage', 'x'.repeat(DRAIN_RECORD_MAX_BYTES + 1)],
    ['another format', JSON.stringify({ ...wire, format: 'drainguard.io/drain/v0' })],
    ['a JSON list', '[1,2]'],
    ['a forged reason', JSON.stringify({ ...wire, reason: 'drained-ok' })],
    ['a huge number', JSON.stringify(wire).replace('"connectionsAtEnd":17', '"connectionsAtEnd":1e400')],
    ['a count past any Envoy', JSON.stringify({ ...wire, connectionsAtEnd: 2 ** 53 })],
    ['a negative count', JSON.stringify({ ...wire, connectionsAtStart: -1 })],
    ['a fraction', JSON.stringify({ ...wire, durationMs: 0.5 })],
    ['a count as text', JSON.stringify({ ...wire, connectionsAtEnd: '17' })],
    ['a missing field', JSON.stringify({ ...wire, envoyVersion: undefined })],
    ['a listener name with a quote', JSON.stringify({ ...wire, openListeners: [{ name: 'a"b', connections: 1 }] })],
    ['a signal without reason signal', JSON.stringify({ ...wire, signal: 'SIGTERM' })],
    ['a date that is no date', JSON.stringify({ ...wire, startedAt: '2026-13-45T99:99:99.999Z' })],
    ['an inherited-looking key', JSON.stringify({ ...wire, version: { toString: 1 } })],
  ];
  for (const [what, message] of hostile) {
    const reading = readDrainRecord(message);
    expect({ what, kind: reading.kind }).toEqual({ what, kind: 'unreadable' });
  }
});

test('keys a newer program adds are ignored, the known ones still checked', () => {
  const wire = JSON.parse(encodeDrainRecord(finished)) as Record<string, unknown>;
  expect(readDrainRecord(JSON.stringify({ ...wire, newField: [1, 2, 3] }))).toEqual({ kind: 'record', record: finished });
});

describe('UDP sessions in the record', () => {
  const withUdp: FinishedRecord = {
    ...finished,
    udpSessionsAtStart: 40,
    udpSessionsAtEnd: 3,
    openUdpProxies: [{ name: 'udproute/default/coredns/rule/0', sessions: 3 }],
    openUdpProxiesOmitted: 0,
  };

  test('read back as written; a record without them (a program that did not count them) reads without them', () => {
    expect(readDrainRecord(encodeDrainRecord(withUdp))).toEqual({ kind: 'record', record: withUdp });
    const reading = readDrainRecord(encodeDrainRecord(finished));
    expect(reading).toEqual({ kind: 'record', record: finished });
    if (reading.kind === 'record') expect('udpSessionsAtEnd' in reading.record).toBe(false);
  });

  test('all four fields or none; each within its bounds', () => {
    const wire = JSON.parse(encodeDrainRecord(withUdp)) as Record<string, unknown>;
    const hostile: [string, Record<string, unknown>][] = [
      ['sessions without the proxies', { ...wire, openUdpProxies: undefined, openUdpProxiesOmitted: undefined }],
      ['a negative session count', { ...wire, udpSessionsAtEnd: -1 }],
      ['sessions as text', { ...wire, udpSessionsAtStart: '40' }],
      ['a proxy without sessions', { ...wire, openUdpProxies: [{ name: 'dns' }] }],
      ['a proxy name with a backslash', { ...wire, openUdpProxies: [{ name: 'a\\b', sessions: 1 }] }],
    ];
    for (const [what, record] of hostile) expect({ what, kind: readDrainRecord(JSON.stringify(record)).kind }).toEqual({ what, kind: 'unreadable' });
  });

  test('listeners and UDP proxies share the 4 KiB: the fewest connections or sessions go first, whichever kind', () => {
    const openListeners = Array.from({ length: 3000 }, (_, i) => ({ name: `listener_${i}`, connections: 2 * i + 1 }));
    const openUdpProxies = Array.from({ length: 3000 }, (_, i) => ({ name: `udp_${i}`, sessions: 2 * i + 2 }));
    const text = encodeDrainRecord({ ...withUdp, openListeners, openUdpProxies });
    expect(bytes(text)).toBeLessThanOrEqual(DRAIN_RECORD_MAX_BYTES);
    const reading = readDrainRecord(text);
    if (reading.kind !== 'record' || reading.record.state !== 'finished') throw new Error(`not read: ${JSON.stringify(reading)}`);
    const { openListeners: keptListeners, openUdpProxies: keptUdp = [] } = reading.record;
    expect(keptUdp[0]).toEqual({ name: 'udp_2999', sessions: 6000 });
    expect(keptListeners[0]).toEqual({ name: 'listener_2999', connections: 5999 });
    // Interleaved by count: neither kind crowds the other out.
    expect(Math.abs(keptListeners.length - keptUdp.length)).toBeLessThanOrEqual(1);
    const smallestKept = Math.min(...keptListeners.map((l) => l.connections), ...keptUdp.map((u) => u.sessions));
    expect(smallestKept).toBeGreaterThan(6000 - 2 * (keptListeners.length + keptUdp.length));
    expect(keptListeners.length + reading.record.openListenersOmitted).toBe(3000);
    expect(keptUdp.length + (reading.record.openUdpProxiesOmitted ?? 0)).toBe(3000);
  });
});
