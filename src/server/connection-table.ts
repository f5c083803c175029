/**
 * Which connections the server keeps when it has as many as it may hold: the policy alone, on plain
 * values (no sockets, no timers), so every rule is tested directly. ./connection-guard applies it to the
 * server's real connections.
 *
 * A connection is in one of three states: `idle` (no request under way: just opened, in its TLS
 * handshake, or between two requests), `receiving` (a request's head arrived, its body is still coming)
 * or `answering` (its request is complete and being decided or answered). A connection is counted
 * against its source, the client's address.
 *
 * At the limit, a new connection is let in only if another one can go, and it is never one with a
 * complete request under way. In order:
 *  1. an idle connection of the source holding the most connections, provided it holds at least as
 *     many as the newcomer's source will once the newcomer is in, the one idle the longest first;
 *  2. likewise a connection of such a source that is still receiving a request, the oldest first;
 *  3. none: the newcomer is refused.
 * So under contention each source keeps at most a fair share (sources converge to equal numbers), one
 * source alone may use the whole limit, and a source that holds the limit in connections that send
 * nothing loses them to any other source that connects. A source never displaces its own connections:
 * its newcomers at the limit are refused before their TLS handshake, so one that reconnects as fast as
 * it can costs the server an accept and a close each time, not a handshake (the API server's client
 * dials only when none of its idle connections is free, so it would gain nothing from it). The idle connection that goes is the one the
 * API server's client is least likely to reuse: Go's transport hands out its most recently used idle
 * connection first.
 */

export type ConnectionState = 'idle' | 'receiving' | 'answering';

export interface TrackedConnection {
  readonly source: string;
  state: ConnectionState;
}

interface SourceHold<C> {
  count: number;
  /** In the order they became idle / started receiving: the first is the longest in that state. */
  idle: Set<C>;
  receiving: Set<C>;
}

export type Admission<C> = { admitted: true; evicted?: C } | { admitted: false };

export class ConnectionTable<C extends TrackedConnection> {
  private readonly sources = new Map<string, SourceHold<C>>();
  private readonly members = new Set<C>();
  private readonly byState: Record<ConnectionState, number> = { idle: 0, receiving: 0, answering: 0 };

  constructor(readonly capacity: number) {}

  get size(): number {
    return this.members.size;
  }

  /** How many connections are in `state`. */
  count(state: ConnectionState): number {
    return this.byState[state];
  }

  /** How many connections `source` holds. */
  held(source: string): number {
    return this.sources.get(source)?.count ?? 0;
  }

  /**
   * Lets `connection` (in state `idle`) in, or refuses it. When another must go to make room, it is
   * removed from the table and returned: the caller closes it.
   */
  admit(connection: C): Admission<C> {
    let evicted: C | undefined;
    if (this.members.size >= this.capacity) {
      evicted = this.victimFor(connection.source);
      if (evicted === undefined) return { admitted: false };
      this.remove(evicted);
    }
    const hold = this.holdOf(connection.source);
    hold.count += 1;
    this.members.add(connection);
    connection.state = 'idle';
    this.byState.idle += 1;
    hold.idle.add(connection);
    return evicted === undefined ? { admitted: true } : { admitted: true, evicted };
  }

  /** `connection` is now in `state` (a no-op when it already is, or is no longer in the table). */
  setState(connection: C, state: ConnectionState): void {
    const hold = this.sources.get(connection.source);
    if (hold === undefined || connection.state === state || !this.members.has(connection)) return;
    this.leaveState(hold, connection);
    connection.state = state;
    this.byState[state] += 1;
    if (state !== 'answering') hold[state].add(connection);
  }

  /** `connection` closed (or was evicted); removing it twice is harmless. */
  remove(connection: C): void {
    const hold = this.sources.get(connection.source);
    if (hold === undefined || !this.members.delete(connection)) return;
    this.leaveState(hold, connection);
    hold.count -= 1;
    if (hold.count === 0) this.sources.delete(connection.source);
  }

  private victimFor(source: string): C | undefined {
    const after = this.held(source) + 1;
    for (const state of ['idle', 'receiving'] as const) {
      let largest: SourceHold<C> | undefined;
      for (const [other, hold] of this.sources) {
        if (other === source || hold.count < after || hold[state].size === 0) continue;
        if (largest === undefined || hold.count > largest.count) largest = hold;
      }
      if (largest) return first(largest[state]);
    }
    return undefined;
  }

  private holdOf(source: string): SourceHold<C> {
    let hold = this.sources.get(source);
    if (hold === undefined) {
      hold = { count: 0, idle: new Set(), receiving: new Set() };
      this.sources.set(source, hold);
    }
    return hold;
  }

  private leaveState(hold: SourceHold<C>, connection: C): void {
    this.byState[connection.state] -= 1;
    if (connection.state !== 'answering') hold[connection.state].delete(connection);
  }
}

function first<T>(set: Set<T>): T | undefined {
  for (const value of set) return value;
  return undefined;
}
