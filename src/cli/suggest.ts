/**
 * "Did you mean …?" for a mistyped command or flag: the known name nearest by edit distance
 * (an insertion, a deletion, a substitution or a swap of neighbours per step), offered only when it is close
 * enough to be a typo. The cost is linear in the number of names: each comparison looks at no more
 * than MAX_COMPARED characters of what was typed, so a huge argument costs no more than a short one.
 */

const MAX_COMPARED = 64;

/** Edits allowed for a typo of a name this long: 1 up to 4 characters, then one more per 4. */
function allowedDistance(length: number): number {
  return Math.max(1, Math.floor(length / 4));
}

/**
 * The edit distance of `a` and `b` counting a swap of two neighbours as one edit (the optimal string
 * alignment distance: `injetc` is one edit from `inject`), or more than `limit`
 * when the lengths alone say it exceeds `limit`. Both texts are short (see MAX_COMPARED): no early exit needed.
 */
export function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, beforePrevious[j - 2]! + 1);
      current.push(value);
    }
    beforePrevious = previous;
    previous = current;
  }
  return previous[b.length]!;
}

/** The nearest of `names` to `typed`, or undefined when none is close enough to be a typo of it. */
export function nearest(typed: string, names: readonly string[]): string | undefined {
  // `-z` is one edit from every other one-letter flag: a guess, not a typo's correction.
  if (typed.length > MAX_COMPARED || typed.length <= 2) return undefined;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const name of names) {
    const limit = allowedDistance(Math.max(name.length, typed.length));
    const distance = editDistance(typed, name, limit);
    if (distance <= limit && distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  return best;
}

/** `; did you mean 'check'?` or nothing. */
export function didYouMean(typed: string, names: readonly string[]): string {
  const found = nearest(typed, names);
  return found === undefined ? '' : `; did you mean '${found}'?`;
}
