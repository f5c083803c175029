/**
 * The user's cluster credentials, found the way kubectl finds them: `--kubeconfig`, else every file in
 * `$KUBECONFIG` (merged, the first file winning), else `~/.kube/config`, else the pod's service
 * account when running inside a cluster. `--context` picks a context; without it the file's
 * current-context. Loading itself is @kubernetes/client-node's, so exec plugins, client certificates
 * and tokens work as they do for kubectl.
 */
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import type * as k8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { loadKubernetesClient } from '../kube-api/load';
import { readAdminAddress } from '../drain-contract';

/** Where a service account's token is mounted in every pod (`rest.InClusterConfig` reads the same). */
const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** A kubeconfig that cannot be used: a missing or malformed file, an unknown context. */
export class KubeconfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KubeconfigError';
  }
}

export interface KubeconfigRequest {
  /** `--kubeconfig`: this file only, like kubectl. */
  kubeconfigPath?: string;
  /** `--context`. */
  context?: string;
  env: NodeJS.ProcessEnv;
  /** Undefined when the user has none: then there is no ~/.kube/config to read. */
  homeDirectory: string | undefined;
}

export interface LoadedKubeconfig {
  kubeConfig: k8s.KubeConfig;
  contextName: string;
  /** The API server's URL, for messages. */
  server: string;
  /** The context's namespace, `default` when it names none (kubectl's default for `-n`). */
  namespace: string;
  /** Where the configuration came from, for the report's header. */
  source: string;
}

export async function loadKubeconfig(request: KubeconfigRequest): Promise<LoadedKubeconfig> {
  const { KubeConfig } = await loadKubernetesClient();
  const kubeConfig = new KubeConfig();
  const source = locate(request);
  if (source.kind === 'in-cluster') kubeConfig.loadFromCluster();
  else {
    const [first, ...rest] = source.paths;
    loadFile(kubeConfig, first as string);
    for (const path of rest) {
      const next = new KubeConfig();
      loadFile(next, path);
      mergeFirstWins(kubeConfig, next);
    }
  }

  const contextName = request.context ?? kubeConfig.getCurrentContext();
  const names = kubeConfig.getContexts().map((context) => context.name);
  if (!contextName) {
    throw new KubeconfigError(`${source.label} sets no current-context; pass --context (contexts: ${names.join(', ') || 'none'})`);
  }
  const context = kubeConfig.getContextObject(contextName);
  if (!context) {
    throw new KubeconfigError(`context ${JSON.stringify(contextName)} does not exist in ${source.label} (contexts: ${names.join(', ') || 'none'})`);
  }
  kubeConfig.setCurrentContext(contextName);
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new KubeconfigError(`context ${JSON.stringify(contextName)} names cluster ${JSON.stringify(context.cluster)}, which ${source.label} does not define`);
  if (cluster.server.startsWith('http:')) allowLoopbackHttp(kubeConfig, cluster, contextName);
  return { kubeConfig, contextName, server: cluster.server, namespace: context.namespace?.trim() || 'default', source: source.label };
}

/**
 * A plain-HTTP API server, as `kubectl proxy` serves one (`http://127.0.0.1:8001`). client-node refuses
 * to send a request to an `http:` server unless the cluster entry sets `insecure-skip-tls-verify`
 * (its dispatcher throws "HTTP protocol is not allowed when skipTLSVerify is not set or false" on the
 * first request): plain HTTP carries the credentials and every answer unencrypted. `kubectl proxy`
 * listens on loopback and adds the credentials itself, so that traffic never leaves the machine. So
 * an `http:` server on a loopback address (the drain contract's rule: 127.0.0.0/8 in plain decimal,
 * [::1], localhost) is allowed by setting that flag on this one cluster entry, where it has nothing
 * to skip (there is no TLS); any other `http:` server is refused here, before a request is made.
 */
