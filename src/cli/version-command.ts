/**
 * `drainguard version`: this program's version, and when a cluster is reachable the Kubernetes
 * server's version and the installed drainguard's (its Deployment's `app.kubernetes.io/version`).
 * A cluster that cannot be reached is reported, never an error: the client's version is always known.
 */
import { ClusterAccessError, describeFailure, type ServerVersion } from '../check/cluster';
import { KubeconfigError } from '../check/kubeconfig';
import { VERSION } from '../version';
import { formatFlagHelp, parseFlags, type FlagSpecs } from './args';
import { connect, connectionFlags, INSTALLATION_FLAGS, installationNames, requestTimeout, usageError, type ClusterEnvironment } from './cluster-flags';
import { EXIT_BUG, EXIT_BUG_MEANING, EXIT_OK, EXIT_USAGE, formatExitCodes, type ExitCodeTable } from './errors';

const COMMAND = 'drainguard version';

/** kubectl version waits this long by default for a server that does not answer; so do we. */
const DEFAULT_REQUEST_TIMEOUT = '5s';

export const VERSION_FLAGS = {
  client: { type: 'boolean', description: "print only this program's version; do not contact a cluster" },
  ...connectionFlags(DEFAULT_REQUEST_TIMEOUT),
  ...INSTALLATION_FLAGS,
  output: { type: 'string', short: 'o', valueName: 'FORMAT', values: ['text', 'json'], description: 'text (default) or json' },
  help: { type: 'boolean', short: 'h', description: 'show this help' },
} satisfies FlagSpecs;

export const VERSION_EXIT_CODES: ExitCodeTable = [
  [EXIT_OK, 'the version was printed (also when no cluster could be reached: that is reported, not an error)'],
  [EXIT_USAGE, 'wrong flags'],
  [EXIT_BUG, EXIT_BUG_MEANING],
];

export const VERSION_USAGE = `Usage: ${COMMAND} [--client] [--context NAME] [--kubeconfig FILE] [-o text|json]

Prints drainguard's version and, when the kubeconfig's cluster answers, the Kubernetes server's version
and the version of drainguard installed there (its Deployment), as kubectl version does.
'drainguard --version' prints only this program's version.

${formatFlagHelp(VERSION_FLAGS)}

${formatExitCodes(VERSION_EXIT_CODES)}`;

export interface InstalledDrainguard {
  /** The Deployment's `app.kubernetes.io/version` label; absent when it has none. */
  version?: string;
  deployment: string;
  availableReplicas: number;
  replicas: number;
}

export interface VersionReport {
  client: { version: string };
  /** Absent with --client. */
  server?: {
    context?: string;
    url?: string;
    kubernetes?: ServerVersion;
    drainguard?: InstalledDrainguard;
    /** What could not be read, in words: an unreachable server, a missing Deployment, a refusal. */
    problems: string[];
  };
}

export interface VersionIo extends ClusterEnvironment {
  stdout: (text: string) => void;
}

export async function runVersionCommand(argv: readonly string[], io: VersionIo): Promise<number> {
  const flags = parseFlags(COMMAND, argv, VERSION_FLAGS);
  if (flags.help) {
    io.stdout(VERSION_USAGE);
    return EXIT_OK;
  }
  const output = flags.output ?? 'text';
  if (output !== 'text' && output !== 'json') usageError(COMMAND, `-o/--output must be text or json, not ${JSON.stringify(output)}`);
  const timeoutMs = requestTimeout(COMMAND, flags, DEFAULT_REQUEST_TIMEOUT);
  const names = installationNames(COMMAND, flags);
  const report: VersionReport = { client: { version: VERSION } };
  if (!flags.client) report.server = await serverVersions(flags, timeoutMs, names, io);
  io.stdout(output === 'json' ? `${JSON.stringify(report, null, 2)}\n` : formatVersion(report));
  return EXIT_OK;
}

async function serverVersions(
  flags: Parameters<typeof connect>[0],
  timeoutMs: number,
  names: ReturnType<typeof installationNames>,
  io: VersionIo,
): Promise<NonNullable<VersionReport['server']>> {
  let connection;
  try {
    connection = await connect(flags, timeoutMs, io);
  } catch (error) {
    if (error instanceof KubeconfigError) return { problems: [error.message] };
    throw error;
  }
  const { kubeconfig, reader } = connection;
  const server: NonNullable<VersionReport['server']> = { context: kubeconfig.contextName, url: kubeconfig.server, problems: [] };
  try {
    const [kubernetes, deployment] = await Promise.all([reader.serverVersion(), reader.deployment(names.namespace, names.deployment)]);
    if (kubernetes.ok) server.kubernetes = kubernetes.value;
    else server.problems.push(describeFailure(kubernetes, 'the Kubernetes version'));
    const label = `Deployment ${names.namespace}/${names.deployment}`;
    if (deployment.ok) {
      const version = deployment.value.metadata?.labels?.['app.kubernetes.io/version'];
      server.drainguard = {
        ...(version ? { version } : {}),
        deployment: `${names.namespace}/${names.deployment}`,
        availableReplicas: deployment.value.status?.availableReplicas ?? 0,
        replicas: deployment.value.spec?.replicas ?? 1,
      };
    } else if (deployment.reason === 'not-found') {
      server.problems.push(`drainguard is not installed as release ${names.release} in ${names.namespace} (${label} not found)`);
    } else server.problems.push(describeFailure(deployment, label));
  } catch (error) {
    // The cluster cannot be reached or refuses the credentials: a fact about the server, not an error of `version`.
    if (!(error instanceof ClusterAccessError)) throw error;
    server.problems.push(error.message);
  }
  return server;
}

function formatVersion(report: VersionReport): string {
  const out = [`drainguard ${report.client.version}`];
  const { server } = report;
  if (server) {
    out.push(server.context !== undefined ? `server (context ${server.context}, ${server.url}):` : 'server:');
    if (server.kubernetes) out.push(`  kubernetes  ${server.kubernetes.gitVersion}`);
    if (server.drainguard) {
      const { version, deployment, availableReplicas, replicas } = server.drainguard;
      out.push(`  drainguard  ${version ?? 'unknown (the Deployment has no app.kubernetes.io/version label)'} (Deployment ${deployment}, ${availableReplicas} of ${replicas} replicas available)`);
    }
    for (const problem of server.problems) out.push(`  ${problem}`);
  }
  return `${out.join('\n')}\n`;
}
