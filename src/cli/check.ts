/**
 * `drainguard check`: flags → a read-only look at the cluster (src/check) → text or JSON, and an exit
 * code scripts can use: 0 when every check holds, 1 when one fails or the cluster cannot be read, 2 for
 * wrong flags.
 */
import { homedir } from 'node:os';
import { kubernetesClusterReader, ClusterAccessError } from '../check/cluster';
import { KubeconfigError, loadKubeconfig } from '../check/kubeconfig';
import { chartNames } from '../check/names';
import { renderJson, renderText } from '../check/render';
import type { CheckReport, Scope } from '../check/report';
import { runCheck } from '../check/run';
import { parseDuration } from '../drain-contract';
import { VERSION } from '../version';
import { formatFlagHelp, parseFlags, type FlagSpecs } from './args';
import { EXIT_FINDINGS, EXIT_OK, InputError, UsageError } from './errors';

const COMMAND = 'drainguard check';

const FLAGS = {
  namespace: { type: 'string', short: 'n', valueName: 'NAMESPACE', description: "check the Envoy pods of this namespace (default: the context's namespace)" },
  'all-namespaces': { type: 'boolean', short: 'A', description: 'check the Envoy pods of every namespace' },
  context: { type: 'string', valueName: 'NAME', description: 'kubeconfig context to use (default: the current context)' },
  kubeconfig: { type: 'string', valueName: 'FILE', description: 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)' },
  release: { type: 'string', valueName: 'NAME', description: "drainguard's Helm release name (default drainguard)" },
  'drainguard-namespace': { type: 'string', valueName: 'NAMESPACE', description: 'namespace drainguard is installed in (default drainguard-system)' },
  fullname: { type: 'string', valueName: 'NAME', description: "the chart's fullnameOverride, if the release sets one" },
  output: { type: 'string', short: 'o', valueName: 'FORMAT', description: 'text (default) or json' },
  'request-timeout': { type: 'string', valueName: 'DURATION', description: 'give up on an API request after this long (default 30s)' },
  help: { type: 'boolean', short: 'h', description: 'show this help' },
} satisfies FlagSpecs;

export const CHECK_USAGE = `Usage: ${COMMAND} [-n NAMESPACE | -A] [--context NAME] [--kubeconfig FILE] [-o text|json]

Checks, read-only, that drainguard is installed and healthy, that every namespace holding Envoy pods
is opted in, and which Envoy pods are protected; prints the commands that protect the others.
Exit status: 0 when every check holds, 1 when one fails or the cluster cannot be read, 2 for wrong flags.

${formatFlagHelp(FLAGS)}
`;

export const DEFAULT_RELEASE = 'drainguard';
export const DEFAULT_DRAINGUARD_NAMESPACE = 'drainguard-system';
const DEFAULT_REQUEST_TIMEOUT = '30s';

/** Kubernetes namespace names are DNS labels. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** Helm's release names: DNS subdomain form, at most 53 characters. */
const RELEASE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export interface CheckIo {
  stdout: (text: string) => void;
  env: NodeJS.ProcessEnv;
  homeDirectory?: string;
  now?: () => Date;
}

export async function runCheckCommand(argv: readonly string[], io: CheckIo): Promise<number> {
  const flags = parseFlags(COMMAND, argv, FLAGS);
  if (flags.help) {
    io.stdout(CHECK_USAGE);
    return EXIT_OK;
  }
  const usage = (message: string): never => {
    throw new UsageError(`${COMMAND}: ${message} (see '${COMMAND} --help')`);
  };
  if (flags.namespace !== undefined && flags['all-namespaces']) usage('-n/--namespace and -A/--all-namespaces exclude each other');
  const output = flags.output ?? 'text';
  if (output !== 'text' && output !== 'json') usage(`-o/--output must be text or json, not ${JSON.stringify(output)}`);
  const timeoutMs = parseDuration(flags['request-timeout'] ?? DEFAULT_REQUEST_TIMEOUT);
  if (timeoutMs === undefined || timeoutMs <= 0) usage(`--request-timeout must be a duration like 30s or 500ms, greater than 0`);
  for (const [flag, value] of [
    ['--namespace', flags.namespace],
    ['--drainguard-namespace', flags['drainguard-namespace']],
    ['--fullname', flags.fullname],
  ] as const) {
    if (value !== undefined && !DNS_LABEL.test(value)) usage(`${flag} ${JSON.stringify(value)} is not a valid name (lower-case letters, digits and "-", at most 63)`);
  }
  const release = flags.release ?? DEFAULT_RELEASE;
  if (!RELEASE_NAME.test(release) || release.length > 53) usage(`--release ${JSON.stringify(release)} is not a valid Helm release name`);

  try {
    const kubeconfig = await loadKubeconfig({
      ...(flags.kubeconfig !== undefined ? { kubeconfigPath: flags.kubeconfig } : {}),
      ...(flags.context !== undefined ? { context: flags.context } : {}),
      env: io.env,
      homeDirectory: io.homeDirectory ?? homedir(),
    });
    const scope: Scope = flags['all-namespaces'] ? { allNamespaces: true } : { allNamespaces: false, namespace: flags.namespace ?? kubeconfig.namespace };
    const reader = await kubernetesClusterReader(kubeconfig.kubeConfig, timeoutMs as number);
    const result = await runCheck(reader, {
      names: chartNames(release, flags['drainguard-namespace'] ?? DEFAULT_DRAINGUARD_NAMESPACE, flags.fullname),
      scope,
      now: io.now?.() ?? new Date(),
      checkVersion: VERSION,
    });
    const report: CheckReport = { context: kubeconfig.contextName, server: kubeconfig.server, ...result };
    io.stdout(output === 'json' ? renderJson(report) : renderText(report));
    return report.summary.ok ? EXIT_OK : EXIT_FINDINGS;
  } catch (error) {
    if (error instanceof KubeconfigError || error instanceof ClusterAccessError) throw new InputError(`${COMMAND}: ${error.message}`);
    throw error;
  }
}
