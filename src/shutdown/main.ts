/**
 * `envoy-shutdown`: Envoy's own preStop drain (docs/design.md, "The drain"). Everything that touches the
 * system goes through a Platform (platform/platform.ts): Node's when run from the sources (tests), the
 * QuickJS host's inside the static executable (build/build-executable.mjs, docs/envoy-shutdown.md).
 *
 *   envoy-shutdown install --to DIR
 *   envoy-shutdown drain --admin unix:/admin/admin.sock [--deadline 290s] …
 *   envoy-shutdown status [--admin …] [--json]
 *   envoy-shutdown version
 *
 * Exit codes: 0 success (a drain always exits 0, whatever Envoy does), 1 failure (install could not
 * write, status could not reach Envoy), 2 usage error.
 */
import { AdminAddressError, describeAdminAddress, parseAdminAddress, type AdminAddress } from './admin-address';
import { AdminCallError, createAdminClient } from './admin-client';
import { platformClock } from './clock';
import { drainEnvoy, type DrainSettings } from './drain';
import { flagUsage, parseFlags, UsageError, type FlagSpec, type ParsedFlags } from './flags';
import { InstallError, installExecutable } from './install';
import { createLog, LOG_TARGET_ENV, openLogSink } from './log';
import { platform as currentPlatform } from './platform/current';
import type { Platform } from './platform/platform';
import { readStatus, renderStatusTable } from './status';
import { VERSION } from '../version';

const ADMIN_FLAG: FlagSpec = { kind: 'string', placeholder: 'ADDRESS', help: 'Envoy admin API: unix:/PATH or http://127.0.0.1:PORT (loopback or unix only)' };
const REQUEST_TIMEOUT_FLAG: FlagSpec = { kind: 'duration', default: '1s', help: 'timeout of each admin API call' };
const EXCLUDE_LISTENER_FLAG: FlagSpec = {
  kind: 'regex',
  repeatable: true,
  help: 'do not count listeners whose stat name segment (e.g. 0.0.0.0_8002) matches REGEX',
};

const DRAIN_FLAGS: Record<string, FlagSpec> = {
  admin: ADMIN_FLAG,
  deadline: { kind: 'duration', default: '290s', help: 'hard bound on the whole drain (grace period minus a margin)' },
  'drain-delay': { kind: 'duration', default: '0s', help: 'wait before failing the health check (load balancer deregistration)' },
  'min-drain': { kind: 'duration', default: '5s', help: 'minimum time between /healthcheck/fail and exit' },
  'min-connections': { kind: 'count', default: '0', help: 'exit once counted connections are at or below this' },
  'poll-interval': { kind: 'duration', default: '1s', help: 'how often the listener gauges are read' },
  'exclude-listener': EXCLUDE_LISTENER_FLAG,
  'request-timeout': REQUEST_TIMEOUT_FLAG,
  'inbound-only': { kind: 'boolean', help: 'drain only inbound listeners (drain_listeners?inboundonly, Envoy >= 1.34)' },
};

/** How long after the deadline the safety timer ends the drain, and then the host's hard deadline. */
const SAFETY_TIMER_GRACE_MS = 500;
const HARD_DEADLINE_GRACE_MS = 1000;

const COMMANDS: Record<string, { summary: string; flags: Record<string, FlagSpec>; run: (flags: ParsedFlags, platform: Platform) => Promise<number> }> = {
  install: {
    summary: 'copy this program into DIR atomically, mode 0755',
    flags: { to: { kind: 'string', placeholder: 'DIR', help: 'target directory, e.g. /config/drainguard' } },
    run: runInstall,
  },
  drain: {
    summary: "drain Envoy through its admin API (Envoy's preStop); always exits 0",
    flags: DRAIN_FLAGS,
    run: runDrain,
  },
  status: {
    summary: 'print Envoy state, version and active connections per listener',
    flags: {
      admin: { ...ADMIN_FLAG, default: 'unix:/admin/admin.sock' },
      json: { kind: 'boolean', help: 'print JSON instead of a table' },
      'exclude-listener': EXCLUDE_LISTENER_FLAG,
      'request-timeout': REQUEST_TIMEOUT_FLAG,
    },
    run: runStatus,
  },
  version: { summary: 'print the version', flags: {}, run: async (_flags, platform) => (platform.print('stdout', `envoy-shutdown ${VERSION}\n`), 0) },
};

function single<T>(flags: ParsedFlags, name: string): T | undefined {
  return flags.get(name)?.[0] as T | undefined;
}

function required<T>(flags: ParsedFlags, name: string): T {
  const value = single<T>(flags, name);
  if (value === undefined) throw new UsageError(`--${name} is required`);
  return value;
}

function positiveDuration(flags: ParsedFlags, name: string): number {
  const ms = required<number>(flags, name);
  if (ms <= 0) throw new UsageError(`--${name} must be greater than 0`);
  return ms;
}

