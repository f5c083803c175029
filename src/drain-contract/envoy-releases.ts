/**
 * Which admin calls the drain makes on which Envoy release, and why: one table that the drain program
 * follows (it reads the release from `/server_info` when the drain starts) and that `inject --explain`
 * and docs/envoy-shutdown.md show. Part of the drain contract (index.ts): imports nothing outside this
 * folder and nothing from Node.
 *
 * The facts, from Envoy's admin handler (`source/server/admin/listeners_handler.cc`) and drain manager
 * (`source/server/drain_manager_impl.cc`) at each release, and the 1.40.0 changelog:
 * - `skip_exit` exists from 1.28: a graceful drain then never stops the listeners. Before 1.28 a
 *   graceful drain stops them `--drain-time-s` after it starts, and `skip_exit` is ignored.
 * - `graceful&inboundonly` drains only inbound listeners from 1.34 (the drain manager tracks a direction).
 * - 1.40 (PR #47042): a plain `/drain_listeners` also drains the connections (before, it only stopped
 *   the listeners), `skip_exit` is accepted without `graceful`, and a drain is pushed to every
 *   connection when it starts (`use_connection_event_drain`). Both changes sit behind runtime guards:
 *   with `envoy.reloadable_features.non_graceful_drain_notifies_connections` off, `skip_exit` alone is a
 *   400 again. `graceful&skip_exit` means the same with either setting, so it stays the call.
 */

/** An Envoy release, as `/server_info` reports it. */
export interface EnvoyRelease {
  major: number;
  minor: number;
  patch: number;
}

/** A query flag of `POST /drain_listeners`. */
export type DrainListenersFlag = 'graceful' | 'skip_exit' | 'inboundonly';

/** The releases that get the same calls, and why those calls. */
export interface DrainCallEra {
  /** The era's first release (`[major, minor]`); none: every release before the next era, and an unknown one. */
  since?: readonly [number, number];
  /** `1.28 to 1.33`, `1.40 and later`. */
  releases: string;
  /** The flags of `POST /drain_listeners` (without `inboundonly`, which `--inbound-only` adds where `directional`). */
  flags: readonly DrainListenersFlag[];
  /** `--inbound-only` adds `inboundonly` (a graceful drain of inbound listeners only). */
  directional: boolean;
  /** Why these calls on these releases. */
  why: string;
}

/** Oldest first; each era holds from its `since` up to the next one's. */
export const DRAIN_CALL_ERAS: readonly DrainCallEra[] = [
  {
    releases: 'before 1.28, or unknown',
    flags: ['graceful'],
    directional: false,
    why: 'no skip_exit (an unknown release is not risked with it): Envoy stops its listeners --drain-time-s after the drain starts',
  },
  {
    since: [1, 28],
    releases: '1.28 to 1.33',
    flags: ['graceful', 'skip_exit'],
    directional: false,
    why: 'skip_exit: the listeners keep accepting until SIGTERM, so a client sent here late still gets an answer; no inboundonly yet',
  },
  {
    since: [1, 34],
    releases: '1.34 to 1.39',
    flags: ['graceful', 'skip_exit'],
    directional: true,
    why: 'as 1.28, and --inbound-only drains the inbound listeners only; a plain drain_listeners would only stop the listeners, draining nothing',
  },
  {
    since: [1, 40],
    releases: '1.40 and later',
    flags: ['graceful', 'skip_exit'],
    directional: true,
    why:
      'the same call: 1.40 pushes the drain to every connection; skip_exit alone is accepted only while the ' +
      'non_graceful_drain_notifies_connections runtime guard is on, graceful&skip_exit with it on or off',
  },
];

function atLeast(release: EnvoyRelease, since: readonly [number, number]): boolean {
  return release.major > since[0] || (release.major === since[0] && release.minor >= since[1]);
}

/** The era of `release`; an unknown release gets the oldest one's calls. */
export function drainCallEra(release: EnvoyRelease | undefined): DrainCallEra {
  let found = DRAIN_CALL_ERAS[0] as DrainCallEra;
  if (release === undefined) return found;
  for (const era of DRAIN_CALL_ERAS) if (era.since !== undefined && atLeast(release, era.since)) found = era;
  return found;
}

/** The flags of the drain's `POST /drain_listeners` on `release`, in the order sent. */
export function drainListenersFlags(release: EnvoyRelease | undefined, inboundOnly: boolean): DrainListenersFlag[] {
  const era = drainCallEra(release);
  return inboundOnly && era.directional ? [...era.flags, 'inboundonly'] : [...era.flags];
}

/**
 * With a drain delay, the listeners' drain starts with the delay on the releases that keep them
 * accepting (skip_exit): connected clients are told to reconnect elsewhere while the load balancer
 * still sends new ones. Without skip_exit it waits for the failed health check, as it stops the
 * listeners when Envoy's drain time ends.
 */
export function drainsDuringDelay(release: EnvoyRelease | undefined): boolean {
  return drainCallEra(release).flags.includes('skip_exit');
}

/** The drain's POSTs on `release`, in order (`inject --explain`, docs/envoy-shutdown.md). */
export function drainPosts(release: EnvoyRelease | undefined, options: { inboundOnly: boolean; drainDelay: boolean }): string[] {
  const drainListeners = `/drain_listeners?${drainListenersFlags(release, options.inboundOnly).join('&')}`;
  if (options.drainDelay && drainsDuringDelay(release)) return [drainListeners, '/healthcheck/fail', drainListeners];
  return ['/healthcheck/fail', drainListeners];
}
