/**
 * `drainguard check`: flags → a read-only look at the cluster (src/check) → text or JSON, and an exit
 * code scripts can use (CHECK_EXIT_CODES). `--pre` checks a cluster before installing instead;
 * `--wait` checks again until the installation is healthy.
 */
import { ClusterAccessError } from '../check/cluster';
import { KubeconfigError } from '../check/kubeconfig';
import { PLANNED_TLS_MODES, runPreInstallCheck, type PlannedTlsMode, type PreInstallReport } from '../check/preinstall';
import { renderJson, renderPreInstallText, renderText } from '../check/render';
import type { CheckReport, Scope } from '../check/report';
import { runCheck } from '../check/run';
import { realClock, waitUntil, type Progress, type WaitClock } from '../check/wait';
import { parseDuration } from '../drain-contract';
import { VERSION } from '../version';
import { formatFlagHelp, parseFlags, type FlagSpecs } from './args';
import { checkDnsLabel, connect, connectionFlags, INSTALLATION_FLAGS, installationNames, requestTimeout, usageError } from './cluster-flags';
import {
  EXIT_BUG,
  EXIT_BUG_MEANING,
  EXIT_FAILURE,
  EXIT_FINDINGS,
  EXIT_OK,
  EXIT_USAGE,
  formatExitCodes,
  InputError,
  type ExitCodeTable,
} from './errors';
import { plain, type Paint } from './terminal';

const COMMAND = 'drainguard check';

const DEFAULT_REQUEST_TIMEOUT = '30s';

export const CHECK_FLAGS = {
  namespace: { type: 'string', short: 'n', valueName: 'NAMESPACE', description: "check the Envoy pods of this namespace (default: the context's namespace)" },
  'all-namespaces': { type: 'boolean', short: 'A', description: 'check the Envoy pods of every namespace' },
  ...connectionFlags(DEFAULT_REQUEST_TIMEOUT),
  ...INSTALLATION_FLAGS,
  pre: { type: 'boolean', description: 'before installing: Kubernetes version, matchConditions, a webhook of the same name, permissions' },
  'tls-mode': {
    type: 'string',
    valueName: 'MODE',
    values: PLANNED_TLS_MODES,
    description: "with --pre: the chart's tls.mode you will install with, self (default), certManager or secret",
  },
  wait: { type: 'string', valueName: 'DURATION', description: 'check again, with back-off, until the installation is healthy or DURATION has passed' },
  output: { type: 'string', short: 'o', valueName: 'FORMAT', values: ['text', 'json'], description: 'text (default) or json' },
  help: { type: 'boolean', short: 'h', description: 'show this help' },
} satisfies FlagSpecs;

export const CHECK_EXIT_CODES: ExitCodeTable = [
  [EXIT_OK, 'every check holds'],
  [EXIT_FINDINGS, 'a check fails (with --wait: also when the installation was not healthy in time)'],
  [EXIT_USAGE, 'wrong flags'],
  [EXIT_FAILURE, 'the cluster cannot be read at all: no usable kubeconfig, unreachable, credentials refused, no answer within --request-timeout'],
  [EXIT_BUG, EXIT_BUG_MEANING],
];

export const CHECK_USAGE = `Usage: ${COMMAND} [-n NAMESPACE | -A] [--context NAME] [--kubeconfig FILE] [--wait DURATION] [-o text|json]
       ${COMMAND} --pre [--tls-mode self|certManager|secret] [--context NAME] [--kubeconfig FILE] [-o text|json]

Checks, read-only, that drainguard is installed and healthy, that every namespace holding Envoy pods
is opted in, and which Envoy pods are protected; prints the commands that protect the others.
With --pre, checks instead that the cluster is ready for helm install.

${formatFlagHelp(CHECK_FLAGS)}

${formatExitCodes(CHECK_EXIT_CODES)}`;

export interface CheckIo {
  stdout: (text: string) => void;
  /** Progress of --wait, shown only when stderr is a terminal (`progress` set). */
  progress?: (text: string) => void;
  env: NodeJS.ProcessEnv;
  homeDirectory?: string;
  now?: () => Date;
  clock?: WaitClock;
  paint?: Paint;
}

