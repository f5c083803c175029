/**
 * The blocks of the docs that show a command's output, and how each is held to the command
 * (test/unit/docs/held-output.test.ts). A held block is a fenced block or a table right after an HTML
 * comment naming what produced it, so that a reader of the markdown sees the command too:
 *
 *   <!-- output of: drainguard inject -f envoy.yaml --diff
 *        file envoy.yaml: test/fixtures/contour/03-envoy-v1.33.6.yaml
 *        exit status: 1
 *        abridged: ⋮ stands for lines left out -->
 *
 * The first line says what the block is:
 * - `output of: COMMAND`, `stderr of: COMMAND`: the command's stdout (its stderr), line for line;
 * - `exit status table of: drainguard CMD --help`: a markdown table whose rows are the help's
 *   `Exit status` rows (code, meaning; the table's code spans are plain text in the help);
 * - `flags of: drainguard CMD --help`: a markdown table whose first cells are the help's flags
 *   (`-f, --filename FILE`), one row each, in its order;
 * - `not held: WHY`: an example no test can produce here yet, and why (the test lists them).
 * The lines after it: `file NAME: PATH` (the command runs in an empty directory holding the repository's
 * PATH as NAME), `exit status: N` (0 when not given), `abridged: …` (a line of the block that is only
 * `⋮` stands for one or more lines left out; every other line is the command's, in order), and
 * `server: drainguard serve --dev` (the command is a request to that server, see the test).
 */

export type HeldKind = 'output of' | 'stderr of' | 'exit status table of' | 'flags of' | 'not held';

const KINDS: readonly HeldKind[] = ['output of', 'stderr of', 'exit status table of', 'flags of', 'not held'];

/** The line that stands for lines left out of an abridged block. */
export const ELISION = '⋮';

export interface HeldBlock {
  page: string;
  /** 1-based line of the comment. */
  line: number;
  kind: HeldKind;
  /** The command, or for `not held` the reason. */
  what: string;
  /** NAME → repository path. */
  files: Map<string, string>;
  exitStatus: number;
  abridged: boolean;
  server: string | undefined;
  /** The block's lines: a fenced block's inside, or a table's rows. */
  lines: string[];
}

/** A comment that names no kind this module knows, or a directive it cannot read, is a mistake to report. */
export class HeldBlockError extends Error {}

function directive(page: string, line: number, comment: string, lines: string[]): HeldBlock {
  const [first = '', ...rest] = comment.split('\n').map((text) => text.trim());
  const kind = KINDS.find((candidate) => first.startsWith(`${candidate}:`));
  if (kind === undefined) throw new HeldBlockError(`${page}:${line}: a comment before a block must start with one of ${KINDS.map((k) => `"${k}:"`).join(', ')}`);
  const block: HeldBlock = { page, line, kind, what: first.slice(kind.length + 1).trim(), files: new Map(), exitStatus: 0, abridged: false, server: undefined, lines };
  for (const option of rest.filter((text) => text !== '')) {
    const file = /^file (\S+): (\S+)$/.exec(option);
    const status = /^exit status: (\d+)$/.exec(option);
    const server = /^server: (.+)$/.exec(option);
    if (file) block.files.set(file[1]!, file[2]!);
    else if (status) block.exitStatus = Number(status[1]);
    else if (server) block.server = server[1];
    else if (option.startsWith('abridged:') && option.includes(ELISION)) block.abridged = true;
    else throw new HeldBlockError(`${page}:${line}: cannot read "${option}" (file NAME: PATH, exit status: N, abridged: ${ELISION} …, server: COMMAND)`);
  }
  return block;
}

/** Every held block of a markdown page, in order. */
export function heldBlocks(page: string, markdown: string): HeldBlock[] {
  const lines = markdown.split('\n');
  const blocks: HeldBlock[] = [];
  let fenced = false;
  for (let index = 0; index < lines.length; index += 1) {
    const text = lines[index]!;
    if (text.startsWith('```')) fenced = !fenced;
    if (fenced || !text.startsWith('<!--')) continue;
    const start = index;
    while (!lines[index]!.includes('-->')) {
      index += 1;
      if (index >= lines.length) throw new HeldBlockError(`${page}:${start + 1}: comment never closed`);
    }
    const comment = lines
      .slice(start, index + 1)
      .join('\n')
      .replace(/^<!--/, '')
      .replace(/-->\s*$/, '');
    const next = lines[index + 1] ?? '';
    let body: string[];
    if (next.startsWith('```')) {
      const end = lines.findIndex((candidate, at) => at > index + 1 && candidate.startsWith('```'));
      if (end < 0) throw new HeldBlockError(`${page}:${index + 2}: fence never closed`);
      body = lines.slice(index + 2, end);
    } else if (next.startsWith('|')) {
      body = [];
      for (let at = index + 1; lines[at]?.startsWith('|'); at += 1) body.push(lines[at]!);
    } else {
      throw new HeldBlockError(`${page}:${start + 1}: the comment must be followed at once by a fenced block or a table`);
    }
    blocks.push(directive(page, start + 1, comment, body));
  }
  return blocks;
}

/** A command line's words, as sh splits them: spaces, and single quotes around a word with spaces. */
export function commandWords(command: string): string[] {
  const words: string[] = [];
  for (const match of command.matchAll(/'([^']*)'|(\S+)/g)) words.push(match[1] ?? match[2]!);
  return words;
}

/**
 * Why `actual` (the command's lines) is not what `shown` shows, or undefined when it is. Without
 * elision the lines must be equal. With it, the lines between two `⋮` lines must appear in `actual`
 * together and in order, after what came before; a block that does not begin (end) with `⋮` shows the
 * output's first (last) line.
 */
export function mismatch(shown: readonly string[], actual: readonly string[]): string | undefined {
  const runs: string[][] = [[]];
  for (const line of shown) {
    if (line.trim() === ELISION) runs.push([]);
    else runs.at(-1)!.push(line);
  }
  if (runs.length === 1) {
    return shown.join('\n') === actual.join('\n') ? undefined : 'the block is not the output';
  }
  let from = 0;
  for (const [index, run] of runs.entries()) {
    const first = index === 0;
    const last = index === runs.length - 1;
    if (run.length === 0) {
      if (last) continue;
      if (!first) return `an empty run between two ${ELISION} lines`;
      // A block that begins with the elision leaves out at least the output's first line.
      from = 1;
      continue;
    }
    const fits = (at: number) => run.every((line, offset) => actual[at + offset] === line);
    let at = -1;
    if (first) at = fits(0) ? 0 : -1;
    else if (last) at = actual.length - run.length >= from && fits(actual.length - run.length) ? actual.length - run.length : -1;
    else for (let candidate = from; candidate + run.length <= actual.length && at < 0; candidate += 1) if (fits(candidate)) at = candidate;
    if (at < 0) {
      const where = first ? 'at the start of the output' : last ? 'at the end of the output' : 'in the output, in order';
      return `these lines are not ${where}:\n${run.join('\n')}`;
    }
    // An elision stands for at least one line.
    from = at + run.length + 1;
  }
  return undefined;
}

/** The cells of a markdown table row, trimmed, with code spans as plain text. */
export function tableCells(row: string): string[] {
  return row
    .replace(/^\|/, '')
    .replace(/\|\s*$/, '')
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim().replace(/\\\|/g, '|').replace(/`/g, ''));
}

/** A table's rows without its header and its `---` line. */
export function tableBody(lines: readonly string[]): string[][] {
  return lines.slice(2).map(tableCells);
}
