/**
 * The decision batch: reviews that arrive in the same turn are decided together, in arrival order, before
 * any of their answers is handed back; one failure fails one review; a spent time budget leaves the rest
 * for the next turn. Turns are Node's own (setImmediate), the clock is injected.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { DecisionBatch } from '../../../src/server/decision-batch';


/** A batch whose decisions are logged; each one advances the injected clock by `costMs`. */
function loggedBatch(options: { budgetMs: number; costMs?: number; fail?: string }) {
  const log: string[] = [];
  let clock = 0;
  const batch = new DecisionBatch<string, string>({
    budgetMs: options.budgetMs,
    now: () => clock,
    decideOne: (name) => {
      log.push(`decide ${name}`);
      clock += options.costMs ?? 0;
      if (name === options.fail) throw new Error(`no decision for ${name}`);
      return name;
    },
  });
  const submit = (name: string) =>
    batch.decide(name).then(
      (decided) => log.push(`answer ${decided}`),
      (error: Error) => log.push(`failed ${error.message}`),
    );
  return { log, submit };
}

test('reviews of one turn are decided in arrival order, and only then answered', async () => {
  const { log, submit } = loggedBatch({ budgetMs: 1000 });
  const done = ['a', 'b', 'c'].map(submit);
  expect(log).toEqual([]); // nothing is decided in the caller's own turn
  await Promise.all(done);
  expect(log).toEqual(['decide a', 'decide b', 'decide c', 'answer a', 'answer b', 'answer c']);
});

test('a decision that throws fails its own review and no other', async () => {
  const { log, submit } = loggedBatch({ budgetMs: 1000, fail: 'b' });
  await Promise.all(['a', 'b', 'c'].map(submit));
  expect(log).toEqual(['decide a', 'decide b', 'decide c', 'answer a', 'failed no decision for b', 'answer c']);
});

test('once a batch has spent its budget, the reviews left are decided in a later turn, after the answers so far', async () => {
  const { log, submit } = loggedBatch({ budgetMs: 5, costMs: 3 });
  await Promise.all(['a', 'b', 'c', 'd', 'e'].map(submit));
  // 3 ms each: the budget of 5 ms is spent after the second decision.
  expect(log).toEqual([
    'decide a', 'decide b', 'answer a', 'answer b',
    'decide c', 'decide d', 'answer c', 'answer d',
    'decide e', 'answer e',
  ]);
});

test('a review submitted while a batch is being answered goes in the next batch', async () => {
  const { log, submit } = loggedBatch({ budgetMs: 1000 });
  const later: Promise<unknown>[] = [];
  const first = submit('a').then(() => later.push(submit('b')));
  await first;
  await Promise.all(later);
  expect(log).toEqual(['decide a', 'answer a', 'decide b', 'answer b']);
});

test('after a batch drains, the next review starts a fresh batch in the next turn', async () => {
  const { log, submit } = loggedBatch({ budgetMs: 1000 });
  await submit('a');
  await nextTurn();
  await Promise.all([submit('b'), submit('c')]);
  expect(log).toEqual(['decide a', 'answer a', 'decide b', 'decide c', 'answer b', 'answer c']);
});
