/** The connection limit's policy: who goes when the table is full (src/server/connection-table.ts). */
import { ConnectionTable, type ConnectionState, type TrackedConnection } from '../../../src/server/connection-table';

interface Conn extends TrackedConnection {
  name: string;
}
const conn = (source: string, name: string): Conn => ({ source, name, state: 'idle' });

function tableWith(capacity: number, entries: [string, string, ConnectionState][]): { table: ConnectionTable<Conn>; byName: Map<string, Conn> } {
  const table = new ConnectionTable<Conn>(capacity);
  const byName = new Map<string, Conn>();
  for (const [source, name, state] of entries) {
    const connection = conn(source, name);
    expect(table.admit(connection)).toEqual({ admitted: true });
    table.setState(connection, state);
    byName.set(name, connection);
  }
  return { table, byName };
}

const evictedName = (table: ConnectionTable<Conn>, source: string) => {
  const result = table.admit(conn(source, 'new'));
  return result.admitted ? (result.evicted?.name ?? 'none') : 'refused';
};

test('below the limit every connection is let in, whatever its source holds', () => {
  const { table } = tableWith(3, [['a', 'a1', 'idle'], ['a', 'a2', 'idle']]);
  expect(evictedName(table, 'a')).toBe('none');
  expect(table.size).toBe(3);
  expect(table.held('a')).toBe(3);
});

test('at the limit, a source holding fewer takes the longest idle connection of the source holding most', () => {
  const { table, byName } = tableWith(4, [['a', 'a1', 'idle'], ['a', 'a2', 'idle'], ['a', 'a3', 'idle'], ['b', 'b1', 'idle']]);
  // a2 became idle again after a request: a1 has been idle longest, then a3.
  table.setState(byName.get('a2')!, 'answering');
  table.setState(byName.get('a2')!, 'idle');
  expect(evictedName(table, 'c')).toBe('a1');
  expect(table.held('a')).toBe(2);
  expect(table.size).toBe(4);
});

test('idle connections go before ones receiving a body; answering ones never', () => {
  const { table } = tableWith(4, [['a', 'a1', 'receiving'], ['a', 'a2', 'answering'], ['a', 'a3', 'idle'], ['b', 'b1', 'answering']]);
  const admitAnswering = (source: string) => {
    const connection = conn(source, `${source}-new`);
    const result = table.admit(connection);
    table.setState(connection, 'answering');
    return result.admitted ? (result.evicted?.name ?? 'none') : 'refused';
  };
  // a3 is younger than a1, but idle.
  expect(admitAnswering('c')).toBe('a3');
  expect(admitAnswering('d')).toBe('a1');
  // Every connection has a complete request under way: nothing may go.
  expect(admitAnswering('e')).toBe('refused');
  expect([table.count('answering'), table.size]).toEqual([4, 4]);
});

test('a connection is taken only from a source holding at least as many as the newcomer’s will', () => {
  const { table } = tableWith(4, [['a', 'a1', 'idle'], ['a', 'a2', 'idle'], ['b', 'b1', 'idle'], ['b', 'b2', 'idle']]);
  // b would hold 3 against a's 2: refused.
  expect(evictedName(table, 'b')).toBe('refused');
  // c would hold 1: a (2, the first of the largest) gives one up.
  expect(evictedName(table, 'c')).toBe('a1');
  // Many sources of one connection each still make room for a new one.
  const { table: spread } = tableWith(3, [['x', 'x1', 'idle'], ['y', 'y1', 'idle'], ['z', 'z1', 'idle']]);
  expect(evictedName(spread, 'w')).toBe('x1');
});

test('a source never displaces its own connections: at the limit its newcomer is refused', () => {
  const { table } = tableWith(3, [['a', 'a1', 'idle'], ['a', 'a2', 'idle'], ['a', 'a3', 'idle']]);
  expect(evictedName(table, 'a')).toBe('refused');
  expect(table.held('a')).toBe(3);
});

test('under contention sources converge to equal shares', () => {
  const table = new ConnectionTable<Conn>(10);
  for (let i = 0; i < 10; i += 1) table.admit(conn('crowd', `c${i}`));
  for (let i = 0; i < 20; i += 1) {
    table.admit(conn('api', `api${i}`));
    table.admit(conn('crowd', `again${i}`));
  }
  expect([table.held('api'), table.held('crowd')]).toEqual([5, 5]);
});

test('counts by state follow every change, and removing twice is harmless', () => {
  const { table, byName } = tableWith(5, [['a', 'a1', 'idle'], ['a', 'a2', 'receiving'], ['b', 'b1', 'answering']]);
  expect([table.count('idle'), table.count('receiving'), table.count('answering')]).toEqual([1, 1, 1]);
  table.remove(byName.get('b1')!);
  table.remove(byName.get('b1')!);
  table.setState(byName.get('b1')!, 'idle');
  expect([table.size, table.held('b'), table.count('answering'), table.count('idle')]).toEqual([2, 0, 0, 1]);
});