export async function runCheckCommand(argv: readonly string[], io: CheckIo): Promise<number> {
  const flags = parseFlags(COMMAND, argv, CHECK_FLAGS);
  if (flags.help) {
    io.stdout(CHECK_USAGE);
    return EXIT_OK;
  }
  const usage = (message: string): never => usageError(COMMAND, message);
  if (flags.namespace !== undefined && flags['all-namespaces']) usage('-n/--namespace and -A/--all-namespaces exclude each other');
  const output = flags.output ?? 'text';
  if (output !== 'text' && output !== 'json') usage(`-o/--output must be text or json, not ${JSON.stringify(output)}`);
  const timeoutMs = requestTimeout(COMMAND, flags, DEFAULT_REQUEST_TIMEOUT);
  checkDnsLabel(COMMAND, '--namespace', flags.namespace);
  const names = installationNames(COMMAND, flags);
  const tlsMode = flags['tls-mode'];
  if (tlsMode !== undefined && !flags.pre) usage('--tls-mode goes with --pre (it is the mode you will install with)');
  if (tlsMode !== undefined && !(PLANNED_TLS_MODES as readonly string[]).includes(tlsMode)) {
    usage(`--tls-mode must be ${PLANNED_TLS_MODES.join(', ')}, not ${JSON.stringify(tlsMode)}`);
  }
  if (flags.pre && (flags.namespace !== undefined || flags['all-namespaces'])) usage('--pre checks the cluster, not Envoy pods: drop -n/-A');
  if (flags.pre && flags.wait !== undefined) usage('--wait waits for an installed drainguard; it does not go with --pre');
  let waitMs: number | undefined;
  if (flags.wait !== undefined) {
    waitMs = parseDuration(flags.wait);
    if (waitMs === undefined || waitMs <= 0) usage(`--wait must be a duration such as 300s or 500ms (whole seconds or milliseconds), greater than 0; got ${JSON.stringify(flags.wait)}`);
  }
  const paint = io.paint ?? plain;

  try {
    const { kubeconfig, reader } = await connect(flags, timeoutMs, io);
    const header = { context: kubeconfig.contextName, server: kubeconfig.server };
    if (flags.pre) {
      const report: PreInstallReport = { ...header, ...(await runPreInstallCheck(reader, { names, tlsMode: (tlsMode ?? 'self') as PlannedTlsMode })) };
      io.stdout(output === 'json' ? renderJson(report) : renderPreInstallText(report, paint));
      return report.summary.ok ? EXIT_OK : EXIT_FINDINGS;
    }
    const scope: Scope = flags['all-namespaces'] ? { allNamespaces: true } : { allNamespaces: false, namespace: flags.namespace ?? kubeconfig.namespace };
    const once = async (): Promise<CheckReport> => ({
      ...header,
      ...(await runCheck(reader, { names, scope, now: io.now?.() ?? new Date(), checkVersion: VERSION })),
    });
    let report: CheckReport;
    if (waitMs === undefined) report = await once();
    else {
      const installed = (candidate: CheckReport) => candidate.checks.every((check) => check.category !== 'installation' || check.verdict !== 'fail');
      const waited = await waitUntil(once, installed, waitMs, io.clock ?? realClock, io.progress ? showProgress(io.progress) : undefined);
      report = {
        ...waited.result,
        wait: { attempts: waited.attempts, elapsedSeconds: Math.round(waited.elapsedMs / 1000), timedOut: waited.timedOut },
      };
    }
    io.stdout(output === 'json' ? renderJson(report) : renderText(report, paint));
    return report.summary.ok ? EXIT_OK : EXIT_FINDINGS;
  } catch (error) {
    if (error instanceof KubeconfigError || error instanceof ClusterAccessError) throw new InputError(`${COMMAND}: ${error.message}`);
    throw error;
  }
}

/** One line, rewritten in place on the terminal: which installation checks still fail, and when the next try is. */
function showProgress(write: (text: string) => void): (progress: Progress<CheckReport>) => void {
  return ({ attempt, result, nextInMs, remainingMs }) => {
    const failing = result.checks.filter((check) => check.category === 'installation' && check.verdict === 'fail').map((check) => check.id);
    const state = failing.length === 0 ? 'installation healthy' : `waiting for ${[...new Set(failing)].join(', ')}`;
    const next = nextInMs === null ? '' : `; next check in ${Math.ceil(nextInMs / 1000)}s, ${Math.ceil(remainingMs / 1000)}s left`;
    // \r and "erase to end of line": the line is replaced, not appended; the last one ends with a newline.
    write(`\r\u001b[K${COMMAND}: attempt ${attempt}: ${state}${next}${nextInMs === null ? '\n' : ''}`);
  };
}
