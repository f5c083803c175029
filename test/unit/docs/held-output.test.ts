/**
 * The docs show what the commands really print: every block held by an `<!-- output of: … -->`
 * comment (test/support/held-blocks.ts says how to write one) in README.md, docs/*.md and the chart's
 * README is compared with what the built CLI (dist/cli/main.js), run as a process, prints, as
 * test/integration/chart/upgrade-docs.test.ts holds the docs' helm upgrade lines to the real helm.
 * Each command runs in an empty directory holding the files its comment names, under the names the
 * page uses, with no kubeconfig, so nothing but the comment decides the output; nothing is normalised.
 *
 * Examples that need a cluster are marked `not held:` with the reason; the last test lists them.
 * And so that an example cannot escape by lacking its comment: every fenced block that starts with
 * `$ drainguard`, and every table under an "exit codes" heading, must be held or marked.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { assertDistBuilt, CLI_MAIN } from '../../support/build';
import { commandWords, ELISION, heldBlocks, HeldBlockError, mismatch, tableBody, type HeldBlock } from '../../support/held-blocks';
import { NODE, REPO_ROOT } from '../../support/repo';
import { httpsRequest } from '../../integration/server/webhook-test-kit';

const PAGES = ['README.md', 'charts/drainguard/README.md', ...readdirSync(join(REPO_ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

const blocks = PAGES.flatMap((page) => heldBlocks(page, readFileSync(join(REPO_ROOT, page), 'utf8')));
const held = blocks.filter((block) => block.kind !== 'not held');
const where = (block: HeldBlock) => `${block.page}:${block.line}`;

const directories: string[] = [];
beforeAll(() => assertDistBuilt());
afterAll(() => {
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

/** An empty directory holding the block's files under the names its page uses. */
function workDirectory(block: HeldBlock): string {
  const directory = mkdtempSync(join(tmpdir(), 'drainguard-held-'));
  directories.push(directory);
  for (const [name, path] of block.files) copyFileSync(join(REPO_ROOT, path), join(directory, name));
  return directory;
}

/** `drainguard ARGS`, the words after the program's name. */
function drainguardArgs(block: HeldBlock, command: string): string[] {
  const [program, ...args] = commandWords(command);
  if (program !== 'drainguard') throw new HeldBlockError(`${where(block)}: the command must run drainguard, not ${program}`);
  return args;
}

/** The built CLI as a process, as a user runs it in that directory. */
function run(block: HeldBlock): { status: number | null; stdout: string; stderr: string } {
  const cwd = workDirectory(block);
  const result = spawnSync(NODE, [CLI_MAIN, ...drainguardArgs(block, block.what)], { cwd, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: cwd } });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const outputLines = (text: string) => text.replace(/\n$/, '').split('\n');

/** The block's lines without a first line `$ COMMAND`, which must then be the comment's command. */
function shownOutput(block: HeldBlock): string[] {
  const [first, ...rest] = block.lines;
  if (first?.startsWith('$ ')) {
    expect({ at: where(block), command: first.slice(2) }).toEqual({ at: where(block), command: block.what });
    return rest;
  }
  return block.lines;
}

function expectShown(block: HeldBlock, actualText: string): void {
  const shown = shownOutput(block);
  // An elision only where the comment says the block is abridged, and the reverse.
  expect({ at: where(block), elides: shown.some((line) => line.trim() === ELISION) }).toEqual({ at: where(block), elides: block.abridged });
  const problem = mismatch(shown, outputLines(actualText));
  // On a mismatch, what the command printed, to paste into the page.
  expect({ at: where(block), problem, output: problem === undefined ? undefined : actualText }).toEqual({ at: where(block), problem: undefined, output: undefined });
}

/** The `  0  meaning` rows of a usage text's `Exit status` section. */
function helpExitRows(usage: string): string[][] {
  const section = usage.slice(usage.indexOf('Exit status'));
  return [...section.matchAll(/^ {2}(\d) {2}(.+)$/gm)].map((match) => [match[1]!, match[2]!]);
}

