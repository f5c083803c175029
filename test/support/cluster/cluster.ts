/**
 * The whole test cluster: its network (./network), the real control plane (./control-plane), the
 * kubelet stand-in running its nodes (./kubelet), and optionally drainguard installed from the chart
 * by the real helm. One process owns it all (./main): the jest lane's globalSetup starts one per test
 * run, `npm run cluster:up` one to try by hand.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CHART_DIR, helmBinary } from '../helm';
import { NODE } from '../repo';
import { ensureControlPlaneBinaries, kubernetesVersion } from './binaries';
import { API_SERVER_PORT, ControlPlane } from './control-plane';
import { defaultImageCatalog } from './images';
import { KubeletStandIn, type NodeSpec } from './kubelet';
import { createClusterNetwork, type ClusterNetwork } from './network';

/** What a client of the cluster needs, written to `<dir>/cluster.json` once it is ready. */
export interface ClusterInfo {
  /** The owning process: signal it (SIGTERM) to stop the cluster. */
  pid: number;
  dir: string;
  server: string;
  /** system:masters. */
  adminKubeconfig: string;
  kubernetesVersion: string;
  /** The address pods and the API server share (the cluster network's host address). */
  hostAddress: string;
  nodes: string[];
  logs: Record<string, string>;
  /** Where drainguard was installed, when it was. */
  drainguard?: { release: string; namespace: string };
  /** The start's phases, in seconds. */
  timings: Record<string, number>;
}

export interface ClusterOptions {
  dir: string;
  nodes: NodeSpec[];
  /** Install drainguard from the chart (release `drainguard` in `drainguard-system`), as a user would. */
  installDrainguard?: boolean;
  /** The bundled ./envoy-main. */
  envoyMain: string;
  /** Extra kube-apiserver flags (feature gates, …). */
  apiServerArgs?: readonly string[];
  log: (line: string) => void;
}

export const DEFAULT_NODES: NodeSpec[] = [
  { name: 'node-a', labels: { 'topology.kubernetes.io/zone': 'zone-a' } },
  { name: 'node-b', labels: { 'topology.kubernetes.io/zone': 'zone-b' } },
];

export class TestCluster {
  private constructor(
    readonly info: ClusterInfo,
    private readonly network: ClusterNetwork,
    private readonly controlPlane: ControlPlane,
    private readonly kubelet: KubeletStandIn | undefined,
  ) {}

  static async start(options: ClusterOptions): Promise<TestCluster> {
    const timings: Record<string, number> = {};
    let mark = Date.now();
    const phase = (name: string) => {
      timings[name] = (Date.now() - mark) / 1000;
      mark = Date.now();
    };
    mkdirSync(options.dir, { recursive: true, mode: 0o755 });
    const binaries = ensureControlPlaneBinaries(options.log);
    phase('binaries');
    const network = createClusterNetwork();
    let controlPlane: ControlPlane | undefined;
    let kubelet: KubeletStandIn | undefined;
    try {
      controlPlane = await ControlPlane.start({ dir: join(options.dir, 'control-plane'), network, binaries, apiServerArgs: options.apiServerArgs, log: options.log });
      phase('controlPlane');
      const plane = controlPlane;
      kubelet = await KubeletStandIn.start({
        nodes: options.nodes,
        kubeconfigFor: (identity, stem) => plane.kubeconfigFor(identity, stem),
        network,
        dir: join(options.dir, 'kubelet'),
        images: defaultImageCatalog(),
        envoyMain: options.envoyMain,
        node: NODE,
        kubernetesVersion: kubernetesVersion(),
        apiServerPort: API_SERVER_PORT,
        serving: plane.kubeletServing(),
        log: options.log,
      });
      phase('nodes');
      const info: ClusterInfo = {
        pid: process.pid,
        dir: options.dir,
        server: controlPlane.server,
        adminKubeconfig: controlPlane.adminKubeconfig,
        kubernetesVersion: kubernetesVersion(),
        hostAddress: network.hostAddress,
        nodes: kubelet.nodeNames,
        logs: controlPlane.logFiles(),
        timings,
      };
      if (options.installDrainguard) {
        await installDrainguard(controlPlane.adminKubeconfig, options.log);
        info.drainguard = { release: 'drainguard', namespace: 'drainguard-system' };
        phase('drainguard');
      }
      return new TestCluster(info, network, controlPlane, kubelet);
    } catch (error) {
      await kubelet?.stop();
      await controlPlane?.stop();
      network.remove();
      throw error;
    }
  }

  /** Writes `<dir>/cluster.json` (removed again by `stop`). */
  publish(): string {
    const path = join(this.info.dir, 'cluster.json');
    writeFileSync(path, JSON.stringify(this.info, null, 2));
    return path;
  }

  /** Stops kube-apiserver (etcd keeps the data; pods and the kubelet stand-in go on). */
  stopApiServer(): Promise<void> {
    return this.controlPlane.stopApiServer();
  }

  /** Starts kube-apiserver again after `stopApiServer`, once it is ready. */
  startApiServer(): Promise<void> {
    return this.controlPlane.startApiServer();
  }

  /** Compacts etcd at its current revision: watches from any older resourceVersion get 410 Gone. */
  compactEtcd(): Promise<number> {
    return this.controlPlane.compactEtcd();
  }

  /** A kubeconfig for a client certificate of the cluster's CA (CN = user, O = groups). */
  kubeconfigFor(identity: { user: string; groups?: string[] }): string {
    return this.controlPlane.kubeconfigFor(identity);
  }

  async stop(): Promise<void> {
    rmSync(join(this.info.dir, 'cluster.json'), { force: true });
    await this.kubelet?.stop();
    await this.controlPlane.stop();
    this.network.remove();
  }
}

/**
 * `helm install` of the chart as its README says, waiting until the webhook is ready. Asynchronous: this
 * process's kubelet stand-in runs the pods helm waits for.
 */
async function installDrainguard(kubeconfig: string, log: (line: string) => void): Promise<void> {
  log('installing drainguard from charts/drainguard (helm install --wait)');
  // Under setpriv --pdeathsig, as every process of the cluster: it dies with this one.
  const helm = spawn(
    'setpriv',
    ['--pdeathsig', 'KILL', '--', helmBinary(), 'install', 'drainguard', CHART_DIR, '--namespace', 'drainguard-system', '--create-namespace', '--kubeconfig', kubeconfig, '--wait', '--timeout', '5m'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  helm.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const [code] = (await once(helm, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`helm install failed (exit ${code}):\n${stderr}`);
}
