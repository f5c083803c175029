/**
 * Line edits as GNU diff (diffutils, the reference for `diff -u`) computes them: an oracle for tests
 * that is independent of the diff `drainguard inject --diff` uses (jsdiff).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type LineEdit = 'equal' | 'delete' | 'insert';

const KIND: Readonly<Record<string, LineEdit>> = { '=': 'equal', '-': 'delete', '+': 'insert' };

/** One edit per line of `before` and `after`, in order: what `diff` keeps, removes and adds. */
export function gnuLineEdits(before: string, after: string): LineEdit[] {
  const directory = mkdtempSync(join(tmpdir(), 'drainguard-gnu-diff-'));
  try {
    const [oldFile, newFile] = [join(directory, 'old'), join(directory, 'new')];
    writeFileSync(oldFile, before);
    writeFileSync(newFile, after);
    // Each line becomes one character saying what diff does with it; the lines' text is not printed.
    const result = spawnSync(
      'diff',
      ['--minimal', '--unchanged-line-format==', '--old-line-format=-', '--new-line-format=+', oldFile, newFile],
      { encoding: 'utf8' },
    );
    if (result.status !== 0 && result.status !== 1) throw new Error(`diff failed (${result.status}): ${result.stderr}`);
    return [...result.stdout].map((mark) => {
      const kind = KIND[mark];
      if (kind === undefined) throw new Error(`unexpected diff output ${JSON.stringify(mark)}`);
      return kind;
    });
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** Lines with their '\n', as diff(1) counts them (a last line without one is a line too). */
export function splitLines(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}
