#!/usr/bin/env node
/**
 * `npm run lint:dockerfile`: dockerfilelint, with `FROM --platform=…` and a named `FROM scratch` understood.
 *
 * dockerfilelint 1.8 reads a `--platform=…` flag as the image name and reports "Base Image Missing Tag"
 * for every cross-building stage; and it exempts `FROM scratch` (the empty base, which has no tag) only
 * when nothing follows it, not a named stage `FROM scratch AS name`. This runs it on a copy of the
 * Dockerfile in which each FROM's --platform flag is removed and a scratch stage's name too (nothing
 * else changes, line numbers stay), so its rules judge the image itself. Which platform each stage uses,
 * and what the scratch stage holds, are project rules (test/support/dockerfile-lint.ts).
 *
 *   node test/support/dockerfilelint.mjs [--json] [FILE]      (FILE defaults to Dockerfile)
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const args = process.argv.slice(2);
const json = args.includes('--json');
const file = resolve(args.find((a) => a !== '--json') ?? 'Dockerfile');

const text = readFileSync(file, 'utf8')
  .replace(/^(\s*FROM\s+)--platform=\S+\s+/gim, '$1')
  .replace(/^(\s*FROM\s+scratch)\s+AS\s+\S+[ \t]*$/gim, '$1');
const dir = mkdtempSync(join(tmpdir(), 'dockerfilelint-'));
const copy = join(dir, basename(file));
try {
  writeFileSync(copy, text);
  const result = spawnSync(join(root, 'node_modules/.bin/dockerfilelint'), [...(json ? ['--json'] : []), copy], { encoding: 'utf8' });
  if (result.error) throw result.error;
  // Report the real file, not the copy.
  process.stdout.write(result.stdout.split(copy).join(file));
  process.stderr.write(result.stderr);
  process.exitCode = result.status ?? 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
