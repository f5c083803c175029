/**
 * Loading @kubernetes/client-node, two ways.
 *
 * The whole client (`loadKubernetesClient`): its typed API classes, Watch, ListWatch. `drainguard check`
 * uses it, a command that runs for seconds. @kubernetes/client-node is ESM-only and this package is
 * CommonJS, so it is loaded with `import()`.
 *
 * Its KubeConfig alone (`loadKubeConfigClass`), for the long-running processes (`serve` in self mode,
 * `report`), which make their few kinds of call themselves (./client.ts). Importing the package loads
 * all of it: its 900 modules are 25 MB of source (the generated API classes and models, mostly
 * comments), which V8 keeps in the heap for as long as the process lives, plus the zone memory their
 * parse took and never gave back: about 55 MiB resident, before the process has done anything. The
 * build bundles KubeConfig with only the modules it reaches (src/kube-api/vendor-bundle.mjs,
 * dist/vendor/kube-config.cjs, about 0.3 MB); this loads that bundle when it is there (dist/, the
 * image), and the package otherwise (the single executables of `npm run release`, which bundle the
 * CLI themselves).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import type * as k8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { KubeApiClient } from './client';

type ClientModule = typeof import('@kubernetes/client-node', { with: { 'resolution-mode': 'import' } });

let clientModule: Promise<ClientModule> | undefined;

/** The whole client library. */
export function loadKubernetesClient(): Promise<ClientModule> {
  clientModule ??= import('@kubernetes/client-node');
  return clientModule;
}

/** Where the build writes the KubeConfig bundle, relative to dist/. */
export const KUBE_CONFIG_BUNDLE = join('vendor', 'kube-config.cjs');

/**
 * dist/vendor/kube-config.cjs beside this module's folder. When this module runs as TypeScript source
 * (ts-jest), the bundle of the same tree's dist/: jest's globalSetup builds dist/ before any test.
 */
function kubeConfigBundle(): string | undefined {
  const beside = join(__dirname, '..', KUBE_CONFIG_BUNDLE);
  if (existsSync(beside)) return beside;
  const built = resolve(__dirname, '..', '..', 'dist', KUBE_CONFIG_BUNDLE);
  return __filename.endsWith('.ts') && existsSync(built) ? built : undefined;
}

let kubeConfigClass: Promise<typeof k8s.KubeConfig> | undefined;

/** client-node's KubeConfig class, without the rest of the client when the build's bundle is there. */
export function loadKubeConfigClass(): Promise<typeof k8s.KubeConfig> {
  kubeConfigClass ??= (async () => {
    const bundle = kubeConfigBundle();
    // createRequire rather than require: a bundler (the release's esbuild) leaves the call alone.
    if (bundle !== undefined) return (createRequire(__filename)(bundle) as { KubeConfig: typeof k8s.KubeConfig }).KubeConfig;
    return (await loadKubernetesClient()).KubeConfig;
  })();
  return kubeConfigClass;
}

export interface KubeConnectionOptions {
  /** A kubeconfig file; in-cluster service-account configuration when absent. */
  kubeconfigPath?: string;
  /** A ready client (tests record and hold its requests). Wins over `kubeconfigPath`. */
  client?: KubeApiClient;
}

/** The client of `options`: the one given, or one of the KubeConfig they name. */
export async function kubeApiClientFor(options: KubeConnectionOptions, timeoutMs: number): Promise<KubeApiClient> {
  return options.client ?? new KubeApiClient(await kubeConfigFor(options), timeoutMs);
}

export async function kubeConfigFor(options: KubeConnectionOptions): Promise<k8s.KubeConfig> {
  const KubeConfig = await loadKubeConfigClass();
  const config = new KubeConfig();
  if (options.kubeconfigPath) config.loadFromFile(options.kubeconfigPath);
  else config.loadFromCluster();
  return config;
}

/**
 * Request options for client-node's object API that abort each call after `timeoutMs`, so an API
 * server that accepts connections but never answers ends a call with a TimeoutError instead of a hang.
 *
 * With `reuseConnectionsOf`, every call also goes through one connection pool made from that
 * KubeConfig: client-node builds a new undici Agent for each request (KubeConfig.createDispatcher), so
 * each call would otherwise open, and leave behind, its own TLS connection. The credentials are still
 * applied to each request as client-node applies them (a rotated token is read again); only the pool
 * of connections, with its TLS settings, is shared.
 */
export async function requestTimeoutOptions(timeoutMs: number, reuseConnectionsOf?: k8s.KubeConfig) {
  const client = await loadKubernetesClient();
  let dispatcher: unknown;
  if (reuseConnectionsOf) {
    const probe = new client.RequestContext(reuseConnectionsOf.getCurrentCluster()?.server ?? 'https://kubernetes.default.svc', client.HttpMethod.GET);
    await reuseConnectionsOf.applySecurityAuthentication(probe);
    dispatcher = probe.getDispatcher();
  }
  return {
    middleware: [
      {
        pre: (context: k8s.RequestContext) => {
          context.setSignal(AbortSignal.timeout(timeoutMs));
          if (dispatcher !== undefined) context.setDispatcher(dispatcher as Parameters<k8s.RequestContext['setDispatcher']>[0]);
          return new client.Observable(Promise.resolve(context));
        },
        post: (context: k8s.ResponseContext) => new client.Observable(Promise.resolve(context)),
      },
    ],
    middlewareMergeStrategy: 'append' as const,
  };
}
