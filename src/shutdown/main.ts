/**
 * `envoy-shutdown`: Envoy's own preStop drain (docs/design.md, "The drain"). Everything that touches the
 * system goes through a Platform (platform/platform.ts): Node's when run from the sources (tests), the
 * QuickJS host's inside the static executable (build/build-executable.mjs, docs/envoy-shutdown.md). The
 * command line is the drain contract's (../drain-contract/), which the webhook writes it with.
 *
 *   envoy-shutdown install --to DIR
 *   envoy-shutdown drain --admin unix:/admin/admin.sock [--deadline 290s] …
 *   envoy-shutdown status [--admin …] [--json]
 *   envoy-shutdown version
 *
 * Exit codes: 0 success (a drain always exits 0, whatever Envoy does), 1 failure (install could not
 * write, status could not reach Envoy), 2 usage error.
 */
import {
  DRAIN_FLAGS,
  DRAIN_SUBCOMMAND,
  drainArguments,
  flagUsage,
  parseFlags,
  PROGRAM_NAME,
  UsageError,
  type AdminAddress,
  type FlagSpec,
  type ParsedFlags,
} from '../drain-contract';
import { AdminCallError, createAdminClient } from './admin-client';
import { platformClock } from './clock';
import { DrainRun, type DrainSettings } from './drain';
import { InstallError, installExecutable } from './install';
import { compileListenerPattern } from './listener-pattern';
import { createLog, LOG_TARGET_ENV, openLogSink } from './log';
import { platform as currentPlatform } from './platform/current';
import type { HandledSignal, Platform } from './platform/platform';
import { recordFileSink } from './record-file';
import { readStatus, renderStatusTable } from './status';
import { VERSION } from '../version';

/**
 * What a signal does to a drain (docs/envoy-shutdown.md, "Signals"). SIGTERM and SIGINT are someone
 * asking the drain to stop (a person's Ctrl-C in `kubectl exec`, a `kill`): it ends at once with its
 * summary and record (reason `signal`) and exits 0, so the hook returns. SIGHUP and SIGUSR1 are ignored:
 * they reach every process of the container when a terminal or an exec session goes away, or when a
 * log rotator tells Envoy to reopen its logs (`kill -USR1`), and ending the drain then would cut the
 * connections it exists to keep. A SIGALRM sent from outside is ignored too: only the kernel's timer
 * ends the process at the hard deadline.
 */
const ENDING_SIGNALS: ReadonlySet<HandledSignal> = new Set(['SIGTERM', 'SIGINT']);
const IGNORED_BECAUSE: Readonly<Record<string, string>> = {
  SIGHUP: 'a hang-up (terminal or exec session gone) does not stop a drain',
  SIGUSR1: "Envoy's log-reopen signal does not stop a drain",
  SIGALRM: 'only the kernel timer of the hard deadline ends the drain',
};

/** How long after the deadline the safety timer ends the drain, and then the host's hard deadline. */
const SAFETY_TIMER_GRACE_MS = 500;
const HARD_DEADLINE_GRACE_MS = 1000;

type Command = {
  summary: string;
  flags: Readonly<Record<string, FlagSpec>>;
  run: (flags: ParsedFlags, platform: Platform) => Promise<number>;
};

const COMMANDS: Record<string, Command> = {
  install: {
    summary: 'copy this program into DIR atomically, mode 0755',
    flags: { to: { kind: 'string', placeholder: 'DIR', help: 'target directory, e.g. /config/drainguard' } },
    run: runInstall,
  },
  [DRAIN_SUBCOMMAND]: {
    summary: "drain Envoy through its admin API (Envoy's preStop); always exits 0",
    flags: DRAIN_FLAGS,
    run: runDrain,
  },
  status: {
    summary: 'print Envoy state, version and active connections per listener',
    flags: {
      admin: { ...DRAIN_FLAGS.admin, default: 'unix:/admin/admin.sock' },
      json: { kind: 'boolean', help: 'print JSON instead of a table' },
      'exclude-listener': DRAIN_FLAGS['exclude-listener'],
      'request-timeout': DRAIN_FLAGS['request-timeout'],
    },
    run: runStatus,
  },
  version: { summary: 'print the version', flags: {}, run: async (_flags, platform) => (platform.print('stdout', `${PROGRAM_NAME} ${VERSION}\n`), 0) },
};

