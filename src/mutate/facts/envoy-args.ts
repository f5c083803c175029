/**
 * Reading Envoy's command line the way Envoy does. Envoy's parser (TCLAP) treats a space as the
 * flag/value delimiter, so one argv element may hold a flag and its value: Contour passes
 * `--service-cluster $(CONTOUR_NAMESPACE)` and Envoy Gateway `--config-yaml admin: …` as single
 * elements. `--flag=value` is accepted too.
 */
import { parse as parseYaml } from 'yaml';
import type { Container } from '../../k8s';

/** `--flag value` (or `-f value`) in one element: TCLAP splits it at the first whitespace. */
const SPACED_FLAG = /^(-{1,2}[A-Za-z][\w-]*)\s+([\s\S]*)$/;
const EQUALS_FLAG = /^(--[A-Za-z][\w-]*)=([\s\S]*)$/;

/**
 * Calls `visit` with each flag and value token of the container's command + args, in order, until it
 * returns true: a reader that finds its flag early stops there.
 */
function visitTokens(container: Container, visit: (token: string) => boolean): void {
  if (!visitListTokens(container.command, visit)) visitListTokens(container.args, visit);
}

/** `visitTokens` over one list; true when `visit` stopped it. */
function visitListTokens(list: readonly string[] | undefined, visit: (token: string) => boolean): boolean {
  if (list === undefined) return false;
  for (const element of list) {
    if (typeof element !== 'string') continue;
    // Only a flag can hold a value; most elements (the program, plain values) are taken as they are.
    const split = element.startsWith('-') ? (SPACED_FLAG.exec(element) ?? EQUALS_FLAG.exec(element)) : null;
    if (split ? visit(split[1] as string) || visit(split[2] as string) : visit(element)) return true;
  }
  return false;
}

/** A container's command + args split into flag and value tokens. */
export function envoyTokens(container: Container): string[] {
  const tokens: string[] = [];
  visitTokens(container, (token) => {
    tokens.push(token);
    return false;
  });
  return tokens;
}

/** The flags of Envoy's that drainguard reads, each with its aliases. */
const ENVOY_FLAGS = {
  /** The bootstrap file. */
  configPath: ['-c', '--config-path'],
  /** An inline bootstrap, which may name the admin listener. */
  configYaml: ['--config-yaml'],
  /** Envoy Gateway renders it from v1.2 on (components.ts). */
  drainTimeSeconds: ['--drain-time-s'],
} as const satisfies Record<string, readonly string[]>;

/** The value of each flag drainguard reads: the token after its first occurrence (`-c X`, `--config-path X`, `--config-path=X`). */
export type EnvoyArgs = { -readonly [K in keyof typeof ENVOY_FLAGS]?: string };

type EnvoyFlag = keyof typeof ENVOY_FLAGS;
const ENVOY_FLAG_KEYS = Object.keys(ENVOY_FLAGS) as EnvoyFlag[];

/** Whether a string element of `list` contains one of `names`. */
function mentionsAny(list: readonly string[] | undefined, names: readonly string[]): boolean {
  if (list === undefined) return false;
  for (const element of list) {
    if (typeof element !== 'string') continue;
    for (const name of names) if (element.includes(name)) return true;
  }
  return false;
}

/** Envoy's flags: each one its command line mentions, read from its tokens. */
export function readEnvoyArgs(container: Container): EnvoyArgs {
  const found: EnvoyArgs = {};
  for (const key of ENVOY_FLAG_KEYS) {
    const names = ENVOY_FLAGS[key];
    // A token is an element or a part of one, so a name that no element contains is not there: most
    // command lines lack most flags, and one that has none of them is answered without splitting any element.
    if (!mentionsAny(container.command, names) && !mentionsAny(container.args, names)) continue;
    const value = valueAfter(container, names);
    if (value !== undefined) found[key] = value;
  }
  return found;
}

/** The token after the first of `names` among the container's tokens, read up to it and no further. */
function valueAfter(container: Container, names: readonly string[]): string | undefined {
  let flagSeen = false;
  let value: string | undefined;
  visitTokens(container, (token) => {
    if (flagSeen) {
      value = token;
      return true;
    }
    flagSeen = names.includes(token);
    return false;
  });
  return value;
}

/** Envoy's bootstrap file, when it is an absolute path. */
export function configPath(args: EnvoyArgs): string | undefined {
  const path = args.configPath;
  return path !== undefined && path.startsWith('/') ? path : undefined;
}

/** A socket address (host, port) from an Envoy bootstrap, as the loopback address that reaches it. */
export function loopbackAddressFor(host: string, port: number): string | undefined {
  if (!Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  if (host === '127.0.0.1' || host === '0.0.0.0' || host === 'localhost') return `http://127.0.0.1:${port}`;
  if (host === '::1' || host === '::' || host === '[::1]' || host === '[::]') return `http://[::1]:${port}`;
  return undefined;
}

/** Where the admin listener of an inline bootstrap (`--config-yaml`) listens. */
export type BootstrapAdmin =
  | { kind: 'tcp'; address: string; bindHost: string; port: number }
  | { kind: 'unix'; address: string }
  /** An admin section drainguard cannot use (a remote bind address, an abstract socket...). */
  | { kind: 'unusable'; description: string };

interface AdminSection {
  address?: {
    socket_address?: { address?: unknown; port_value?: unknown };
    pipe?: { path?: unknown };
  };
}

/** The admin listener of an inline bootstrap (`--config-yaml`'s value). */
export function bootstrapAdmin(yamlText: string | undefined): BootstrapAdmin | undefined {
  if (yamlText === undefined) return undefined;
  let bootstrap: unknown;
  try {
    bootstrap = parseYaml(yamlText);
  } catch {
    return undefined;
  }
  if (typeof bootstrap !== 'object' || bootstrap === null) return undefined;
  const admin = (bootstrap as { admin?: AdminSection }).admin;
  const socket = admin?.address?.socket_address;
  const pipe = admin?.address?.pipe;
  if (socket !== undefined) {
    const host = String(socket.address ?? '');
    const port = Number(socket.port_value);
    const address = loopbackAddressFor(host, port);
    if (address === undefined) return { kind: 'unusable', description: `socket_address ${host}:${String(socket.port_value)}` };
    return { kind: 'tcp', address, bindHost: host, port };
  }
  if (pipe !== undefined) {
    const path = String(pipe.path ?? '');
    if (!path.startsWith('/')) return { kind: 'unusable', description: `pipe ${path}` };
    return { kind: 'unix', address: `unix:${path}` };
  }
  return undefined;
}
