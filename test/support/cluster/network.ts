/**
 * The test cluster's network, made of Linux's own parts (iproute2): a bridge on this host whose address
 * is the "host" every component reaches (kube-apiserver binds there), and one network namespace per
 * pod sandbox, joined to the bridge by a veth pair, with the pod's IP on its `eth0`. Nothing of it is
 * routed anywhere but between this host and those namespaces.
 *
 * Each cluster takes its own /16, 10.<slot>.0.0/16, and names everything after it (`dgk<slot>`,
 * `dgk<slot>-<n>`), so test runs in parallel (jest workers, other checkouts, `npm run cluster:up`) never
 * share an address, a port or a name: the kernel's refusal of a second bridge of the same name is the
 * allocation. A slot whose owner process died (a run killed before its cleanup) is reclaimed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pidAlive } from './processes';

const SLOTS = { first: 100, last: 199 };
/** Where each slot records its owner's pid (under /run: gone at reboot, as the bridges are). */
const OWNERS = '/run/drainguard-cluster';

function ip(args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}


/** The network namespaces iproute2 knows, by name. */
function namespaces(): string[] {
  const out = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout ?? '';
  return out.split('\n').map((line) => line.split(' ')[0]!).filter(Boolean);
}

/** Removes a slot's bridge and namespaces (veths go with their namespace). */
function removeSlot(slot: number): void {
  const prefix = `dgk${slot}-`;
  for (const ns of namespaces().filter((n) => n.startsWith(prefix))) spawnSync('ip', ['netns', 'delete', ns]);
  spawnSync('ip', ['link', 'delete', `dgk${slot}`], { stdio: 'ignore' });
  rmSync(join(OWNERS, String(slot)), { force: true });
}

/** Reclaims slots whose owner is gone. */
function reclaimAbandoned(): void {
  let entries: string[] = [];
  try {
    entries = readdirSync(OWNERS);
  } catch {
    return;
  }
  for (const entry of entries) {
    const slot = Number(entry);
    if (!Number.isInteger(slot)) continue;
    const owner = Number(readFileSync(join(OWNERS, entry), 'utf8'));
    if (!pidAlive(owner)) removeSlot(slot);
  }
}

/** Is any of this host's routes inside 10.<slot>.0.0/16 (a network we must not shadow)? */
function slotInUse(slot: number): boolean {
  const routes = ip(['-4', 'route', 'show', 'table', 'all']);
  return routes.split('\n').some((line) => line.startsWith(`10.${slot}.`) || line.includes(` 10.${slot}.`));
}

export interface PodSandbox {
  /** The network namespace's name (`ip netns exec <name> …`). */
  namespace: string;
  ip: string;
}

export interface ClusterNetwork {
  slot: number;
  bridge: string;
  /** This host's address on the bridge: where kube-apiserver listens and pods reach the host. */
  hostAddress: string;
  /** A loopback address of this cluster's own (127.<slot>.0.1), for what only this host reaches (etcd). */
  loopbackAddress: string;
  /** The pod network kube-controller-manager splits into node ranges (`--cluster-cidr`). */
  clusterCidr: string;
  /** The Service range (`--service-cluster-ip-range`); nothing routes it (there is no kube-proxy). */
  serviceCidr: string;
  /** A namespace with `ip` on its eth0, joined to the bridge; the default route is the host. */
  addSandbox(ip: string): PodSandbox;
  removeSandbox(sandbox: PodSandbox): void;
  /** Removes every sandbox and the bridge. */
  remove(): void;
}

export function createClusterNetwork(): ClusterNetwork {
  mkdirSync(OWNERS, { recursive: true });
  reclaimAbandoned();
  for (let slot = SLOTS.first; slot <= SLOTS.last; slot++) {
    if (slotInUse(slot)) continue;
    const bridge = `dgk${slot}`;
    if (spawnSync('ip', ['link', 'add', 'name', bridge, 'type', 'bridge'], { stdio: 'ignore' }).status !== 0) continue;
    writeFileSync(join(OWNERS, String(slot)), String(process.pid));
    return networkOf(slot, bridge);
  }
  throw new Error(`no free test network: every slot 10.${SLOTS.first}-${SLOTS.last}.0.0/16 is taken (see ip link | grep dgk)`);
}

function networkOf(slot: number, bridge: string): ClusterNetwork {
  const hostAddress = `10.${slot}.0.1`;
  ip(['addr', 'add', `${hostAddress}/16`, 'dev', bridge]);
  ip(['link', 'set', bridge, 'up']);
  let next = 0;
  const sandboxes = new Set<string>();
  return {
    slot,
    bridge,
    hostAddress,
    loopbackAddress: `127.${slot}.0.1`,
    clusterCidr: `10.${slot}.128.0/17`,
    serviceCidr: `10.${slot}.64.0/20`,
    addSandbox(podIp) {
      const n = next++;
      const namespace = `dgk${slot}-${n}`;
      const hostEnd = `dgk${slot}v${n}`;
      ip(['netns', 'add', namespace]);
      sandboxes.add(namespace);
      // A veth of the same name may outlive an earlier cluster of this slot: the kernel frees a deleted
      // namespace (and its veth pairs) only once its last process is gone. The slot is ours now.
      spawnSync('ip', ['link', 'delete', hostEnd], { stdio: 'ignore' });
      ip(['link', 'add', hostEnd, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', namespace]);
      ip(['link', 'set', hostEnd, 'master', bridge, 'up']);
      ip(['-n', namespace, 'addr', 'add', `${podIp}/16`, 'dev', 'eth0']);
      ip(['-n', namespace, 'link', 'set', 'eth0', 'up']);
      ip(['-n', namespace, 'link', 'set', 'lo', 'up']);
      ip(['-n', namespace, 'route', 'add', 'default', 'via', hostAddress]);
      return { namespace, ip: podIp };
    },
    removeSandbox(sandbox) {
      spawnSync('ip', ['netns', 'delete', sandbox.namespace]);
      sandboxes.delete(sandbox.namespace);
    },
    remove() {
      for (const namespace of sandboxes) spawnSync('ip', ['netns', 'delete', namespace]);
      sandboxes.clear();
      removeSlot(slot);
    },
  };
}
