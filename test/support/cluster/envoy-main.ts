/**
 * An Envoy container of the test cluster: the admin simulator as its own process, started by the
 * kubelet stand-in inside the pod's network namespace. Its one argument is the simulator's options as
 * JSON; it prints `ready` once its sockets listen, and dies as Envoy does on SIGTERM (at once: Envoy
 * does not drain on a signal, which is why the preStop hook drains it).
 */
import { chownSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { EnvoyAdminSimulator, type SimulatorOptions } from '../envoy-admin-simulator';

/** The simulator's options, and the user Envoy runs as: its admin socket belongs to that user, as Envoy's own would. */
export interface EnvoyContainerOptions extends SimulatorOptions {
  user: { uid: number; gid: number };
}

async function main(): Promise<void> {
  const options = JSON.parse(process.argv[2] ?? '{}') as EnvoyContainerOptions;
  if (options.unixSocketPath) {
    // A socket's path must fit in sun_path (108 bytes), and the volume's path on the host may not (the
    // pod's own, /admin/admin.sock, always does): the socket is bound from inside its folder.
    process.chdir(dirname(options.unixSocketPath));
    options.unixSocketPath = `./${basename(options.unixSocketPath)}`;
  }
  const simulator = await EnvoyAdminSimulator.start(options);
  if (options.unixSocketPath) chownSync(options.unixSocketPath, options.user.uid, options.user.gid);
  const stop = () => void simulator.stop().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.stdout.write(`ready ${simulator.adminAddress}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`envoy simulator: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
