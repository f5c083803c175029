/**
 * THIRD-PARTY-NOTICES.txt: the licences of what a single executable carries, which their licences ask
 * to travel with it: Node (its LICENSE covers V8, OpenSSL, ICU, libuv and the rest it bundles) and
 * every npm package esbuild put into the bundle, each with its name, version, declared licence and the
 * licence file it ships.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface PackageJson {
  name: string;
  version: string;
  license?: string;
}

const LICENSE_FILE = /^(licen[cs]e|copying|notice)(\.(md|txt|markdown|mit|apache))?$/i;

function section(title: string, body: string): string {
  return `${'='.repeat(78)}\n${title}\n${'='.repeat(78)}\n\n${body.trimEnd()}\n\n`;
}

/** The notices text for Node `nodeVersion` (its LICENSE at `nodeLicense`) and the bundled packages. */
export function thirdPartyNotices(options: { nodeVersion: string; nodeLicense: string; packageDirs: readonly string[] }): string {
  const packages = options.packageDirs.map((dir) => {
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as PackageJson;
    const files = readdirSync(dir)
      .filter((name) => LICENSE_FILE.test(name))
      .sort();
    const texts = files.map((name) => readFileSync(join(dir, name), 'utf8'));
    const body =
      texts.length > 0 ? texts.join('\n\n') : `The package ships no licence file; its package.json declares: ${manifest.license ?? 'no licence'}.`;
    return { id: `${manifest.name}@${manifest.version}`, license: manifest.license ?? 'not declared', body };
  });
  // A package installed twice (two versions) is listed once per version.
  const unique = [...new Map(packages.map((entry) => [entry.id, entry])).values()].sort((a, b) => a.id.localeCompare(b.id));
  return (
    'drainguard single executable: third-party software it contains, and their licences.\n\n' +
    section(`Node.js ${options.nodeVersion}`, readFileSync(options.nodeLicense, 'utf8')) +
    unique.map((entry) => section(`${entry.id} (${entry.license})`, entry.body)).join('')
  );
}
