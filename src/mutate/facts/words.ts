/** The words of a command line, as the readings of facts/ split them. */
import type { Container } from '../../k8s';

/** The last path segment: `/bin/contour` → `contour`. */
export function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/**
 * Whether `path` runs `program` (a name without `/`): `basename(path) === program`, without slicing a
 * copy of the name. The readings ask it of every word of every command line.
 */
export function isProgram(path: string, program: string): boolean {
  const start = path.length - program.length;
  return path.endsWith(program) && (start === 0 || path.charCodeAt(start - 1) === 47 /* '/' */);
}

export const WHITESPACE = /\s/;
const WHITESPACE_RUN = /\s+/;

/**
 * The words of the container's command line: its elements, each split at whitespace (one element may
 * hold several words). Most elements hold one, and are taken without a split.
 */
export function commandWords(container: Container): string[] {
  const words: string[] = [];
  for (const list of [container.command ?? [], container.args ?? []]) {
    for (const element of list) {
      if (!WHITESPACE.test(element)) {
        if (element !== '') words.push(element);
        continue;
      }
      for (const word of element.split(WHITESPACE_RUN)) if (word !== '') words.push(word);
    }
  }
  return words;
}