/** The flag column of a usage text: `-f, --filename FILE`, `--config FILE`. */
function helpFlags(usage: string): string[] {
  return [...usage.matchAll(/^ {2}((?:-\w, | {4})--[\w-]+(?: [A-Z]+)?)(?: {3,}|$)/gm)].map((match) => match[1]!.trim());
}

/**
 * `curl … --data-binary @FILE https://127.0.0.1:8443/mutate | jq -r .response.patch | base64 -d | jq -c '.[]'`
 * against the `server:` command: the server runs as a process in the block's directory (on a free port,
 * its own dev certificates), the request is made as curl makes it, and the patch is printed as that
 * pipeline prints it: one operation per line, as compact JSON.
 */
const PATCH_PIPELINE = /^curl -s --cacert certs\/ca\.crt -H 'Content-Type: application\/json' --data-binary @(\S+) https:\/\/127\.0\.0\.1:8443\/mutate \| jq -r \.response\.patch \| base64 -d \| jq -c '\.\[\]'$/;

async function patchFromServer(block: HeldBlock): Promise<string> {
  const request = PATCH_PIPELINE.exec(block.what);
  if (!request) throw new HeldBlockError(`${where(block)}: a server block's command must be ${PATCH_PIPELINE.source}`);
  const cwd = workDirectory(block);
  const server = spawn(NODE, [CLI_MAIN, ...drainguardArgs(block, block.server!), '--port', '0'], { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '', HOME: cwd } });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      createInterface({ input: server.stdout! }).on('line', (line) => {
        const entry = JSON.parse(line) as { msg?: string; port?: number };
        if (entry.msg === 'listening') resolve(entry.port!);
      });
      server.once('exit', (code) => reject(new Error(`${block.server} exited with ${code} before listening`)));
    });
    const body = readFileSync(join(REPO_ROOT, request[1]!), 'utf8');
    const answer = await httpsRequest({ port, body, ca: readFileSync(join(cwd, 'certs/ca.crt'), 'utf8') });
    expect(answer.status).toBe(200);
    const patch = (answer.json as { response: { patch: string } }).response.patch;
    const operations = JSON.parse(Buffer.from(patch, 'base64').toString('utf8')) as unknown[];
    return `${operations.map((operation) => JSON.stringify(operation)).join('\n')}\n`;
  } finally {
    server.kill('SIGKILL');
    if (server.exitCode === null && server.signalCode === null) await once(server, 'exit');
  }
}

test('the pages hold examples of every kind (so the tests below read commands)', () => {
  const kinds = new Set(held.map((block) => block.kind));
  expect([...kinds].sort()).toEqual(['exit status table of', 'flags of', 'output of', 'stderr of']);
  expect(held.filter((block) => block.server !== undefined).length).toBeGreaterThan(0);
});

describe.each(held.map((block) => [`${where(block)}: ${block.kind} ${block.what}`, block] as const))('%s', (_title, block) => {
  if (block.kind === 'output of' || block.kind === 'stderr of') {
    test('is what the command prints', async () => {
      if (block.server !== undefined) {
        expectShown(block, await patchFromServer(block));
        return;
      }
      const result = run(block);
      expect({ at: where(block), status: result.status }).toEqual({ at: where(block), status: block.exitStatus });
      expectShown(block, block.kind === 'output of' ? result.stdout : result.stderr);
    });
  }

  if (block.kind === 'exit status table of' || block.kind === 'flags of') {
    test('is the table the command\'s --help prints', () => {
      expect(block.what).toMatch(/ --help$/);
      const help = run(block);
      expect(help.status).toBe(0);
      const rows = tableBody(block.lines);
      if (block.kind === 'exit status table of') {
        expect(rows).toEqual(helpExitRows(help.stdout));
      } else {
        expect(rows.map((cells) => cells[0])).toEqual(helpFlags(help.stdout).filter((flag) => flag !== '-h, --help'));
      }
    });
  }
});