function allowLoopbackHttp(kubeConfig: k8s.KubeConfig, cluster: k8s.Cluster, contextName: string): void {
  let url: URL;
  try {
    url = new URL(cluster.server);
  } catch {
    throw new KubeconfigError(`cluster ${JSON.stringify(cluster.name)} has an invalid server URL ${JSON.stringify(cluster.server)}`);
  }
  const loopback = readAdminAddress(`http://${url.hostname}:${url.port || '80'}`).ok;
  if (!loopback) {
    throw new KubeconfigError(
      `context ${JSON.stringify(contextName)}: the API server ${cluster.server} is plain HTTP on a non-loopback address; ` +
        'drainguard talks plain HTTP only to a loopback address (kubectl proxy), because credentials and answers would cross the network unencrypted: use its https:// address',
    );
  }
  kubeConfig.loadFromOptions({
    clusters: kubeConfig.clusters.map((entry) => (entry.name === cluster.name ? { ...entry, skipTLSVerify: true } : entry)),
    contexts: kubeConfig.contexts,
    users: kubeConfig.users,
    currentContext: kubeConfig.currentContext,
  });
}

type Source = { kind: 'files'; paths: [string, ...string[]]; label: string } | { kind: 'in-cluster'; label: string };

function locate({ kubeconfigPath, env, homeDirectory }: KubeconfigRequest): Source {
  if (kubeconfigPath !== undefined) return { kind: 'files', paths: [kubeconfigPath], label: kubeconfigPath };
  const listed = (env.KUBECONFIG ?? '').split(delimiter).filter((path) => path.trim() !== '');
  if (listed.length > 0) {
    // kubectl skips the files of $KUBECONFIG that do not exist, and fails only when none does.
    const [first, ...rest] = listed.filter((path) => existsSync(path));
    if (first === undefined) throw new KubeconfigError(`none of the files in $KUBECONFIG exists (${listed.join(delimiter)})`);
    return { kind: 'files', paths: [first, ...rest], label: `$KUBECONFIG (${listed.join(delimiter)})` };
  }
  const home = homeDirectory === undefined ? undefined : join(homeDirectory, '.kube', 'config');
  if (home !== undefined && existsSync(home)) return { kind: 'files', paths: [home], label: home };
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT && existsSync(SERVICE_ACCOUNT_TOKEN)) {
    return { kind: 'in-cluster', label: "the pod's service account (in-cluster)" };
  }
  if (home === undefined) {
    throw new KubeconfigError('no kubeconfig: pass --kubeconfig FILE or set KUBECONFIG (there is no home directory for ~/.kube/config: HOME is unset and this user has no passwd entry)');
  }
  throw new KubeconfigError(`no kubeconfig: pass --kubeconfig FILE, set KUBECONFIG, or create ${home}`);
}

function loadFile(kubeConfig: k8s.KubeConfig, path: string): void {
  try {
    kubeConfig.loadFromFile(path);
  } catch (error) {
    throw new KubeconfigError(`cannot load the kubeconfig ${path}: ${(error as Error).message}`);
  }
}

/**
 * kubectl's merge of several kubeconfig files: the first file that sets current-context wins, and so
 * does the first cluster, user or context of a name (client-node's own merge lets later files win and
 * throws on a repeated name).
 */
function mergeFirstWins(into: k8s.KubeConfig, next: k8s.KubeConfig): void {
  if (!into.getCurrentContext() && next.getCurrentContext()) into.setCurrentContext(next.getCurrentContext());
  const has = (list: readonly { name: string }[], name: string) => list.some((entry) => entry.name === name);
  for (const cluster of next.getClusters()) if (!has(into.getClusters(), cluster.name)) into.addCluster(cluster);
  for (const user of next.getUsers()) if (!has(into.getUsers(), user.name)) into.addUser(user);
  for (const context of next.getContexts()) if (!has(into.getContexts(), context.name)) into.addContext(context);
}
