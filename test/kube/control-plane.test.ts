/**
 * The test cluster is the real Kubernetes: kube-apiserver, etcd, kube-controller-manager and
 * kube-scheduler built from their Go modules (test/cluster/go.mod), and a kubelet stand-in that speaks
 * only the API (test/support/cluster/kubelet.ts). What drainguard's suites rely on is shown here once:
 * the release, RBAC deciding, controllers making pods, the scheduler placing them, EndpointSlices,
 * garbage collection, and pods of drainguard's image really running as the chart's user.
 */
import { kubernetesVersion } from '../support/cluster/binaries';
import type { KubeObject } from '../support/cluster/api';
import { adminApi, clusterInfo, createNamespace, deleteNamespace, eventually, kubectl } from '../support/cluster/lane';

let namespace: string;
beforeAll(async () => {
  namespace = await createNamespace('control-plane');
});
afterAll(async () => {
  await deleteNamespace(namespace);
});

const api = () => adminApi();

interface PodLike extends KubeObject {
  spec: { nodeName?: string };
  status: { phase?: string; podIP?: string; conditions?: { type: string; status: string }[]; containerStatuses?: { state: { terminated?: { exitCode: number; message?: string } } }[] };
}

test('kube-apiserver reports the release test/cluster/go.mod pins, to kubectl too', async () => {
  const version = await api().get<{ gitVersion: string; major: string; minor: string }>('/version');
  expect(version.gitVersion).toBe(kubernetesVersion());
  expect(`v${version.major}.${version.minor}`).toBe(kubernetesVersion().replace(/\.\d+$/, ''));
  const printed = kubectl(['version', '-o', 'json']);
  expect(JSON.parse(printed.stdout).serverVersion.gitVersion).toBe(kubernetesVersion());
});

test('RBAC decides: a user no role is bound to may not list pods, and the authorizer says why', async () => {
  const result = kubectl(['get', 'pods', '-n', namespace, '--as', 'nobody@example.com']);
  expect(result.status).not.toBe(0);
  expect(result.stderr).toContain('pods is forbidden: User "nobody@example.com" cannot list resource "pods" in API group "" in the namespace');
  expect(kubectl(['auth', 'can-i', 'list', 'pods', '-n', namespace, '--as', 'nobody@example.com']).stdout.trim()).toBe('no');
});

test("a Deployment's pods are made by the controllers, placed by the scheduler and run by the nodes; a Service's EndpointSlice lists them; deleting the Deployment collects its ReplicaSet and pods", async () => {
  const labels = { app: 'web' };
  await api().create(`/apis/apps/v1/namespaces/${namespace}/deployments`, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: { replicas: 2, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'web', image: 'registry.example/web:1', ports: [{ name: 'http', containerPort: 8080 }] }] } } },
  });
  await api().create(`/api/v1/namespaces/${namespace}/services`, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web' },
    spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
  });
  const pods = await eventually('two running, ready pods', async () => {
    const list = await api().list<PodLike>(`/api/v1/namespaces/${namespace}/pods?labelSelector=app%3Dweb`);
    const ready = list.items.filter((p) => p.status.phase === 'Running' && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    return ready.length === 2 ? ready : undefined;
  });
  for (const pod of pods) {
    expect(clusterInfo().nodes).toContain(pod.spec.nodeName);
    expect(pod.status.podIP).toMatch(/^10\.\d+\.(1[2-9]\d|2[0-5]\d)\.\d+$/);
  }
  const addresses = await eventually("the Service's EndpointSlice with both pods", async () => {
    const slices = await api().list<KubeObject & { endpoints?: { addresses: string[]; conditions: { ready: boolean } }[] }>(
      `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dweb`,
    );
    const ready = slices.items.flatMap((s) => s.endpoints ?? []).filter((e) => e.conditions.ready).flatMap((e) => e.addresses);
    return ready.length === 2 ? ready.sort() : undefined;
  });
  expect(addresses).toEqual(pods.map((p) => p.status.podIP).sort());

  await api().delete(`/apis/apps/v1/namespaces/${namespace}/deployments/web`, { propagationPolicy: 'Background' });
  await eventually('the ReplicaSet and pods collected', async () => {
    const replicaSets = await api().list(`/apis/apps/v1/namespaces/${namespace}/replicasets`);
    const left = await api().list(`/api/v1/namespaces/${namespace}/pods?labelSelector=app%3Dweb`);
    return replicaSets.items.length === 0 && left.items.length === 0 ? true : undefined;
  });
});

test('a DaemonSet gets one pod on every node', async () => {
  const labels = { app: 'every-node' };
  await api().create(`/apis/apps/v1/namespaces/${namespace}/daemonsets`, {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'every-node' },
    spec: { selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'agent', image: 'registry.example/agent:1' }] } } },
  });
  const nodes = await eventually('a running pod on each node', async () => {
    const list = await api().list<PodLike>(`/api/v1/namespaces/${namespace}/pods?labelSelector=app%3Devery-node`);
    const running = list.items.filter((p) => p.status.phase === 'Running').map((p) => p.spec.nodeName!);
    return running.length === clusterInfo().nodes.length ? running.sort() : undefined;
  });
  expect(nodes).toEqual([...clusterInfo().nodes].sort());
});

test("a pod of drainguard's image runs for real, in its own network namespace, as the chart's user, with its ServiceAccount token", async () => {
  // `id -u` from the image's /usr (the distroless base's part) and the CLI of this checkout's dist/.
  const script = [
    'const fs = require("fs");',
    'const token = fs.readFileSync("/var/run/secrets/kubernetes.io/serviceaccount/token", "utf8");',
    'const claims = JSON.parse(Buffer.from(token.split(".")[1], "base64url"));',
    'fs.writeFileSync("/dev/termination-log", JSON.stringify({ uid: process.getuid(), sub: claims.sub, ip: require("os").networkInterfaces().eth0[0].address, host: process.env.KUBERNETES_SERVICE_HOST }));',
  ].join(' ');
  await api().create(`/api/v1/namespaces/${namespace}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'runs' },
    spec: {
      restartPolicy: 'Never',
      securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532 },
      containers: [{ name: 'node', image: 'ghcr.io/drainguard/drainguard:test', command: ['/nodejs/bin/node', '-e', script], securityContext: { readOnlyRootFilesystem: true } }],
    },
  });
  const pod = await eventually('the pod to succeed', async () => {
    const found = await api().get<PodLike>(`/api/v1/namespaces/${namespace}/pods/runs`);
    return found.status.phase === 'Succeeded' || found.status.phase === 'Failed' ? found : undefined;
  });
  expect(pod.status.phase).toBe('Succeeded');
  const seen = JSON.parse(pod.status.containerStatuses![0]!.state.terminated!.message!) as { uid: number; sub: string; ip: string; host: string };
  expect(seen).toEqual({ uid: 65532, sub: `system:serviceaccount:${namespace}:default`, ip: pod.status.podIP, host: clusterInfo().hostAddress });
});
