/**
 * The flags of the commands that talk to a cluster (`check`, `version`): which kubeconfig and context,
 * how long to wait for the API server, and which Helm release drainguard was installed as. One table
 * and one validation, so both commands spell and check them alike.
 */
import { homedir } from 'node:os';
import { kubernetesClusterReader, type ClusterReader } from '../check/cluster';
import { loadKubeconfig, type LoadedKubeconfig } from '../check/kubeconfig';
import { chartNames, type InstallationNames } from '../check/names';
import { parseDuration } from '../drain-contract';
import type { FlagSpecs } from './args';
import { UsageError } from './errors';

export const DEFAULT_RELEASE = 'drainguard';
export const DEFAULT_DRAINGUARD_NAMESPACE = 'drainguard-system';

/** The connection flags of a command whose `--request-timeout` defaults to `defaultTimeout` (its help says so). */
export function connectionFlags(defaultTimeout: string) {
  return {
    context: { type: 'string', valueName: 'NAME', description: 'kubeconfig context to use (default: the current context)' },
    kubeconfig: { type: 'string', valueName: 'FILE', description: 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)' },
    'request-timeout': { type: 'string', valueName: 'DURATION', description: `give up on an API request after this long (default ${defaultTimeout})` },
  } as const satisfies FlagSpecs;
}

export const INSTALLATION_FLAGS = {
  release: { type: 'string', valueName: 'NAME', description: "drainguard's Helm release name (default drainguard)" },
  'drainguard-namespace': { type: 'string', valueName: 'NAMESPACE', description: 'namespace drainguard is installed in (default drainguard-system)' },
  fullname: { type: 'string', valueName: 'NAME', description: "the chart's fullnameOverride, if the release sets one" },
} as const satisfies FlagSpecs;

/** Kubernetes namespace names are DNS labels. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** Helm's release names: DNS subdomain form, at most 53 characters. */
const RELEASE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

type ConnectionFlagValues = { context?: string | undefined; kubeconfig?: string | undefined; 'request-timeout'?: string | undefined };
type InstallationFlagValues = { release?: string | undefined; 'drainguard-namespace'?: string | undefined; fullname?: string | undefined };

/** Throws a UsageError naming `command`. */
export function usageError(command: string, message: string): never {
  throw new UsageError(`${command}: ${message} (see '${command} --help')`);
}

/** The request timeout in milliseconds. */
export function requestTimeout(command: string, flags: ConnectionFlagValues, fallback: string): number {
  const timeoutMs = parseDuration(flags['request-timeout'] ?? fallback);
  if (timeoutMs === undefined || timeoutMs <= 0) usageError(command, '--request-timeout must be a duration like 30s or 500ms, greater than 0');
  return timeoutMs;
}

/** Checks a name flag that must be a DNS label. */
export function checkDnsLabel(command: string, flag: string, value: string | undefined): void {
  if (value !== undefined && !DNS_LABEL.test(value)) {
    usageError(command, `${flag} ${JSON.stringify(value)} is not a valid name (lower-case letters, digits and "-", at most 63)`);
  }
}

/** The names the chart gave the installation, from --release, --drainguard-namespace and --fullname. */
export function installationNames(command: string, flags: InstallationFlagValues): InstallationNames {
  checkDnsLabel(command, '--drainguard-namespace', flags['drainguard-namespace']);
  checkDnsLabel(command, '--fullname', flags.fullname);
  const release = flags.release ?? DEFAULT_RELEASE;
  if (!RELEASE_NAME.test(release) || release.length > 53) usageError(command, `--release ${JSON.stringify(release)} is not a valid Helm release name`);
  return chartNames(release, flags['drainguard-namespace'] ?? DEFAULT_DRAINGUARD_NAMESPACE, flags.fullname);
}

export interface ClusterEnvironment {
  env: NodeJS.ProcessEnv;
  homeDirectory?: string;
}

export interface Connection {
  kubeconfig: LoadedKubeconfig;
  reader: ClusterReader;
}

/**
 * The user's home directory: $HOME, else the passwd entry of this user; undefined when there is neither
 * (a container running as a user its image does not list, with no HOME set), where os.homedir() throws.
 */
function userHome(): string | undefined {
  try {
    return homedir();
  } catch {
    return undefined;
  }
}

/** Loads the kubeconfig as kubectl would and makes the reader; throws KubeconfigError or ClusterAccessError. */
export async function connect(flags: ConnectionFlagValues, timeoutMs: number, environment: ClusterEnvironment): Promise<Connection> {
  const kubeconfig = await loadKubeconfig({
    ...(flags.kubeconfig !== undefined ? { kubeconfigPath: flags.kubeconfig } : {}),
    ...(flags.context !== undefined ? { context: flags.context } : {}),
    env: environment.env,
    homeDirectory: environment.homeDirectory ?? userHome(),
  });
  return { kubeconfig, reader: await kubernetesClusterReader(kubeconfig.kubeConfig, timeoutMs) };
}
