/**
 * Envoy's drain manager and `/drain_listeners` handler, release by release, for the admin simulator
 * (docs/design.md, "Envoy's admin API"). Read in envoyproxy/envoy `source/server/admin/listeners_handler.cc`
 * and `source/server/drain_manager_impl.cc` (1.40.0, and the releases before it as docs/design.md lists
 * them) and `changelogs/1.40.0.yaml` (PR #47042):
 *
 * - Query flags count by being present. `skip_exit` exists from 1.28 (ignored before); `inboundonly`
 *   stops only the listeners whose traffic direction is INBOUND, and from 1.34 a drain sequence has a
 *   direction too (an inbound-only drain covers only those listeners' connections).
 * - `graceful`: unless a drain covering that direction is already running (then a 200 no-op; before
 *   1.34 any running drain), a drain sequence starts: the connections of the covered listeners learn
 *   of it (1.40 pushes it to each of them, also to those accepted later; before, each asked the drain
 *   manager), and after `--drain-time-s` the listeners stop, unless `skip_exit`.
 * - Without `graceful`: before 1.40 the listeners stop at once and nothing is drained; `skip_exit` alone
 *   is a 400 `skip_exit requires graceful` (1.28 – 1.39). From 1.40 a drain sequence starts as well (the
 *   connections learn of it), the listeners stop at once unless `skip_exit`, and `skip_exit` alone is
 *   accepted, unless the runtime guard `envoy.reloadable_features.non_graceful_drain_notifies_connections`
 *   is off, which brings back the old behaviour, 400 included.
 * - Nothing here changes the server state: only `/healthcheck/fail` makes Envoy DRAINING.
 */
import { performance } from 'node:perf_hooks';
import { compareVersion, type SimulatedVersion } from './server-info';

/** A listener's `traffic_direction`, which `inboundonly` selects by. */
export type TrafficDirection = 'INBOUND' | 'OUTBOUND' | 'UNSPECIFIED';
/** The direction of a drain: Envoy's `Network::DrainDirection` (None < InboundOnly < All). */
export type DrainDirection = 'InboundOnly' | 'All';

export const SKIP_EXIT_SINCE: SimulatedVersion = { major: 1, minor: 28, patch: 0 };
/** The drain manager tracks a direction (`draining(direction)`) from this release. */
const DIRECTIONAL_DRAIN_SINCE: SimulatedVersion = { major: 1, minor: 34, patch: 0 };
/** A plain drain also drains the connections, and `skip_exit` needs no `graceful`, from this release (PR #47042). */
export const NON_GRACEFUL_DRAIN_NOTIFIES_SINCE: SimulatedVersion = { major: 1, minor: 40, patch: 0 };
export const NON_GRACEFUL_DRAIN_NOTIFIES_GUARD = 'envoy.reloadable_features.non_graceful_drain_notifies_connections';

/** Runtime guards the simulated Envoy was started with (`--runtime`/layered runtime); absent: the release's default. */
export type RuntimeGuards = Partial<Record<typeof NON_GRACEFUL_DRAIN_NOTIFIES_GUARD, boolean>>;

/** A drain sequence: from when, over which listeners, and whether its end stops them. */
export interface DrainSequence {
  /** Whose connections it drains: before 1.34 always every listener's. */
  direction: DrainDirection;
  /** Which listeners `inboundonly` names (what the sequence's end, or a plain drain, stops). */
  stops: DrainDirection;
  startedAt: number;
  /** Started by `/drain_listeners?graceful` (else by a plain drain, 1.40 on). */
  graceful: boolean;
  skipExit: boolean;
}

/** What a request to `/drain_listeners` does to the listeners, as the simulator applies it. */
export interface DrainListenersEffects {
  /** Listeners of this direction stop accepting now (`All`: every listener; `InboundOnly`: INBOUND ones). */
  stopNow?: DrainDirection;
}

const RANK: Record<DrainDirection, number> = { InboundOnly: 1, All: 2 };

export class SimulatedDrainManager {
  /** Every drain sequence started, oldest first. */
  readonly sequences: DrainSequence[] = [];
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly version: SimulatedVersion,
    private readonly drainTimeS: number,
    private readonly guards: RuntimeGuards,
    /** Listeners of this direction stop accepting (a drain sequence's end). */
    private readonly stopListeners: (direction: DrainDirection) => void,
    /** A drain sequence's --drain-time-s is over (whether or not its end stopped listeners). */
    private readonly sequenceEnded: () => void = () => undefined,
  ) {}

  private atLeast(since: SimulatedVersion): boolean {
    return compareVersion(this.version, since) >= 0;
  }

  private get nonGracefulDrainNotifies(): boolean {
    return this.atLeast(NON_GRACEFUL_DRAIN_NOTIFIES_SINCE) && this.guards[NON_GRACEFUL_DRAIN_NOTIFIES_GUARD] !== false;
  }

  /** `DrainManager::draining(direction)`: a running drain covers it (before 1.34: any running drain). */
  draining(direction: DrainDirection): boolean {
    if (!this.atLeast(DIRECTIONAL_DRAIN_SINCE)) return this.sequences.length > 0;
    return this.sequences.some((sequence) => RANK[direction] <= RANK[sequence.direction]);
  }

  /** Whether a drain sequence covers a listener of `direction`: its connections have learnt of it. */
  covers(listenerDirection: TrafficDirection): boolean {
    return this.sequences.some((sequence) => sequence.direction === 'All' || listenerDirection === 'INBOUND');
  }

  /**
   * `POST /drain_listeners?…`: the error body of a 400, or what the listeners must do now. A sequence's
   * end stops the listeners through `stopListeners` later.
   */
  handle(params: URLSearchParams): { error: string } | DrainListenersEffects {
    const graceful = params.has('graceful');
    const skipExit = this.atLeast(SKIP_EXIT_SINCE) && params.has('skip_exit');
    const stops: DrainDirection = params.has('inboundonly') ? 'InboundOnly' : 'All';
    const direction: DrainDirection = this.atLeast(DIRECTIONAL_DRAIN_SINCE) ? stops : 'All';
    const notifies = this.nonGracefulDrainNotifies;
    if (skipExit && !graceful && !notifies) return { error: 'skip_exit requires graceful\n' };
    if (graceful) {
      if (!this.draining(direction)) this.start({ direction, stops, startedAt: performance.now(), graceful, skipExit }, !skipExit);
      return {};
    }
    if (notifies) this.start({ direction, stops, startedAt: performance.now(), graceful, skipExit }, false);
    return skipExit ? {} : { stopNow: stops };
  }

  private start(sequence: DrainSequence, stopAtEnd: boolean): void {
    this.sequences.push(sequence);
    // The sequence runs for --drain-time-s whatever its flags; at its end Envoy's callback stops the
    // listeners unless skip_exit was given (ListenersHandler::handlerDrainListeners).
    const timer = setTimeout(() => {
      if (stopAtEnd) this.stopListeners(sequence.stops);
      this.sequenceEnded();
    }, this.drainTimeS * 1000);
    timer.unref();
    this.timers.push(timer);
  }

  stop(): void {
    for (const timer of this.timers) clearTimeout(timer);
  }
}
