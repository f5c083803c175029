import fc from 'fast-check';
import { applyUnifiedDiff } from './apply-unified-diff';
import { unifiedDiff, unifiedDiffOfParts } from '../../../src/cli/diff';
import { gnuLineEdits } from '../../support/gnu-diff';

const XY = { file: 'x', oldHeader: 'original', newHeader: 'injected' };
const AB = { file: 'a', oldHeader: 'original', newHeader: 'injected' };
const ON = { file: 'o', oldHeader: 'original', newHeader: 'injected' };
const lines = (count: number, from = 1) => Array.from({ length: count }, (_, i) => `line ${i + from}\n`).join('');

describe('unifiedDiff', () => {
  test('equal texts give nothing', () => {
    expect(unifiedDiff('a\nb\n', 'a\nb\n', XY)).toBe('');
  });

  test('one changed line, with headers and 3 lines of context each side', () => {
    const before = lines(10);
    const after = before.replace('line 5\n', 'line five\n');
    expect(unifiedDiff(before, after, { file: 'a.yaml', oldHeader: 'original', newHeader: 'injected' })).toBe(
      [
        '--- a.yaml\toriginal',
        '+++ a.yaml\tinjected',
        '@@ -2,7 +2,7 @@',
        ' line 2',
        ' line 3',
        ' line 4',
        '-line 5',
        '+line five',
        ' line 6',
        ' line 7',
        ' line 8',
        '',
      ].join('\n'),
    );
  });

  test('changes far apart give separate hunks; close ones share a hunk', () => {
    const before = lines(30);
    const far = before.replace('line 3\n', 'x\n').replace('line 25\n', 'y\n');
    expect(unifiedDiff(before, far, AB).match(/^@@/gm)).toHaveLength(2);
    const close = before.replace('line 3\n', 'x\n').replace('line 9\n', 'y\n');
    expect(unifiedDiff(before, close, AB).match(/^@@/gm)).toHaveLength(1);
  });

  test('pure insertion and deletion use diff(1) line numbers (an empty range names the line before it)', () => {
    expect(unifiedDiff('', 'a\n', XY)).toBe('--- x\toriginal\n+++ x\tinjected\n@@ -0,0 +1,1 @@\n+a\n');
    expect(unifiedDiff('a\n', '', XY)).toBe('--- x\toriginal\n+++ x\tinjected\n@@ -1,1 +0,0 @@\n-a\n');
  });

  test('a missing final newline is shown', () => {
    expect(unifiedDiff('a\n', 'a', XY)).toBe('--- x\toriginal\n+++ x\tinjected\n@@ -1,1 +1,1 @@\n-a\n+a\n\\ No newline at end of file\n');
  });

  test.each([
    ['insert in the middle', lines(20), lines(10) + 'new\n' + lines(10, 11)],
    ['delete and insert around', lines(20), lines(5, 2) + 'a\nb\n' + lines(8, 10) + lines(2, 19) + 'tail\n'],
    ['remove a block, add a block', lines(40), lines(10) + lines(15, 21) + 'x\ny\nz\n' + lines(5, 36)],
    ['unrelated texts', 'a\nb\nc\n', 'd\ne\n'],
    ['no final newline', 'a\nb', 'a\nc'],
  ])('applying the diff to the old text gives the new text: %s', (_name, before, after) => {
    expect(applyUnifiedDiff(before, unifiedDiff(before, after, XY))).toBe(after);
  });

  test('as few lines changed as GNU diff --minimal changes, on texts with many repeated lines', () => {
    const text = fc.array(fc.constantFrom('a\n', 'b\n', 'c\n'), { maxLength: 25 }).map((parts) => parts.join(''));
    fc.assert(
      fc.property(text, text, (before, after) => {
        const shown = unifiedDiff(before, after, XY).split('\n').filter((line) => /^[-+][abc]?$/.test(line) && line !== '').length;
        const minimal = gnuLineEdits(before, after).filter((edit) => edit !== 'equal').length;
        expect(shown).toBe(minimal);
      }),
      { numRuns: 100 },
    );
  });

  test('property: the diff of any two line lists applies back to the new text', () => {
    const text = fc.array(fc.constantFrom('a\n', 'b\n', 'c\n', 'd\n', 'e'), { maxLength: 30 }).map((parts) => parts.join(''));
    fc.assert(
      fc.property(text, text, (before, after) => {
        expect(applyUnifiedDiff(before, unifiedDiff(before, after, XY))).toBe(after);
      }),
    );
  });
});

describe('unifiedDiffOfParts', () => {
  test('matches lines within each part only, numbering lines across the whole text', () => {
    const parts = [
      { before: 'a\nb\n', after: 'a\nb\n' },
      { before: 'x\ny\n', after: 'x\nY\n' },
    ];
    expect(unifiedDiffOfParts(parts, ON)).toBe('--- o\toriginal\n+++ o\tinjected\n@@ -1,4 +1,4 @@\n a\n b\n x\n-y\n+Y\n');
  });

  test('a part ending mid-line is joined with the next, so lines stay whole', () => {
    const parts = [
      { before: 'a\nb', after: 'a\nc' },
      { before: ' tail\n', after: ' tail\n' },
    ];
    const diff = unifiedDiffOfParts(parts, ON);
    expect(diff).toBe('--- o\toriginal\n+++ o\tinjected\n@@ -1,2 +1,2 @@\n a\n-b tail\n+c tail\n');
    expect(applyUnifiedDiff('a\nb tail\n', diff)).toBe('a\nc tail\n');
  });

  test('equal parts give nothing', () => {
    expect(unifiedDiffOfParts([{ before: 'a\n', after: 'a\n' }], ON)).toBe('');
  });
});

test('a huge edit distance still gives a correct diff (removed and re-added), quickly', () => {
  const before = Array.from({ length: 6000 }, (_, i) => `old ${i}\n`).join('');
  const after = Array.from({ length: 6000 }, (_, i) => `new ${i}\n`).join('');
  expect(applyUnifiedDiff(before, unifiedDiff(before, after, XY))).toBe(after);
});
