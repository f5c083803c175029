/**
 * Envoy admin addresses as the drain program accepts them. They become exec arguments of a hook
 * that runs inside the pod, so only two shapes are allowed: a unix socket path with a conservative
 * charset, or a loopback HTTP address. Never another host: the drain must stay reachable from inside
 * the pod only (GHSA-mjp8-x484-pm3r).
 */

export const ADMIN_ADDRESS_FORM =
  'unix:/absolute/path (letters, digits, ".", "_", "-", "/"; no ".." segment) or http://127.0.0.1:PORT, http://[::1]:PORT, http://localhost:PORT';

/** sun_path holds 108 bytes including the terminating NUL. */
const MAX_UNIX_SOCKET_PATH = 107;
const UNIX_ADDRESS = /^unix:(\/[A-Za-z0-9._-]+)+$/;
const LOOPBACK_HTTP_ADDRESS = /^http:\/\/(127\.0\.0\.1|\[::1\]|localhost):([1-9][0-9]{0,4})$/;

export type ParsedAdminAddress =
  | { kind: 'unix'; address: string; path: string }
  | { kind: 'tcp'; address: string; port: number };

export function parseAdminAddress(value: string): ParsedAdminAddress | undefined {
  if (UNIX_ADDRESS.test(value)) {
    const path = value.slice('unix:'.length);
    const segments = path.split('/').slice(1);
    if (segments.some((segment) => segment === '.' || segment === '..')) return undefined;
    if (path.length > MAX_UNIX_SOCKET_PATH) return undefined;
    return { kind: 'unix', address: value, path };
  }
  const http = LOOPBACK_HTTP_ADDRESS.exec(value);
  if (http) {
    const port = Number(http[2]);
    if (port > 65535) return undefined;
    return { kind: 'tcp', address: value, port };
  }
  return undefined;
}

/** A socket address (host, port) from an Envoy bootstrap, as the loopback address that reaches it. */
export function loopbackAddressFor(host: string, port: number): string | undefined {
  if (!Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  if (host === '127.0.0.1' || host === '0.0.0.0' || host === 'localhost') return `http://127.0.0.1:${port}`;
  if (host === '::1' || host === '::' || host === '[::1]' || host === '[::]') return `http://[::1]:${port}`;
  return undefined;
}

/** Flag values such as Contour's `--admin-address=/admin/admin.sock` or `127.0.0.1:9001`. */
export function adminAddressFromFlag(value: string): string | undefined {
  if (value.startsWith('/')) return `unix:${value}`;
  if (value.startsWith('unix:') || value.startsWith('http://')) return value;
  const hostPort = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(value);
  if (hostPort) return loopbackAddressFor(hostPort[1] as string, Number(hostPort[2]));
  return undefined;
}
