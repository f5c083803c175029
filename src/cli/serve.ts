/**
 * `drainguard serve`: flags → a running webhook, until SIGTERM/SIGINT. All behaviour lives in
 * src/server and src/certs; this file only translates the command line.
 */
import { resolve } from 'node:path';
import pino, { type Logger } from 'pino';
import { ConfigError, defaultConfig, loadConfigFile, type Config } from '../config';
import { isoTimeOncePerSecond } from '../server/log-time';
import type { TlsSource } from '../server/start';
import { parseDuration } from '../drain-contract';
import { DEFAULT_LIMITS } from '../server/sizing';
import { DEFAULT_RENEW_BEFORE_MS, DEFAULT_VALIDITY_MS } from '../certs/lifetimes';
import { parseFlags, formatFlagHelp, type FlagSpecs } from './args';
import { devLogStream } from './dev-log';
import { EXIT_BUG, EXIT_BUG_MEANING, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, formatExitCodes, UsageError, type ExitCodeTable } from './errors';
import { LOG_LEVELS, runUntilSignal, startFailure } from './service';

const COMMAND = 'drainguard serve';

/** Where the serving certificate comes from (the chart's certManager and secret modes mount files). */
const TLS_MODES = ['files', 'self'] as const;

export const SERVE_FLAGS = {
  host: { type: 'string', valueName: 'ADDR', description: 'listen address (default 0.0.0.0; 127.0.0.1 with --dev)' },
  port: { type: 'string', valueName: 'N', description: 'HTTPS port (default 8443; 0 picks a free one)' },
  config: { type: 'string', valueName: 'FILE', description: 'YAML configuration overriding the defaults' },
  'log-level': { type: 'string', valueName: 'LEVEL', values: LOG_LEVELS, description: 'trace, debug, info (default), warn, error, fatal' },
  'shutdown-delay': {
    type: 'string',
    valueName: 'DURATION',
    description: 'keep serving this long after SIGTERM while readiness fails (default 5s; 0s with --dev)',
  },
  'tls-mode': { type: 'string', valueName: 'MODE', values: TLS_MODES, description: 'files (default) or self' },
  'tls-cert': { type: 'string', valueName: 'FILE', description: 'files mode: serving certificate (PEM), reloaded on change' },
  'tls-key': { type: 'string', valueName: 'FILE', description: 'files mode: private key (PEM), reloaded on change' },
  namespace: { type: 'string', valueName: 'NS', description: 'self mode: namespace of the Secret and Service (default $POD_NAMESPACE)' },
  'secret-name': { type: 'string', valueName: 'NAME', description: 'self mode: Secret holding the CA and certificate' },
  'webhook-config-name': {
    type: 'string',
    valueName: 'NAME',
    description: "self mode: MutatingWebhookConfiguration whose caBundle drainguard keeps current",
  },
  'service-name': { type: 'string', valueName: 'NAME', description: 'self mode: Service the API server calls (certificate names)' },
  kubeconfig: { type: 'string', valueName: 'FILE', description: 'self mode: kubeconfig (default: in-cluster service account)' },
  'certificate-validity': {
    type: 'string',
    valueName: 'DURATION',
    description: 'self mode: how long the CA and serving certificate are valid, whole hours, minutes or seconds (default 8760h, a year)',
  },
  'certificate-renew-before': {
    type: 'string',
    valueName: 'DURATION',
    description: 'self mode: both are issued anew this long before either expires (default 720h); replicas check a quarter as often, at least every minute',
  },
  'max-body-bytes': { type: 'string', valueName: 'N', description: 'largest request body accepted (default 3145728, 3 MiB); more is refused with 413' },
  'max-concurrent-admissions': {
    type: 'string',
    valueName: 'N',
    description: 'admissions read and decided at once, one decision worker each (default 2)',
  },
  'max-concurrent-small-admissions': {
    type: 'string',
    valueName: 'N',
    description: 'admissions of at most 64 KiB (declared Content-Length) read and decided at once on the main thread, in batches (default 16)',
  },
  'max-queued-admissions': {
    type: 'string',
    valueName: 'N',
    description: 'admissions that may wait for a slot, in each of the small and large lines (default 32), shared fairly between client addresses; more get 429 with Retry-After',
  },
  'max-connections': { type: 'string', valueName: 'N', description: 'open connections, idle ones included (default 128), shared fairly between client addresses' },
  dev: { type: 'boolean', description: 'development: certificate generated into ./certs, serve on 127.0.0.1:8443, readable logs on a terminal' },
  help: { type: 'boolean', short: 'h', description: 'show this help' },
} satisfies FlagSpecs;

