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
  for (const list of [container.command ?? [], container.args ?? []]) {
    for (const element of list) {
      if (typeof element !== 'string') continue;
      // Only a flag can hold a value; most elements (the program, plain values) are taken as they are.
      const split = element.startsWith('-') ? (SPACED_FLAG.exec(element) ?? EQUALS_FLAG.exec(element)) : null;
      if (split ? visit(split[1] as string) || visit(split[2] as string) : visit(element)) return;
    }
  }
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

/** The value of the first occurrence of any of `names` (`-c X`, `--config-path X`, `--config-path=X`): the token after it. */
export function flagValue(container: Container, names: readonly string[]): string | undefined {
  // A token is an element or a part of one, so a name that no element contains is not there: most
  // command lines lack `--config-yaml`, and are answered without splitting any element.
  const named = (list: readonly string[] | undefined): boolean =>
    (list ?? []).some((element) => typeof element === 'string' && names.some((name) => element.includes(name)));
  if (!named(container.command) && !named(container.args)) return undefined;
  let value: string | undefined;
  let valueIsNext = false;
  visitTokens(container, (token) => {
    if (valueIsNext) {
      value = token;
      return true;
    }
    valueIsNext = names.includes(token);
    return false;
  });
  return value;
}

/** Envoy's bootstrap file (`-c` / `--config-path`), when it is an absolute path. */
export function configPath(container: Container): string | undefined {
  const path = flagValue(container, ['-c', '--config-path']);
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

export function bootstrapAdmin(container: Container): BootstrapAdmin | undefined {
  const yamlText = flagValue(container, ['--config-yaml']);
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
