/**
 * dist/vendor/kube-config.cjs: @kubernetes/client-node's KubeConfig and only the modules it reaches, for
 * the long-running processes (./load.ts says why). Written by `npm run build` (src/build-dist.mjs runs
 * this module's build from dist/ once tsc has compiled it). Nothing run by drainguard loads it; it
 * imports esbuild, a devDependency.
 *
 * esbuild bundles `export { KubeConfig } from '@kubernetes/client-node'`, keeping what that one class
 * uses and dropping the rest, with two rules of this build's own:
 *  - client-node's modules are declared free of side effects (its package.json does not say so, and
 *    esbuild must then keep every module the index names: the generated APIs, 900 model classes, the
 *    exec, cp and port-forward helpers). Their top level only defines classes and constants, which an
 *    unused import does not need; the one exception, polyfill.js, which sets the `File` global, is kept.
 *  - undici, which KubeConfig only reaches for the generated API classes' requests (its Agent and
 *    ProxyAgent, and fetch), is loaded from node_modules when first used instead of being bundled:
 *    it is 1 MB of CommonJS that would otherwise be evaluated at start and never run.
 * Licence comments stay at the end of the file.
 */
import { build, type Plugin } from 'esbuild';

/**
 * A bundle for Node 24 as CommonJS (what `require` and Node's single executables load), whitespace and
 * syntax minified, names kept so that a stack trace still names functions. The release's CLI bundle
 * (release/cli-executable.ts) is made with the same.
 */
export const NODE_BUNDLE_OPTIONS = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node24',
  minifyWhitespace: true,
  minifySyntax: true,
  keepNames: true,
} as const;

/** The undici exports client-node's modules import (config.js: Agent, ProxyAgent; the fetch users). */
const LAZY_UNDICI = `
let undici;
const load = () => (undici ??= require('undici'));
export class Agent { constructor(...args) { return new (load().Agent)(...args); } }
export class ProxyAgent { constructor(...args) { return new (load().ProxyAgent)(...args); } }
export function fetch(...args) { return load().fetch(...args); }
`;

const trimClientNode: Plugin = {
  name: 'drainguard-kube-config',
  setup(esbuild) {
    // client-node's imports of undici get the lazy module; its own require of undici stays a require.
    esbuild.onResolve({ filter: /^undici$/ }, (args) =>
      args.namespace === 'drainguard' ? { path: 'undici', external: true } : { path: 'lazy-undici', namespace: 'drainguard' },
    );
    esbuild.onLoad({ filter: /^lazy-undici$/, namespace: 'drainguard' }, () => ({ contents: LAZY_UNDICI, loader: 'js', resolveDir: process.cwd() }));
    esbuild.onResolve({ filter: /.*/ }, async (args) => {
      if (args.kind === 'entry-point' || args.pluginData === 'resolved' || args.namespace === 'drainguard') return undefined;
      const resolved = await esbuild.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: 'resolved' });
      if (resolved.errors.length > 0 || resolved.external) return undefined;
      const ours = /[/\\]@kubernetes[/\\]client-node[/\\]dist[/\\]/.test(resolved.path) && !/[/\\]polyfill\.js$/.test(resolved.path);
      return ours ? { path: resolved.path, sideEffects: false } : undefined;
    });
  },
};

/** Writes the bundle to `outfile`; `root` is the repository (where node_modules is). */
export async function bundleKubeConfig(root: string, outfile: string): Promise<void> {
  const result = await build({
    ...NODE_BUNDLE_OPTIONS,
    stdin: { contents: "export { KubeConfig } from '@kubernetes/client-node';", resolveDir: root, loader: 'js', sourcefile: 'kube-config-entry.js' },
    absWorkingDir: root,
    legalComments: 'eof',
    outfile,
    plugins: [trimClientNode],
    logLevel: 'silent',
  });
  if (result.warnings.length > 0) throw new Error(`esbuild warned while bundling KubeConfig:\n${result.warnings.map((w) => w.text).join('\n')}`);
}
