/**
 * Envoy's existing preStop hook: drainguard replaces only hooks it recognises as the
 * shutdown-manager handshake (or its own). Anything else is the user's and is kept.
 */
import { parseDrainArguments, type DrainArguments } from '../../drain-contract';
import type { LifecycleHandler } from '../../k8s';
import { basename, isDrainguardHook, type SidecarRef } from './detect';

// Which hook is drainguard's drain is also what makes a container Envoy on a later pass (detect.ts).
export { isDrainguardHook };
import { resolvePort } from './ports';

export type PreStopKind =
  /** No preStop at all. */
  | 'none'
  /** drainguard's own exec hook (a previous run). */
  | 'drainguard'
  /** A shutdown-manager handshake or a stand-in for one: replaced. */
  | 'shutdown-manager'
  /** Something else: kept, and the drain is not installed. */
  | 'user'
  /**
   * Something else that replaced drainguard's drain after it was installed (the status annotation
   * records the preStop): a later webhook's doing on re-invocation. Replaced back, with a warning.
   */
  | 'replaced-drain';

/** Ports the shutdown-manager serves its blocking endpoints on: Contour 8090, Envoy Gateway 19002, or declared. */
const KNOWN_SHUTDOWN_PORTS = [8090, 19002];

const SERVE_PORT = /^--serve-port[= ](\d+)$/;

/** Whether the shutdown-manager serves on `port`: a known port, one it declares, or its --serve-port. */
function isSidecarPort(port: number, sidecars: readonly SidecarRef[]): boolean {
  if (KNOWN_SHUTDOWN_PORTS.includes(port)) return true;
  for (const { container } of sidecars) {
    if ((container.ports ?? []).some((declared) => declared.containerPort === port)) return true;
    for (const arg of [...(container.command ?? []), ...(container.args ?? [])]) {
      const serve = SERVE_PORT.exec(arg);
      if (serve && Number(serve[1]) === port) return true;
    }
  }
  return false;
}

function resolveSidecarPort(port: string | number, sidecars: readonly SidecarRef[]): number | undefined {
  if (typeof port === 'string' && !/^[0-9]+$/.test(port)) {
    for (const sidecar of sidecars) {
      const resolved = resolvePort(port, sidecar.container);
      if (resolved !== undefined) return resolved;
    }
    return undefined;
  }
  return Number(port);
}

/**
 * `sh -c "sleep 300"`, Bitnami's `sh -c "sleep 300; kill 1"`, and the bash equivalents. No two
 * adjacent parts of the pattern can match the same text (`1\s*;?\s*` could), so a long script is
 * matched in linear time.
 */
const SLEEP_SCRIPT = /^\s*sleep\s+\d+(\.\d+)?s?\s*((;|&&)\s*kill\s+(-\w+\s+)?1\s*(;\s*)?)?$/;

function isSleepScript(command: readonly string[]): boolean {
  if (command.length !== 3 || command[1] !== '-c') return false;
  if (!['sh', 'bash', 'ash', 'dash'].includes(basename(command[0] as string))) return false;
  return SLEEP_SCRIPT.test(command[2] as string);
}

/** `contour envoy shutdown` / `envoy-gateway envoy shutdown` placed on Envoy itself. */
function isShutdownCommand(command: readonly string[]): boolean {
  const program = basename(command[0] ?? '');
  return (program === 'contour' || program === 'envoy-gateway') && command[1] === 'envoy' && command[2] === 'shutdown';
}

export function classifyPreStop(handler: LifecycleHandler | undefined, sidecars: readonly SidecarRef[]): PreStopKind {
  if (handler === undefined) return 'none';
  if (isDrainguardHook(handler)) return 'drainguard';
  const command = handler.exec?.command;
  if (command !== undefined && (isSleepScript(command) || isShutdownCommand(command))) return 'shutdown-manager';
  if (handler.sleep !== undefined) return 'shutdown-manager';
  const httpGet = handler.httpGet;
  if (httpGet !== undefined && (httpGet.path === '/shutdown' || httpGet.path === '/shutdown/ready')) {
    const port = resolveSidecarPort(httpGet.port, sidecars);
    if (port !== undefined && isSidecarPort(port, sidecars)) return 'shutdown-manager';
  }
  return 'user';
}

/** The `--admin` argument of drainguard's own hook, if there is one. */
export function drainguardHookAdmin(handler: LifecycleHandler | undefined): string | undefined {
  if (!isDrainguardHook(handler)) return undefined;
  const command = handler?.exec?.command ?? [];
  const at = command.indexOf('--admin');
  return at === -1 ? undefined : command[at + 1];
}

/**
 * The settings of drainguard's own hook from an earlier run, read with the drain program's own parser;
 * `unreadable` when the program would refuse them (a hand-edited hook).
 */
export function drainguardHookSettings(handler: LifecycleHandler | undefined): { settings: DrainArguments } | { unreadable: string } | undefined {
  if (!isDrainguardHook(handler)) return undefined;
  try {
    return { settings: parseDrainArguments((handler?.exec?.command ?? []).slice(2)) };
  } catch (error) {
    return { unreadable: (error as Error).message };
  }
}

/** One-line description of a hook for warnings. */
export function describeHandler(handler: LifecycleHandler): string {
  if (handler.exec) return `exec ${JSON.stringify(handler.exec.command ?? [])}`;
  if (handler.httpGet) return `httpGet ${handler.httpGet.path ?? '/'} :${handler.httpGet.port}`;
  if (handler.tcpSocket) return `tcpSocket :${handler.tcpSocket.port}`;
  if (handler.sleep) return `sleep ${handler.sleep.seconds}s`;
  return 'an unknown handler';
}
