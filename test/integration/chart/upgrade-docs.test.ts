/**
 * Every `helm upgrade` the docs give keeps the user's values and takes the new chart's defaults:
 * `--reset-then-reuse-values` (Helm 3.14.0, helm/helm#9653), which the real helm the tests run knows.
 * Plain `--reuse-values` would keep the old chart's defaults too, and `--set` alone drops earlier values.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { helm } from '../../support/helm';
import { REPO_ROOT } from '../../support/repo';

const pages = ['README.md', ...readdirSync(join(REPO_ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

/** Each `helm upgrade` command in the page, its continuation lines joined. */
function upgrades(page: string): string[] {
  const text = readFileSync(join(REPO_ROOT, page), 'utf8').replace(/\\\n\s*/g, ' ');
  return text.split('\n').filter((line) => /^\s*helm upgrade /.test(line));
}

test('the docs do upgrade the chart somewhere (so the check below reads commands)', () => {
  expect(pages.flatMap(upgrades).length).toBeGreaterThanOrEqual(3);
});

test.each(pages)('%s: every helm upgrade uses --reset-then-reuse-values', (page) => {
  for (const command of upgrades(page)) {
    expect(command).toContain(' --reset-then-reuse-values');
    expect(command).not.toMatch(/ --reuse-values\b/);
  }
});

test('the real helm has the flag', () => {
  const help = helm(['upgrade', '--help']);
  expect(help.status).toBe(0);
  expect(help.stdout).toContain('--reset-then-reuse-values');
});