function single<T>(flags: ParsedFlags, name: string): T | undefined {
  return flags.get(name)?.[0] as T | undefined;
}

function required<T>(flags: ParsedFlags, name: string): T {
  const value = single<T>(flags, name);
  if (value === undefined) throw new UsageError(`--${name} is required`);
  return value;
}

async function runInstall(flags: ParsedFlags, platform: Platform): Promise<number> {
  const target = required<string>(flags, 'to');
  const installed = installExecutable(platform.files, platform.pid(), platform.executablePath(), target);
  for (const file of installed) platform.print('stdout', `installed ${file.path} (mode ${file.mode.toString(8)})\n`);
  return 0;
}

/** `drain`'s flags (parsed by the drain contract, which the webhook writes them with) as the drain loop's settings. */
function drainSettings(flags: ParsedFlags): { address: AdminAddress; recordPath: string | undefined; settings: DrainSettings } {
  const { admin, excludeListeners, terminationMessagePath, ...timing } = drainArguments(flags);
  const settings: DrainSettings = {
    ...timing,
    adminLabel: admin.text,
    excludeListeners: excludeListeners.map(compileListenerPattern),
  };
  return { address: admin, recordPath: terminationMessagePath, settings };
}

async function runDrain(flags: ParsedFlags, platform: Platform): Promise<number> {
  const { address, recordPath, settings } = drainSettings(flags);
  const sink = openLogSink(platform, platform.env(LOG_TARGET_ENV));
  const log = createLog(sink);
  const drain = new DrainRun(settings, {
    admin: createAdminClient(platform, address),
    clock: platformClock(platform),
    log,
    ...(recordPath === undefined ? {} : { record: recordFileSink(platform, recordPath) }),
  });
  // Belt and braces: whatever happens inside (a bug, an admin call that outlives its timeout), the hook
  // returns by the deadline; and should JavaScript itself be stuck, the host ends the process. Both
  // timers take any deadline the flags accept (platform.ts: no overflow above 2^31-1 ms).
  const safetyTimer = platform.setTimer(settings.deadlineMs + SAFETY_TIMER_GRACE_MS, () => {
    drain.finish('deadline', { note: 'safety timer' });
    sink.close();
    platform.exit(0);
  });
  const hardDeadline = platform.armHardDeadline(settings.deadlineMs + HARD_DEADLINE_GRACE_MS);
  platform.onSignals((signal) => {
    if (!ENDING_SIGNALS.has(signal)) {
      log('signal', { signal, action: 'ignored', why: IGNORED_BECAUSE[signal] });
      return;
    }
    drain.finish('signal', { signal });
    sink.close();
    platform.exit(0);
  });
  try {
    await drain.run();
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
  const address = required<AdminAddress>(flags, 'admin');
  const timeoutMs = required<number>(flags, 'request-timeout');
  const excludes = (flags.get('exclude-listener') ?? []).map((pattern) => compileListenerPattern(pattern as string));
  try {
    const status = await readStatus(createAdminClient(platform, address), address.text, excludes, timeoutMs);
    platform.print('stdout', single<boolean>(flags, 'json') ? `${JSON.stringify(status, null, 2)}\n` : renderStatusTable(status));
    return 0;
  } catch (error) {
    if (!(error instanceof AdminCallError)) throw error;
    platform.print('stderr', `${PROGRAM_NAME} status: cannot read Envoy status from ${address.text}: ${error.message}\n`);
    return 1;
  }
}

export function usage(): string {
  const sections = Object.entries(COMMANDS).map(([name, command]) => {
    const flags = flagUsage(command.flags);
    return `${PROGRAM_NAME} ${name}: ${command.summary}${flags ? `\n${flags}` : ''}`;
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
    if (error instanceof UsageError) {
      platform.print('stderr', `${PROGRAM_NAME} ${name}: ${error.message}\nRun "${PROGRAM_NAME} help" for usage.\n`);
      return 2;
    }
    if (error instanceof InstallError) {
      platform.print('stderr', `${PROGRAM_NAME} install: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}
