/**
 * The admin-address rule: where the drain may reach Envoy's admin API (a unix socket or a loopback
 * literal), the one check the webhook, the drain program and the CLI's loopback rule apply.
 * Part of the drain contract (index.ts): imports nothing outside this folder and nothing from Node.
 */
import { unixSocketPathProblem } from './paths';

/**
 * Where Envoy's admin API is. It becomes an exec argument of a hook inside the pod, and draining
 * must only ever be possible from inside the pod (docs/design.md, "Security model"), so only two
 * shapes exist: a unix socket path, or a loopback IP literal that is connected to as it is, never
 * looked up. `text` is the address as written; `host` is the literal to connect to.
 */
export type AdminAddress =
  | { kind: 'unix'; text: string; path: string }
  | { kind: 'tcp'; text: string; host: string; port: number };

export type AdminAddressReading = { ok: true; address: AdminAddress } | { ok: false; problem: string };

export const ADMIN_ADDRESS_FORM =
  'unix:/absolute/path (letters, digits, ".", "_", "-", "/"; no ".." segment, no "." segment; at most 107 bytes) ' +
  'or http://127.0.0.1:PORT (any 127.x.y.z in plain decimal), http://[::1]:PORT, http://localhost:PORT';

/** A decimal octet as an IP literal is written: no sign, no leading zero (`010` is octal to some parsers). */
const OCTET = /^(0|[1-9][0-9]{0,2})$/;
const PORT = /^[1-9][0-9]{0,4}$/;

/** The IP literal to connect to for `host`, or undefined when it is not a loopback literal. */
function loopbackLiteral(host: string): string | undefined {
  if (host === '[::1]') return '::1';
  // Mapped, never resolved: a hosts file must not be able to send the drain anywhere else.
  if (host === 'localhost') return '127.0.0.1';
  const octets = host.split('.');
  if (octets.length !== 4 || octets[0] !== '127') return undefined;
  return octets.every((octet) => OCTET.test(octet) && Number(octet) <= 255) ? host : undefined;
}

/** Checks an admin address: the one check the webhook and the program both apply. */
export function readAdminAddress(text: string): AdminAddressReading {
  if (text.startsWith('unix:')) {
    const path = text.slice('unix:'.length);
    const problem = unixSocketPathProblem(path);
    return problem === undefined ? { ok: true, address: { kind: 'unix', text, path } } : { ok: false, problem };
  }
  if (!text.startsWith('http://')) return { ok: false, problem: 'expected unix:/PATH or http://HOST:PORT with a loopback HOST' };
  const hostAndPort = text.slice('http://'.length);
  const portColon = hostAndPort.startsWith('[') ? hostAndPort.indexOf(']') + 1 : hostAndPort.indexOf(':');
  if (portColon <= 0 || hostAndPort[portColon] !== ':') return { ok: false, problem: 'expected http://HOST:PORT, nothing before or after' };
  const host = hostAndPort.slice(0, portColon);
  const portText = hostAndPort.slice(portColon + 1);
  const literal = loopbackLiteral(host);
  if (literal === undefined) {
    return {
      ok: false,
      problem: `${host.length > 64 ? `${host.slice(0, 61)}...` : host} is not a loopback IP literal (127.0.0.0/8 in plain decimal, [::1], or localhost)`,
    };
  }
  if (!PORT.test(portText) || Number(portText) > 65535) {
    return { ok: false, problem: 'the port must be a whole number from 1 to 65535, without leading zeros' };
  }
  return { ok: true, address: { kind: 'tcp', text, host: literal, port: Number(portText) } };
}
