/** Slots and the waiting line, shared between sources (src/server/admission-limiter.ts). */
import { AdmissionLimiter, type ReleaseSlot } from '../../../src/server/admission-limiter';

/** Acquires for `source` and records, by label, when it was granted (a slot) or refused. */
function recorder(limiter: AdmissionLimiter) {
  const events: string[] = [];
  const releases = new Map<string, ReleaseSlot>();
  const ask = (source: string, label: string) =>
    void limiter.acquire(source).then((release) => {
      events.push(`${label}:${release ? 'granted' : 'refused'}`);
      if (release) releases.set(label, release);
    });
  const release = (label: string) => releases.get(label)!();
  return { events, ask, release };
}
const settle = () => new Promise((resolve) => setImmediate(resolve));

test('slots are granted up to the concurrency, then requests wait, then the line full refuses', async () => {
  const limiter = new AdmissionLimiter(2, 1);
  const { events, ask } = recorder(limiter);
  for (const label of ['a1', 'a2', 'a3', 'a4']) ask('a', label);
  await settle();
  expect(events).toEqual(['a1:granted', 'a2:granted', 'a4:refused']);
  expect([limiter.active, limiter.queued]).toEqual([2, 1]);
});

test('a freed slot goes to the waiting source holding the fewest slots', async () => {
  const limiter = new AdmissionLimiter(2, 4);
  const { events, ask, release } = recorder(limiter);
  ask('crowd', 'c1');
  ask('crowd', 'c2');
  ask('crowd', 'c3');
  ask('api', 'api1');
  await settle();
  release('c1');
  await settle();
  // The crowd still holds c2; the API server holds nothing: api1 goes first although c3 waited longer.
  expect(events.slice(2)).toEqual(['api1:granted']);
  release('c2');
  await settle();
  expect(events.slice(3)).toEqual(['c3:granted']);
});

test('with the line full, a source with fewer places takes the newest place of the source with most', async () => {
  const limiter = new AdmissionLimiter(1, 3);
  const { events, ask, release } = recorder(limiter);
  for (const label of ['c0', 'c1', 'c2', 'c3']) ask('crowd', label);
  ask('api', 'api1');
  await settle();
  expect(events).toEqual(['c0:granted', 'c3:refused']);
  // The crowd (2 places) and the API server (1): another API request would hold 2, not more: c2 goes.
  ask('api', 'api2');
  await settle();
  expect(events.slice(2)).toEqual(['c2:refused']);
  // Now each holds 1 or 2: a third API request would hold 3 against the crowd's 1: refused.
  ask('api', 'api3');
  await settle();
  expect(events.slice(3)).toEqual(['api3:refused']);
  // Neither holds a slot once c0 is done: the one that waited longest goes first.
  release('c0');
  await settle();
  expect(events.slice(4)).toEqual(['c1:granted']);
  expect([limiter.active, limiter.queued]).toEqual([1, 2]);
});

test('with no waiting line, a request that finds every slot taken is refused, whoever holds them', async () => {
  const limiter = new AdmissionLimiter(1, 0);
  const { events, ask } = recorder(limiter);
  ask('crowd', 'c1');
  ask('api', 'api1');
  await settle();
  expect(events).toEqual(['c1:granted', 'api1:refused']);
});

test('releasing a slot twice frees it once', async () => {
  const limiter = new AdmissionLimiter(1, 1);
  const { events, ask, release } = recorder(limiter);
  ask('a', 'a1');
  ask('a', 'a2');
  ask('a', 'a3');
  await settle();
  release('a1');
  release('a1');
  await settle();
  expect(events).toEqual(['a1:granted', 'a3:refused', 'a2:granted']);
  expect([limiter.active, limiter.queued]).toEqual([1, 0]);
});
