/**
 * `--exclude-listener` patterns.
 * Part of the drain contract (index.ts): imports nothing outside this folder and nothing from Node.
 */
/**
 * `--exclude-listener`: which listener stat segments (`0.0.0.0_8002`, `[::]_8002`, `ingress_https`) the
 * drain does not count. Not a regular expression: a pattern is matched against every listener name on
 * every poll, inside Envoy's cgroup, and a regular expression's cost can grow without bound with the
 * name ("(a+)+$"). The syntax is the part of regular expressions that listener exclusions use — a
 * suffix (`_8002$`, what the webhook writes), a prefix (`^ingress_`), a whole name (`^stats$`) or a
 * part of one — and it means what the same text means as a regular expression:
 *
 *   `^` at the start and `$` at the end anchor; `.` is any one character; `\` makes the next
 *   punctuation character literal (`\.`, `\[`); every other character stands for itself.
 *
 * Refused: `* + ? | ( ) [ ] { }` unescaped, `^`/`$` elsewhere, other escapes (`\d`), control
 * characters, an empty pattern (it would exclude every listener), more than 256 characters. Several
 * patterns are several flags. Matching costs at most (name length × pattern length): linear in the name.
 */
export interface ListenerPattern {
  anchoredStart: boolean;
  anchoredEnd: boolean;
  /** One entry per character to match: the character, or null for `.` (any one). */
  units: readonly (string | null)[];
}

export const MAX_LISTENER_PATTERN_LENGTH = 256;
export const LISTENER_PATTERN_FORM =
  'a listener name pattern: an optional ^, characters (. is any one, \\ before punctuation makes it literal), an optional $; no * + ? | ( ) [ ] { }';
const PATTERN_SPECIAL = new Set(['*', '+', '?', '|', '(', ')', '[', ']', '{', '}']);
const ESCAPABLE = /^[!-/:-@[-`{-~]$/;

export type ListenerPatternReading = { ok: true; pattern: ListenerPattern } | { ok: false; problem: string };

/** Reads a `--exclude-listener` pattern: the one check the webhook and the program both apply. */
export function readListenerPattern(text: string): ListenerPatternReading {
  if (text.length === 0) return { ok: false, problem: 'an empty pattern would exclude every listener' };
  if (text.length > MAX_LISTENER_PATTERN_LENGTH) return { ok: false, problem: `longer than ${MAX_LISTENER_PATTERN_LENGTH} characters` };
  const anchoredStart = text.startsWith('^');
  let end = text.length;
  const units: (string | null)[] = [];
  let anchoredEnd = false;
  for (let i = anchoredStart ? 1 : 0; i < end; i++) {
    const c = text[i] as string;
    if (c === '\\') {
      const next = text[i + 1];
      if (next === undefined || !ESCAPABLE.test(next)) return { ok: false, problem: `\\${next ?? ''} at ${i}: only punctuation can be escaped` };
      units.push(next);
      i++;
    } else if (c === '$') {
      if (i !== text.length - 1) return { ok: false, problem: `$ at ${i}: only at the end` };
      anchoredEnd = true;
      end = i;
    } else if (c === '^') {
      return { ok: false, problem: `^ at ${i}: only at the start` };
    } else if (PATTERN_SPECIAL.has(c)) {
      return { ok: false, problem: `${c} at ${i} is not supported (repeat the flag for several names)` };
    } else if (c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f) {
      return { ok: false, problem: `a control character at ${i}` };
    } else {
      units.push(c === '.' ? null : c);
    }
  }
  if (units.length === 0 && !(anchoredStart && anchoredEnd)) return { ok: false, problem: 'an empty pattern would exclude every listener' };
  return { ok: true, pattern: { anchoredStart, anchoredEnd, units } };
}