async function runInstall(flags: ParsedFlags, platform: Platform): Promise<number> {
  const target = required<string>(flags, 'to');
  const installed = installExecutable(platform.files, platform.pid(), platform.executablePath(), target);
  for (const file of installed) platform.print('stdout', `installed ${file.path} (mode ${file.mode.toString(8)})\n`);
  return 0;
}

/**
 * `drain`'s arguments as the settings of the drain loop; throws UsageError or AdminAddressError. The
 * webhook writes these arguments into Envoy's preStop, and a contract test feeds every command it
 * writes through here: a preStop this refuses would fail at shutdown, with no drain at all.
 */
export function parseDrainArguments(args: readonly string[]): { address: AdminAddress; settings: DrainSettings } {
  return drainSettings(parseFlags(args, DRAIN_FLAGS));
}

function drainSettings(flags: ParsedFlags): { address: AdminAddress; settings: DrainSettings } {
  const address = parseAdminAddress(required<string>(flags, 'admin'));
  const settings: DrainSettings = {
    adminLabel: describeAdminAddress(address),
    deadlineMs: positiveDuration(flags, 'deadline'),
    drainDelayMs: required<number>(flags, 'drain-delay'),
    minDrainMs: required<number>(flags, 'min-drain'),
    minConnections: required<number>(flags, 'min-connections'),
    pollIntervalMs: positiveDuration(flags, 'poll-interval'),
    requestTimeoutMs: positiveDuration(flags, 'request-timeout'),
    excludeListeners: (flags.get('exclude-listener') ?? []) as RegExp[],
    inboundOnly: single<boolean>(flags, 'inbound-only') ?? false,
  };
  return { address, settings };
}

async function runDrain(flags: ParsedFlags, platform: Platform): Promise<number> {
  const { address, settings } = drainSettings(flags);
  const sink = openLogSink(platform, platform.env(LOG_TARGET_ENV));
  const log = createLog(sink);
  // Belt and braces: whatever happens inside (a bug, an admin call that outlives its timeout), the hook
  // returns by the deadline; and should JavaScript itself be stuck, the host ends the process. Both
  // timers take any deadline the flags accept (platform.ts: no overflow above 2^31-1 ms).
  const safetyTimer = platform.setTimer(settings.deadlineMs + SAFETY_TIMER_GRACE_MS, () => {
    log('summary', { reason: 'deadline', note: 'safety timer' });
    sink.close();
    platform.exit(0);
  });
  const hardDeadline = platform.armHardDeadline(settings.deadlineMs + HARD_DEADLINE_GRACE_MS);
  try {
    await drainEnvoy(settings, { admin: createAdminClient(platform, address), clock: platformClock(platform), log });
  } catch (error) {
    log('error', { error: (error as Error).message });
  } finally {
    platform.clearTimer(safetyTimer);
    hardDeadline.disarm();
    sink.close();
  }
  return 0;
}

async function runStatus(flags: ParsedFlags, platform: Platform): Promise<number> {
  const address = parseAdminAddress(required<string>(flags, 'admin'));
  const timeoutMs = positiveDuration(flags, 'request-timeout');
  const excludes = (flags.get('exclude-listener') ?? []) as RegExp[];
  try {
    const status = await readStatus(createAdminClient(platform, address), describeAdminAddress(address), excludes, timeoutMs);
    platform.print('stdout', single<boolean>(flags, 'json') ? `${JSON.stringify(status, null, 2)}\n` : renderStatusTable(status));
    return 0;
  } catch (error) {
    if (!(error instanceof AdminCallError)) throw error;
    platform.print('stderr', `envoy-shutdown status: cannot read Envoy status from ${describeAdminAddress(address)}: ${error.message}\n`);
    return 1;
  }
}

export function usage(): string {
  const sections = Object.entries(COMMANDS).map(([name, command]) => {
    const flags = flagUsage(command.flags);
    return `envoy-shutdown ${name}: ${command.summary}${flags ? `\n${flags}` : ''}`;
  });
  return `${sections.join('\n\n')}\n\nDurations: Ns or Nms. Drain logs go to /proc/1/fd/1 (else stderr); set ENVOY_SHUTDOWN_LOG=stderr|stdout|PATH to override.\n`;
}

export async function main(argv: readonly string[], platform: Platform = currentPlatform): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    platform.print('stdout', usage());
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  try {
    if (!command) throw new UsageError(`unknown command ${JSON.stringify(name)}`);
    return await command.run(parseFlags(rest, command.flags), platform);
  } catch (error) {
    if (error instanceof UsageError || error instanceof AdminAddressError) {
      platform.print('stderr', `envoy-shutdown ${name}: ${error.message}\nRun "envoy-shutdown help" for usage.\n`);
      return 2;
    }
    if (error instanceof InstallError) {
      platform.print('stderr', `envoy-shutdown install: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}
