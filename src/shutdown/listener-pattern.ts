/**
 * Matching `--exclude-listener` patterns (the drain contract's ListenerPattern) against listener names:
 * native string search where the pattern has no `.`, and a bounded comparison at each place otherwise,
 * so a match costs at most (name length × pattern length), whatever the pattern.
 */
import { readListenerPattern, type ListenerPattern } from '../drain-contract';

/** What the stats scanner asks of an exclusion (a RegExp has the same shape, for tests). */
export interface ListenerMatcher {
  test(name: string): boolean;
}

function matchesAt(units: readonly (string | null)[], name: string, at: number): boolean {
  for (let j = 0; j < units.length; j++) {
    const unit = units[j];
    if (unit !== null && name[at + j] !== unit) return false;
  }
  return true;
}

export function listenerMatcher(pattern: ListenerPattern): ListenerMatcher {
  const { anchoredStart, anchoredEnd, units } = pattern;
  const length = units.length;
  if (!units.includes(null)) {
    const literal = units.join('');
    if (anchoredStart && anchoredEnd) return { test: (name) => name === literal };
    if (anchoredStart) return { test: (name) => name.startsWith(literal) };
    if (anchoredEnd) return { test: (name) => name.endsWith(literal) };
    return { test: (name) => name.includes(literal) };
  }
  return {
    test(name) {
      if (name.length < length || (anchoredStart && anchoredEnd && name.length !== length)) return false;
      if (anchoredStart) return matchesAt(units, name, 0);
      if (anchoredEnd) return matchesAt(units, name, name.length - length);
      for (let at = 0; at + length <= name.length; at++) if (matchesAt(units, name, at)) return true;
      return false;
    },
  };
}

/** The matcher of a pattern the flag parser already accepted. */
export function compileListenerPattern(text: string): ListenerMatcher {
  const reading = readListenerPattern(text);
  if (!reading.ok) throw new Error(`--exclude-listener ${JSON.stringify(text)}: ${reading.problem}`);
  return listenerMatcher(reading.pattern);
}
