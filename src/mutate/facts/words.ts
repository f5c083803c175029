/** The words of a command line, as the readings of facts/ split them. */
import type { Container } from '../../k8s';

/** The last path segment: `/bin/contour` → `contour`. */
export function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

const WHITESPACE = /\s/;
export const WHITESPACE_RUN = /\s+/;

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
