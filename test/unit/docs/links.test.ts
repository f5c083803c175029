/**
 * The README, docs/ and the chart's README link to each other and to files in the repository: every
 * relative link must lead to a file that exists, and every `#anchor` to a heading of the page it names.
 * The chart's README is also shown where relative links do not work (Artifact Hub, `helm show
 * readme`), so it links to the repository's own files on GitHub: those are checked the same way.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { REPO_ROOT } from '../../support/repo';

const pages = [
  join(REPO_ROOT, 'README.md'),
  join(REPO_ROOT, 'charts/drainguard/README.md'),
  ...readdirSync(join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => join(REPO_ROOT, 'docs', f)),
];

/** This repository's files on GitHub, as the chart's README links them. */
const REPOSITORY_FILE = /^https:\/\/github\.com\/drainguard\/drainguard\/(?:blob|tree)\/main\/(.+)$/;

/** A link to this repository's file on GitHub as the path from the repository's root; other links as they are. */
export function localTarget(target: string): string {
  const file = REPOSITORY_FILE.exec(target);
  return file ? `/${file[1]}` : target;
}

/** GitHub's heading anchors: lower case, punctuation other than `-` and `_` dropped, spaces to `-`. */
export function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const base = headingAnchor(heading[1] as string);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** Inline links and images outside code fences and code spans: `[text](target)`. */
function linksOf(markdown: string): string[] {
  const links: string[] = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    if (fenced) continue;
    const withoutCode = line.replace(/`[^`]*`/g, '');
    for (const match of withoutCode.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) links.push(match[1] as string);
  }
  return links;
}

describe.each(pages.map((page) => [relative(REPO_ROOT, page), page]))('%s', (_name, page) => {
  const text = readFileSync(page, 'utf8');
  const local = linksOf(text)
    .map(localTarget)
    .filter((target) => !/^[a-z]+:/i.test(target));

  test('every relative link leads to an existing file, and every anchor to a heading', () => {
    const broken: string[] = [];
    for (const target of local) {
      const [path = '', anchor] = target.split('#');
      const file = path === '' ? page : path.startsWith('/') ? join(REPO_ROOT, decodeURIComponent(path)) : resolve(dirname(page), decodeURIComponent(path));
      if (!file.startsWith(REPO_ROOT) || !existsSync(file)) {
        broken.push(`${target}: no such file`);
        continue;
      }
      if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(readFileSync(file, 'utf8')).has(anchor)) {
        broken.push(`${target}: no heading with anchor #${anchor}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

test('the anchor rule follows GitHub for headings with code and punctuation', () => {
  expect(headingAnchor('`drainguard inject` — the webhook, offline')).toBe('drainguard-inject--the-webhook-offline');
  expect(headingAnchor('Failure policy: Ignore or Fail')).toBe('failure-policy-ignore-or-fail');
});

test('the README stays a newcomer page (under 12 KB)', () => {
  expect(readFileSync(join(REPO_ROOT, 'README.md')).length).toBeLessThan(12 * 1024);
});

test('a link to this repository on GitHub is checked as its file; other sites are not', () => {
  expect(localTarget('https://github.com/drainguard/drainguard/blob/main/docs/install.md#upgrade')).toBe('/docs/install.md#upgrade');
  expect(localTarget('https://github.com/other/drainguard/blob/main/docs/install.md')).toBe('https://github.com/other/drainguard/blob/main/docs/install.md');
});

test('links inside code spans are not links', () => {
  expect(linksOf('see [x](docs/missing.md) and `[y](z)`')).toEqual(['docs/missing.md']);
});
