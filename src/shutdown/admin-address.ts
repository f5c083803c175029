/**
 * Where Envoy's admin API is. Draining must only ever be triggered from inside the pod (docs/design.md,
 * "Security model"; GHSA-mjp8-x484-pm3r), so only a unix socket or a loopback TCP address is accepted; the program must
 * never be pointed at — or usable against — another host.
 */
export type AdminAddress =
  | { kind: 'unix'; path: string }
  | { kind: 'tcp'; host: string; port: number };

export class AdminAddressError extends Error {}

const IPV4_LOOPBACK = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

export function parseAdminAddress(text: string): AdminAddress {
  if (text.startsWith('unix:')) {
    const path = text.slice('unix:'.length);
    if (!path.startsWith('/') || path.includes('\0')) {
      throw new AdminAddressError(`admin address ${JSON.stringify(text)}: a unix socket needs an absolute path, e.g. unix:/admin/admin.sock`);
    }
    return { kind: 'unix', path };
  }
  const match = /^http:\/\/(\[::1\]|[^/:[\]]+):(\d{1,5})\/?$/.exec(text);
  if (!match) {
    throw new AdminAddressError(
      `admin address ${JSON.stringify(text)}: expected unix:/PATH or http://127.0.0.1:PORT (loopback only)`,
    );
  }
  const host = match[1] as string;
  const port = Number(match[2]);
  if (port < 1 || port > 65535) throw new AdminAddressError(`admin address ${JSON.stringify(text)}: port out of range`);
  if (host === '[::1]') return { kind: 'tcp', host: '::1', port };
  // `localhost` is pinned to 127.0.0.1 instead of resolved: a tampered /etc/hosts must not redirect the drain.
  if (host === 'localhost') return { kind: 'tcp', host: '127.0.0.1', port };
  const octets = IPV4_LOOPBACK.exec(host);
  if (octets && octets.slice(1).every((o) => Number(o) <= 255)) return { kind: 'tcp', host, port };
  throw new AdminAddressError(`admin address ${JSON.stringify(text)}: ${host} is not a loopback address; only 127.0.0.0/8, [::1] or a unix socket are allowed`);
}

export function describeAdminAddress(address: AdminAddress): string {
  if (address.kind === 'unix') return `unix:${address.path}`;
  return address.host.includes(':') ? `http://[${address.host}]:${address.port}` : `http://${address.host}:${address.port}`;
}