export const SERVE_EXIT_CODES: ExitCodeTable = [
  [EXIT_OK, 'stopped by SIGTERM or SIGINT after a graceful shutdown'],
  [EXIT_USAGE, 'wrong flags'],
  [EXIT_FAILURE, 'cannot start: an invalid --config, unusable certificates, the port cannot be bound'],
  [EXIT_BUG, EXIT_BUG_MEANING],
];

export const SERVE_USAGE = `Usage: ${COMMAND} [flags]

Runs the HTTPS admission webhook: POST /mutate, GET /healthz, /readyz, /metrics.

${formatFlagHelp(SERVE_FLAGS)}

${formatExitCodes(SERVE_EXIT_CODES)}`;

export async function runServe(argv: string[]): Promise<number> {
  let flags;
  try {
    flags = parseFlags(COMMAND, argv, SERVE_FLAGS);
  } catch (error) {
    return usage(error);
  }
  if (flags.help) {
    process.stdout.write(SERVE_USAGE);
    return EXIT_OK;
  }
  let settings: ReturnType<typeof resolveSettings>;
  try {
    settings = resolveSettings(flags);
  } catch (error) {
    return usage(error);
  }

  let config: Config;
  try {
    config = settings.configFile ? loadConfigFile(settings.configFile) : defaultConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${COMMAND}: ${error.message}\n`);
    return EXIT_FAILURE;
  }

  const logOptions = { level: settings.logLevel, base: { name: 'drainguard' }, timestamp: isoTimeOncePerSecond() };
  // JSON lines everywhere but a developer's terminal (src/cli/dev-log.ts).
  const logger = flags.dev && process.stdout.isTTY ? pino(logOptions, devLogStream(process.stdout, !process.env.NO_COLOR)) : pino(logOptions);
  let running;
  try {
    // Loaded here, not at the top: the CLI's command table imports this module for its flags, and the
    // server (express, prom-client, TLS, the decision workers) cost every other command (check, inject,
    // --version) ~0.5 s of CPU at start, several seconds of waiting on a busy machine.
    const { startWebhook } = require('../server/start') as typeof import('../server/start');
    running = await startWebhook({
      host: settings.host,
      port: settings.port,
      config,
      logger,
      shutdownDelayMs: settings.shutdownDelayMs,
      server: { limits: settings.limits },
      tls: settings.tls.mode === 'dev' ? devCertificates(logger) : settings.tls,
    });
  } catch (error) {
    return startFailure(COMMAND, logger, error);
  }
  return runUntilSignal(logger, running);
}

function usage(error: unknown): number {
  if (!(error instanceof UsageError)) throw error;
  process.stderr.write(`${error.message}\n`);
  return EXIT_USAGE;
}

function devCertificates(logger: Logger): TlsSource {
  // Loaded for --dev alone: node-forge, which making certificates takes, costs a served process memory.
  const { ensureDevCertificates } = require('../certs/dev') as typeof import('../certs/dev');
  const paths = ensureDevCertificates(resolve('certs'));
  logger.info({ caCert: paths.caCert, generated: paths.generated }, 'development certificate (curl --cacert certs/ca.crt)');
  return { mode: 'files', certPath: paths.cert, keyPath: paths.key };
}

type Flags = ReturnType<typeof parseFlags<typeof SERVE_FLAGS>>;

function resolveSettings(flags: Flags) {
  const fail = (message: string): never => {
    throw new UsageError(`${COMMAND}: ${message} (see '${COMMAND} --help')`);
  };
  const logLevel = flags['log-level'] ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) fail(`--log-level must be one of ${LOG_LEVELS.join(', ')}; got '${logLevel}'`);
  const port = flags.port === undefined ? 8443 : Number(flags.port);
  if (!/^\d+$/.test(flags.port ?? '0') || port > 65535) fail(`--port must be 0-65535; got '${flags.port}'`);
  // The delay lets endpoints controllers stop routing to a terminating replica; nothing routes to --dev.
  const shutdownDelayMs = parseDuration(flags['shutdown-delay'] ?? (flags.dev ? '0s' : '5s'));
  if (shutdownDelayMs === undefined) fail(`--shutdown-delay must be a duration like 5s or 500ms; got '${flags['shutdown-delay']}'`);

  const limits = {
    bodyLimitBytes: integerFlag(flags['max-body-bytes'], 'max-body-bytes', 1024, 64 * 1024 * 1024, DEFAULT_LIMITS.bodyLimitBytes, fail),
    concurrency: integerFlag(flags['max-concurrent-admissions'], 'max-concurrent-admissions', 1, 64, DEFAULT_LIMITS.concurrency, fail),
    smallConcurrency: integerFlag(flags['max-concurrent-small-admissions'], 'max-concurrent-small-admissions', 1, 256, DEFAULT_LIMITS.smallConcurrency, fail),
    queueLimit: integerFlag(flags['max-queued-admissions'], 'max-queued-admissions', 0, 10_000, DEFAULT_LIMITS.queueLimit, fail),
    maxConnections: integerFlag(flags['max-connections'], 'max-connections', 1, 100_000, DEFAULT_LIMITS.maxConnections, fail),
  };

  const mode = flags['tls-mode'] ?? 'files';
  const given = (names: (keyof Flags)[]) => names.filter((name) => flags[name] !== undefined).map((n) => `--${n}`);
  const selfFlags = given(['namespace', 'secret-name', 'webhook-config-name', 'service-name', 'kubeconfig', 'certificate-validity', 'certificate-renew-before']);
  const fileFlags = given(['tls-cert', 'tls-key']);
  // `dev` is resolved to files only when starting: generating certificates is not flag parsing.
  let tls: TlsSource | { mode: 'dev' } | undefined;
  if (flags.dev) {
    const conflicting = [...given(['tls-mode']), ...fileFlags, ...selfFlags];
    if (conflicting.length > 0) fail(`--dev makes its own certificate; drop ${conflicting.join(', ')}`);
    tls = { mode: 'dev' };
  } else if (mode === 'files') {
    if (selfFlags.length > 0) fail(`${selfFlags.join(', ')} only apply to --tls-mode self`);
    if (!flags['tls-cert'] || !flags['tls-key']) fail('--tls-mode files needs --tls-cert and --tls-key (or use --dev)');
    tls = { mode: 'files', certPath: flags['tls-cert']!, keyPath: flags['tls-key']! };
  } else if (mode === 'self') {
    if (fileFlags.length > 0) fail(`${fileFlags.join(', ')} only apply to --tls-mode files`);
    const namespace = flags.namespace ?? process.env.POD_NAMESPACE;
    if (!namespace) fail('--tls-mode self needs --namespace (or $POD_NAMESPACE)');
    const required = { 'secret-name': flags['secret-name'], 'webhook-config-name': flags['webhook-config-name'], 'service-name': flags['service-name'] };
    const missing = Object.entries(required).filter(([, v]) => !v).map(([k]) => `--${k}`);
    if (missing.length > 0) fail(`--tls-mode self needs ${missing.join(', ')}`);
    const validityMs = certificateDuration(flags['certificate-validity'], 'certificate-validity', DEFAULT_VALIDITY_MS, fail);
    const renewBeforeMs = certificateDuration(flags['certificate-renew-before'], 'certificate-renew-before', DEFAULT_RENEW_BEFORE_MS, fail);
    if (renewBeforeMs >= validityMs) fail(`--certificate-renew-before (${formatHours(renewBeforeMs)}) must be shorter than --certificate-validity (${formatHours(validityMs)})`);
    tls = {
      mode: 'self',
      namespace: namespace!,
      secretName: required['secret-name']!,
      webhookConfigName: required['webhook-config-name']!,
      serviceName: required['service-name']!,
      kube: flags.kubeconfig ? { kubeconfigPath: flags.kubeconfig } : {},
      validityMs,
      renewBeforeMs,
    };
  } else {
    fail(`--tls-mode must be ${TLS_MODES.join(' or ')}; got '${mode}'`);
  }
  return {
    host: flags.host ?? (flags.dev ? '127.0.0.1' : '0.0.0.0'),
    port,
    logLevel,
    shutdownDelayMs: shutdownDelayMs!,
    limits,
    configFile: flags.config,
    tls: tls!,
  };
}

const CERTIFICATE_DURATION = /^([1-9][0-9]{0,6})(h|m|s)$/;
const UNIT_MS = { h: 3_600_000, m: 60_000, s: 1000 } as const;

/** A certificate lifetime: whole hours, minutes or seconds (`8760h`, `90s`); `fallback` when not given. */
function certificateDuration(value: string | undefined, name: string, fallback: number, fail: (message: string) => never): number {
  if (value === undefined) return fallback;
  const match = CERTIFICATE_DURATION.exec(value);
  if (!match) return fail(`--${name} must be whole hours, minutes or seconds such as 8760h, 30m or 90s; got '${value}'`);
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}

function formatHours(ms: number): string {
  for (const [unit, size] of Object.entries(UNIT_MS)) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** A whole number flag within [min, max]; `fallback` when not given. */
function integerFlag(value: string | undefined, name: string, min: number, max: number, fallback: number, fail: (message: string) => never): number {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < min || number > max) fail(`--${name} must be a whole number from ${min} to ${max}; got '${value}'`);
  return number;
}
