/**
 * What the kubelet stand-in needs to play an Envoy container with the admin simulator: where Envoy's
 * admin API listens, read the way Envoy reads it, from its bootstrap — the `--config-yaml` argument
 * (Envoy Gateway), or the file `-c` names when a ConfigMap provides it, or the bootstrap `contour
 * bootstrap` writes (its `--admin-address` flag, `/admin/admin.sock` by default; `--admin-port` on
 * 127.0.0.1 before Contour v1.19.0) — the Envoy release its image tag names, and a listener per TCP
 * container port. Independent of drainguard's own reading of the pod: this decides where the simulated
 * Envoy listens, drainguard's preStop must find it.
 */
import { parse } from 'yaml';

export type AdminAddress = { unixPath: string } | { host: string; port: number };

interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  ports?: { containerPort: number; protocol?: string }[];
  volumeMounts?: { name: string; mountPath: string; subPath?: string }[];
}

/**
 * The value of `--flag value`, `--flag=value` or, in one argument, `--flag value` (Envoy's TCLAP command
 * line splits an argument at its first space, the delimiter of envoyproxy/envoy
 * source/server/options_impl.cc's `TCLAP::CmdLine cmd("envoy", ' ', …)`; Envoy Gateway passes its
 * bootstrap as one `--config-yaml …` argument).
 */
function flagValue(args: readonly string[], ...names: string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    for (const name of names) {
      if (args[i] === name) return args[i + 1];
      if (args[i]!.startsWith(`${name}=`) || args[i]!.startsWith(`${name} `)) return args[i]!.slice(name.length + 1);
    }
  }
  return undefined;
}

/** `admin.address` of a bootstrap (YAML or JSON): a socket address or a pipe. */
export function adminOfBootstrap(text: string): AdminAddress | undefined {
  let bootstrap: { admin?: { address?: { socket_address?: { address?: string; port_value?: number }; pipe?: { path?: string } } } };
  try {
    bootstrap = parse(text) as typeof bootstrap;
  } catch {
    return undefined;
  }
  const address = bootstrap?.admin?.address;
  if (address?.pipe?.path) return { unixPath: address.pipe.path };
  const socket = address?.socket_address;
  if (socket?.address && socket.port_value !== undefined) return { host: socket.address, port: Number(socket.port_value) };
  return undefined;
}

function contourTagBefore119(image: string | undefined): boolean {
  const match = /:v1\.(\d+)\./.exec(image ?? '');
  return match !== null && Number(match[1]) < 19;
}

/**
 * Envoy's admin address for `envoy` in a pod with `initContainers`; `readConfigFile` gives the text of
 * a file inside the container (from a ConfigMap volume), or undefined when no volume provides it.
 */
export async function envoyAdminAddress(
  envoy: Container,
  initContainers: readonly Container[],
  readConfigFile: (path: string) => Promise<string | undefined>,
): Promise<AdminAddress | undefined> {
  const args = [...(envoy.command ?? []), ...(envoy.args ?? [])];
  const inline = flagValue(args, '--config-yaml');
  if (inline) {
    const admin = adminOfBootstrap(inline);
    if (admin) return admin;
  }
  const path = flagValue(args, '-c', '--config-path');
  const bootstrapper = initContainers.find((c) => [...(c.command ?? []), ...(c.args ?? [])].includes('bootstrap'));
  if (path) {
    const text = await readConfigFile(path);
    if (text !== undefined) return adminOfBootstrap(text);
  }
  if (bootstrapper) {
    const bootArgs = [...(bootstrapper.command ?? []), ...(bootstrapper.args ?? [])];
    const address = flagValue(bootArgs, '--admin-address');
    const port = flagValue(bootArgs, '--admin-port');
    if (address && address.startsWith('/')) return { unixPath: address };
    if (contourTagBefore119(bootstrapper.image)) return { host: address ?? '127.0.0.1', port: Number(port ?? 9001) };
    return { unixPath: address ?? '/admin/admin.sock' };
  }
  return undefined;
}

/** The Envoy release of an image tag (`envoyproxy/envoy:v1.31.2`, `…:distroless-v1.35.1`), when it names one. */
export function envoyVersionOfImage(image: string | undefined): string | undefined {
  return /(\d+\.\d+\.\d+)/.exec((image ?? '').split('@')[0]!.split(':').slice(1).join(':'))?.[1];
}

/** The TCP ports Envoy's listeners accept on, from the container's ports (the admin port excluded). */
export function listenerPorts(envoy: Container, admin: AdminAddress | undefined): number[] {
  const adminPort = admin && 'port' in admin ? admin.port : undefined;
  return (envoy.ports ?? []).filter((p) => (p.protocol ?? 'TCP') === 'TCP' && p.containerPort !== adminPort).map((p) => p.containerPort);
}
