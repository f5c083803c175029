/**
 * `drainguard report`: flags → a running reporter (src/report), until SIGTERM/SIGINT. This file only
 * translates the command line.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import pino from 'pino';
import { kubeConfigFor } from '../kube-api/load';
import { parseDuration } from '../drain-contract';
import { isoTimeOncePerSecond } from '../server/log-time';
import { startReporter } from '../report/start';
import { formatFlagHelp, parseFlags, type FlagSpecs } from './args';
import { EXIT_BUG, EXIT_BUG_MEANING, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, formatExitCodes, UsageError, type ExitCodeTable } from './errors';
import { LOG_LEVELS, runUntilSignal, startFailure } from './service';

const COMMAND = 'drainguard report';

export const REPORT_FLAGS = {
  host: { type: 'string', valueName: 'ADDR', description: 'listen address of /metrics, /healthz, /readyz (default 0.0.0.0)' },
  port: { type: 'string', valueName: 'N', description: 'HTTP port (default 8080; 0 picks a free one)' },
  kubeconfig: { type: 'string', valueName: 'FILE', description: 'kubeconfig (default: in-cluster service account)' },
  'webhook-config-name': {
    type: 'string',
    valueName: 'NAME',
    description: "drainguard's MutatingWebhookConfiguration (required): only pods in namespaces its namespaceSelector selects are reported",
  },
  instance: { type: 'string', valueName: 'NAME', description: "this replica's name in its Events (default $POD_NAME, else the host name)" },
  'max-report-age': {
    type: 'string',
    valueName: 'DURATION',
    description: "terminations that ended longer ago are not reported (default 2700s); keep it below the API server's --event-ttl (1h by default)",
  },
  'request-timeout': { type: 'string', valueName: 'DURATION', description: 'give up on an API request after this long (default 10s)' },
  'log-level': { type: 'string', valueName: 'LEVEL', values: LOG_LEVELS, description: 'trace, debug, info (default), warn, error, fatal' },
  help: { type: 'boolean', short: 'h', description: 'show this help' },
} satisfies FlagSpecs;

export const REPORT_EXIT_CODES: ExitCodeTable = [
  [EXIT_OK, 'stopped by SIGTERM or SIGINT after a clean shutdown'],
  [EXIT_USAGE, 'wrong flags'],
  [EXIT_FAILURE, 'cannot start: no usable kubeconfig, the port cannot be bound (an API server that cannot be reached is retried, with /readyz answering 503)'],
  [EXIT_BUG, EXIT_BUG_MEANING],
];

export const REPORT_USAGE = `Usage: ${COMMAND} [flags]

Watches the pods drainguard protects (label drainguard.io/protected=true, in the namespaces the
webhook's namespaceSelector selects) and turns every Envoy termination into Kubernetes Events on the
pod and its workload and into Prometheus metrics, exactly once across replicas. Serves GET /metrics, /healthz and /readyz over HTTP. Runs in the cluster as the
chart's drainguard-reporter Deployment (docs/report.md).

${formatFlagHelp(REPORT_FLAGS)}

${formatExitCodes(REPORT_EXIT_CODES)}`;

/** Event's reportingInstance holds at most 128 characters; the process id and a slash follow it. */
const MAX_INSTANCE = 100;

export interface ReportSettings {
  host: string;
  port: number;
  kubeconfig?: string;
  instance: string;
  webhookConfigName: string;
  maxReportAgeMs: number;
  requestTimeoutMs: number;
  logLevel: string;
}

/** The command line as settings; `help` when --help was given. Throws UsageError for wrong flags. */
export function readReportFlags(argv: readonly string[], env: NodeJS.ProcessEnv): ReportSettings | 'help' {
  const flags = parseFlags(COMMAND, argv, REPORT_FLAGS);
  if (flags.help) return 'help';
  const fail = (message: string): never => {
    throw new UsageError(`${COMMAND}: ${message} (see '${COMMAND} --help')`);
  };
  const logLevel = flags['log-level'] ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) fail(`--log-level must be one of ${LOG_LEVELS.join(', ')}; got '${logLevel}'`);
  const port = flags.port === undefined ? 8080 : Number(flags.port);
  if (!/^\d+$/.test(flags.port ?? '0') || port > 65535) fail(`--port must be 0-65535; got '${flags.port}'`);
  const maxReportAgeMs = parseDuration(flags['max-report-age'] ?? '2700s');
  if (maxReportAgeMs === undefined || maxReportAgeMs <= 0) fail(`--max-report-age must be a duration like 2700s, above 0; got '${flags['max-report-age']}'`);
  const requestTimeoutMs = parseDuration(flags['request-timeout'] ?? '10s');
  if (requestTimeoutMs === undefined || requestTimeoutMs <= 0) fail(`--request-timeout must be a duration like 10s, above 0; got '${flags['request-timeout']}'`);
  const instance = flags.instance ?? env.POD_NAME ?? hostname();
  if (!/^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/.test(instance) || instance.length > MAX_INSTANCE) {
    fail(`--instance must be a name of letters, digits, ".", "_" and "-", at most ${MAX_INSTANCE} characters; got ${JSON.stringify(instance)}`);
  }
  const webhookConfigName = flags['webhook-config-name'];
  if (webhookConfigName === undefined) fail("--webhook-config-name is required: the name of drainguard's MutatingWebhookConfiguration (the chart passes it)");
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(webhookConfigName!) || webhookConfigName!.length > 253) {
    fail(`--webhook-config-name must be a Kubernetes object name (lower-case letters, digits, "-" and "."); got ${JSON.stringify(webhookConfigName)}`);
  }
  return {
    host: flags.host ?? '0.0.0.0',
    port,
    ...(flags.kubeconfig !== undefined ? { kubeconfig: flags.kubeconfig } : {}),
    instance,
    webhookConfigName: webhookConfigName!,
    maxReportAgeMs: maxReportAgeMs!,
    requestTimeoutMs: requestTimeoutMs!,
    logLevel,
  };
}

export async function runReport(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const settings = readReportFlags(argv, env);
  if (settings === 'help') {
    process.stdout.write(REPORT_USAGE);
    return EXIT_OK;
  }
  const logger = pino({ level: settings.logLevel, base: { name: 'drainguard-reporter' }, timestamp: isoTimeOncePerSecond() });
  let running;
  try {
    const kubeConfig = await kubeConfigFor(settings.kubeconfig !== undefined ? { kubeconfigPath: settings.kubeconfig } : {});
    running = await startReporter({
      kubeConfig,
      host: settings.host,
      port: settings.port,
      logger,
      // A new process id per start: a restarted process never mistakes its predecessor's Events for its own.
      reporter: { instance: settings.instance, id: `${settings.instance}/${randomBytes(6).toString('hex')}` },
      webhookConfigName: settings.webhookConfigName,
      maxReportAgeMs: settings.maxReportAgeMs,
      requestTimeoutMs: settings.requestTimeoutMs,
    });
  } catch (error) {
    return startFailure(COMMAND, logger, error);
  }
  return runUntilSignal(logger, running);
}
