/**
 * Envoy's existing preStop hook, classified once: drainguard's own drain from an earlier pass (read
 * with the drain program's own parser), the shutdown-manager handshake or a stand-in for one, or the
 * user's (docs/design.md, "The preStop hook and its arguments").
 */
import { DRAIN_SUBCOMMAND, parseDrainArguments, PROGRAM_NAME, type DrainArguments } from '../../drain-contract';
import type { LifecycleHandler } from '../../k8s';
import { resolvePort } from './ports';
import type { SidecarRef } from './sidecars';
import { basename } from './words';

/** Envoy's preStop as drainguard reads it. */
export type EnvoyPreStop =
  /** No preStop at all. */
  | { kind: 'none' }
  /**
   * drainguard's own exec hook (a previous run): its `--admin`, and its settings as the drain program
   * reads them, or why the program would refuse them (a hand-edited hook).
   */
  | { kind: 'drainguard'; admin: string | undefined; reading: { settings: DrainArguments } | { unreadable: string } }
  /** A shutdown-manager handshake or a stand-in for one. */
  | { kind: 'shutdown-manager'; description: string }
  /** Something else: the user's. */
  | { kind: 'user'; description: string };

/** Whether a preStop is drainguard's drain (`…/envoy-shutdown drain …`). It also shows Envoy on a later pass (identity.ts). */
export function isDrainguardHook(handler: LifecycleHandler | undefined): boolean {
  const command = handler?.exec?.command;
  return command !== undefined && (command[0] ?? '').endsWith(`/${PROGRAM_NAME}`) && command[1] === DRAIN_SUBCOMMAND;
}

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

function isShutdownManagerHook(handler: LifecycleHandler, sidecars: readonly SidecarRef[]): boolean {
  const command = handler.exec?.command;
  if (command !== undefined && (isSleepScript(command) || isShutdownCommand(command))) return true;
  if (handler.sleep !== undefined) return true;
  const httpGet = handler.httpGet;
  if (httpGet !== undefined && (httpGet.path === '/shutdown' || httpGet.path === '/shutdown/ready')) {
    const port = resolveSidecarPort(httpGet.port, sidecars);
    if (port !== undefined && isSidecarPort(port, sidecars)) return true;
  }
  return false;
}

/** drainguard's own hook: its `--admin` argument, and its settings read with the drain program's own parser. */
function readDrainguardHook(command: readonly string[]): Omit<Extract<EnvoyPreStop, { kind: 'drainguard' }>, 'kind'> {
  const at = command.indexOf('--admin');
  const admin = at === -1 ? undefined : command[at + 1];
  try {
    return { admin, reading: { settings: parseDrainArguments(command.slice(2)) } };
  } catch (error) {
    return { admin, reading: { unreadable: (error as Error).message } };
  }
}

export function readEnvoyPreStop(handler: LifecycleHandler | undefined, sidecars: readonly SidecarRef[]): EnvoyPreStop {
  if (handler === undefined) return { kind: 'none' };
  if (isDrainguardHook(handler)) return { kind: 'drainguard', ...readDrainguardHook(handler.exec?.command ?? []) };
  return { kind: isShutdownManagerHook(handler, sidecars) ? 'shutdown-manager' : 'user', description: describeHandler(handler) };
}

/** One-line description of a hook for warnings. */
export function describeHandler(handler: LifecycleHandler): string {
  if (handler.exec) return `exec ${JSON.stringify(handler.exec.command ?? [])}`;
  if (handler.httpGet) return `httpGet ${handler.httpGet.path ?? '/'} :${handler.httpGet.port}`;
  if (handler.tcpSocket) return `tcpSocket :${handler.tcpSocket.port}`;
  if (handler.sleep) return `sleep ${handler.sleep.seconds}s`;
  return 'an unknown handler';
}