describe('no example escapes its comment', () => {
  const pages = PAGES.map((page) => [page, readFileSync(join(REPO_ROOT, page), 'utf8').split('\n')] as const);
  const heldAt = (page: string) => new Set(blocks.filter((block) => block.page === page).map((block) => block.line));

  /** The 1-based line of the comment right before the block starting at `index`, if any. */
  function commentBefore(lines: readonly string[], index: number): number | undefined {
    if (!lines[index - 1]?.trimEnd().endsWith('-->')) return undefined;
    let at = index - 1;
    while (at > 0 && !lines[at]!.startsWith('<!--')) at -= 1;
    return at + 1;
  }

  test.each(pages)('%s: every fenced block starting with `$ drainguard` is held or marked not held', (page, lines) => {
    const unmarked: string[] = [];
    let fenced = false;
    for (const [index, line] of lines.entries()) {
      if (!line.startsWith('```')) continue;
      fenced = !fenced;
      if (!fenced || !lines[index + 1]?.startsWith('$ drainguard')) continue;
      const comment = commentBefore(lines, index);
      if (comment === undefined || !heldAt(page).has(comment)) unmarked.push(`${page}:${index + 1}: ${lines[index + 1]}`);
    }
    expect(unmarked).toEqual([]);
  });

  test.each(pages)('%s: every table under an "exit codes" heading is held', (page, lines) => {
    const unheld: string[] = [];
    let heading = '';
    for (const [index, line] of lines.entries()) {
      if (/^#+ /.test(line)) heading = line;
      if (!/exit codes/i.test(heading) || !line.startsWith('|') || lines[index - 1]?.startsWith('|')) continue;
      const comment = commentBefore(lines, index);
      const block = blocks.find((candidate) => candidate.page === page && candidate.line === comment);
      if (block?.kind !== 'exit status table of') unheld.push(`${page}:${index + 1}: under ${heading}`);
    }
    expect(unheld).toEqual([]);
  });
});

describe('the comparison itself', () => {
  const output = ['a', 'b', 'c', 'd', 'e'];

  test('without elision a block is the whole output, no more and no less', () => {
    expect(mismatch(output, output)).toBeUndefined();
    expect(mismatch(output.slice(0, 4), output)).toBeDefined();
    expect(mismatch([...output, 'f'], output)).toBeDefined();
  });

  test('an elision stands for at least one line; the lines between elisions are together and in order', () => {
    expect(mismatch(['a', ELISION, 'c', 'd', ELISION], output)).toBeUndefined();
    expect(mismatch([ELISION, 'e'], output)).toBeUndefined();
    expect(mismatch(['a', ELISION, 'b', 'c', 'd', 'e'], output)).toBeDefined();
    expect(mismatch(['a', ELISION, 'd', 'c', ELISION], output)).toBeDefined();
    expect(mismatch(['a', ELISION, 'c', 'e'], output)).toBeDefined();
    expect(mismatch(['b', ELISION], output)).toBeDefined();
    expect(mismatch([ELISION, 'd'], output)).toBeDefined();
    expect(mismatch([ELISION, 'a', ELISION], output)).toBeDefined();
  });

  test('a comment must name what the block is, and each of its lines must be read', () => {
    expect(() => heldBlocks('x.md', '<!-- a note -->\n```\nx\n```\n')).toThrow(HeldBlockError);
    expect(() => heldBlocks('x.md', '<!-- output of: drainguard version --client\n     exit: 0 -->\n```\nx\n```\n')).toThrow(/cannot read "exit: 0"/);
    expect(heldBlocks('x.md', '<!-- output of: drainguard version --client -->\n```text\ndrainguard 0.1.0\n```\n')).toMatchObject([
      { line: 1, kind: 'output of', what: 'drainguard version --client', exitStatus: 0, abridged: false, lines: ['drainguard 0.1.0'] },
    ]);
  });
});

test('an example no test can produce here yet says why', () => {
  for (const block of blocks.filter((candidate) => candidate.kind === 'not held')) expect(`${where(block)}: ${block.what}`).toMatch(/: \S.{10,}$/);
});
