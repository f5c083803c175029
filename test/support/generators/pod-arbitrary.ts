/**
 * fast-check generators of valid Envoy-ish pods: Contour, Envoy Gateway, Bitnami and plain shapes,
 * native sidecars, assorted hooks, probes, resources, volumes and annotations (including keys with
 * `/` and `~`). Every generated pod passes validatePod (filtered), so properties may assume validity.
 * Used by the property tests and by `npm run bench:fuzz` (its `valid:generated` reviews).
 */
import fc from 'fast-check';
import { defaultConfig, type Config } from '../../../src/config';
import { validatePod, type Container, type LifecycleHandler, type Pod, type Probe, type Volume } from '../../../src/mutate';

const VOLUME_KINDS = ['emptyDir', 'configMap', 'secret', 'image'] as const;
const VOLUME_NAMES = ['envoy-config', 'envoy-admin', 'empty-dir', 'certs', 'cache', 'drainguard'] as const;
const MOUNT_PATHS: Record<(typeof VOLUME_NAMES)[number], string> = {
  'envoy-config': '/config',
  'envoy-admin': '/admin',
  'empty-dir': '/config',
  certs: '/certs',
  cache: '/var/cache',
  drainguard: '/drainguard',
};

const envoyImage = fc.constantFrom(
  'docker.io/envoyproxy/envoy:distroless-v1.39.0',
  'envoyproxy/envoy:v1.24.0',
  'mirror.example.com:5000/envoyproxy/envoy-distroless@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
  'docker.io/bitnami/envoy:1.34.1',
);

const envoyArgs = fc.constantFrom<string[]>(
  [],
  ['-c', '/config/envoy.json', '--service-cluster $(CONTOUR_NAMESPACE)', '--log-level info'],
  ['-c /config/envoy.json'],
  ['--config-path=/config/envoy.json'],
  ['--config-path', '/etc/envoy/envoy.yaml'],
  ['--config-yaml admin:\n  address:\n    socket_address:\n      address: 127.0.0.1\n      port_value: 19000\n'],
  ['--config-yaml', 'admin:\n  address:\n    socket_address: {address: 0.0.0.0, port_value: 9901}\n'],
  ['--config-yaml', 'admin:\n  address:\n    pipe: {path: /admin/admin.sock}\n'],
  ['--config-yaml', 'admin:\n  address:\n    socket_address: {address: 10.0.0.1, port_value: 9901}\n'],
);

const preStop = fc.constantFrom<LifecycleHandler | undefined>(
  undefined,
  { httpGet: { path: '/shutdown', port: 8090, scheme: 'HTTP' } },
  { httpGet: { path: '/shutdown/ready', port: 19002 } },
  { exec: { command: ['sh', '-c', 'sleep 30; kill 1'] } },
  { exec: { command: ['/bin/contour', 'envoy', 'shutdown'] } },
  { sleep: { seconds: 10 } },
  { exec: { command: ['/usr/local/bin/custom-drain', '--fast'] } },
  { httpGet: { path: '/quitquitquit', port: 9901 } },
);

const probe = fc.constantFrom<Probe | undefined>(
  undefined,
  { httpGet: { path: '/ready', port: 8002 }, initialDelaySeconds: 3, periodSeconds: 4 },
  { httpGet: { path: '/ready', port: 'metrics', scheme: 'HTTP' } },
  { tcpSocket: { port: 8002 }, initialDelaySeconds: 120, periodSeconds: 20, failureThreshold: 6 },
  { exec: { command: ['true'] }, periodSeconds: 100, failureThreshold: 10 },
);

/** [request, limit] pairs with request <= limit (either may be absent). */
const cpu = fc.constantFrom<[string | undefined, string | number | undefined]>(
  [undefined, undefined],
  ['50m', undefined],
  [undefined, '50m'],
  [undefined, 2],
  ['0.1', '1'],
  ['250m', '250m'],
  [undefined, '15e-1'],
);
const memory = fc.constantFrom<[string | undefined, string | undefined]>(
  [undefined, undefined],
  ['64Mi', undefined],
  [undefined, '64Mi'],
  [undefined, '1Gi'],
  ['256Mi', '300M'],
  [undefined, '0.5Gi'],
);

function resources(cpuPair: [unknown, unknown], memoryPair: [unknown, unknown]): Container['resources'] | undefined {
  const requests: Record<string, string | number> = {};
  const limits: Record<string, string | number> = {};
  for (const [name, [request, limit]] of [['cpu', cpuPair], ['memory', memoryPair]] as const) {
    if (request !== undefined) requests[name] = request as string;
    if (limit !== undefined) limits[name] = limit as string;
  }
  const result: Record<string, unknown> = {};
  if (Object.keys(requests).length > 0) result.requests = requests;
  if (Object.keys(limits).length > 0) result.limits = limits;
  return Object.keys(result).length > 0 ? result : undefined;
}

const sidecarCommand = fc.constantFrom<{ command: string[]; args: string[] }>(
  { command: ['/bin/contour'], args: ['envoy', 'shutdown-manager'] },
  { command: ['contour'], args: ['envoy', 'shutdown-manager', '--serve-port=8090', '--admin-address=/admin/custom.sock'] },
  { command: ['envoy-gateway'], args: ['envoy', 'shutdown-manager'] },
  { command: ['/shutdown'], args: [] },
);

const annotationSets = fc.subarray<[string, string]>([
  ['drainguard.io/drain-delay', '5s'],
  ['drainguard.io/min-drain', '20s'],
  ['drainguard.io/min-connections', '3'],
  ['drainguard.io/sidecar-mode', 'disarm'],
  ['drainguard.io/admin-address', 'http://127.0.0.1:9901'],
  ['drainguard.io/envoy-memory-request', '200Mi'],
  ['drainguard.io/inject', 'enabled'],
  ['drainguard.io/unknown-thing', 'x'],
  ['example.com/a~b/c', 'tilde and slash'],
  ['cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes', 'cache, scratch'],
  ['prometheus.io/port', '8002'],
  ['drainguard.io/status', '{"version":"0.0.1","actions":[]}'],
]);

export interface GeneratedCase {
  pod: Pod;
  config: Config;
}

const recipe = fc.record({
  envoyName: fc.constantFrom('envoy', 'proxy', 'envoy', 'proxy', 'web'),
  envoyImage,
  envoyArgs,
  preStop,
  readiness: probe,
  liveness: probe,
  envoyCpu: cpu,
  envoyMemory: memory,
  envoyUser: fc.option(fc.constantFrom(0, 101, 1001, 65532), { nil: undefined }),
  podUser: fc.option(fc.constantFrom(0, 65534), { nil: undefined }),
  metricsPort: fc.boolean(),
  volumes: fc.uniqueArray(fc.record({ name: fc.constantFrom(...VOLUME_NAMES), kind: fc.constantFrom(...VOLUME_KINDS) }), {
    selector: (v) => v.name,
    maxLength: 5,
  }),
  envoyMountsMask: fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
  sidecar: fc.option(
    fc.record({ cmd: sidecarCommand, native: fc.boolean(), named: fc.boolean(), liveness: fc.boolean(), cpu, memory }),
    { nil: undefined },
  ),
  otherContainer: fc.boolean(),
  /** A second shutdown-manager (rare, but it makes index-based removals order-sensitive). */
  secondSidecar: fc.boolean(),
  initConfig: fc.boolean(),
  grace: fc.option(fc.constantFrom(0, 1, 10, 30, 45, 300, 900), { nil: undefined }),
  annotations: annotationSets,
  withMetadata: fc.boolean(),
  configSidecarMode: fc.constantFrom<Config['sidecarMode']>('remove', 'disarm'),
  configDelivery: fc.constantFrom<Config['installer']['delivery']>('copy', 'image-volume'),
  floor: fc.boolean(),
});

export const validPodCase: fc.Arbitrary<GeneratedCase> = recipe
  .map((r): GeneratedCase => {
    const sources: Record<(typeof VOLUME_KINDS)[number], (name: string) => Omit<Volume, 'name'>> = {
      emptyDir: () => ({ emptyDir: {} }),
      configMap: (name) => ({ configMap: { name } }),
      secret: (name) => ({ secret: { secretName: name } }),
      // An image volume of the user's, or drainguard's own (the drain image, under its name).
      image: (name) => ({ image: { reference: name === 'drainguard' ? defaultConfig().installer.image : `example.com/${name}:1`, pullPolicy: 'IfNotPresent' } }),
    };
    const volumes: Volume[] = r.volumes.map((v) => ({ name: v.name, ...sources[v.kind](v.name) }));
    const usedPaths = new Set<string>();
    const envoyMounts = r.volumes
      .filter((_, i) => r.envoyMountsMask[i])
      .filter((v) => !usedPaths.has(MOUNT_PATHS[v.name]) && usedPaths.add(MOUNT_PATHS[v.name]))
      .map((v) => ({ name: v.name, mountPath: MOUNT_PATHS[v.name], ...(v.name === 'empty-dir' ? { subPath: 'conf' } : {}) }));

    const envoy: Container = { name: r.envoyName, image: r.envoyImage, args: r.envoyArgs };
    if (r.envoyName === 'proxy' && !r.envoyImage.includes('envoyproxy/')) envoy.image = 'envoyproxy/envoy:v1.31.0';
    if (r.envoyName === 'web') envoy.image = 'docker.io/library/nginx:1.27'; // not an Envoy pod
    if (envoyMounts.length > 0) envoy.volumeMounts = envoyMounts;
    if (r.preStop !== undefined) envoy.lifecycle = { preStop: r.preStop };
    if (r.readiness !== undefined) envoy.readinessProbe = r.readiness;
    if (r.liveness !== undefined) envoy.livenessProbe = r.liveness;
    const envoyResources = resources(r.envoyCpu, r.envoyMemory);
    if (envoyResources !== undefined) envoy.resources = envoyResources;
    if (r.envoyUser !== undefined) envoy.securityContext = { runAsUser: r.envoyUser };
    envoy.ports = [{ containerPort: 8080, name: 'http' }];
    if (r.metricsPort) envoy.ports.push({ containerPort: 8002, name: 'metrics' });

    const containers: Container[] = [];
    const initContainers: Container[] = [];
    if (r.initConfig) initContainers.push({ name: 'envoy-initconfig', image: 'ghcr.io/projectcontour/contour:v1.33.6', args: ['bootstrap'] });
    if (r.sidecar !== undefined) {
      const sidecar: Container = {
        name: r.sidecar.named ? 'shutdown-manager' : 'shutdown',
        image: 'ghcr.io/projectcontour/contour:v1.33.6',
        ...r.sidecar.cmd,
        lifecycle: { preStop: { exec: { command: ['/bin/contour', 'envoy', 'shutdown'] } } },
        ports: [{ containerPort: 8090, name: 'http-shutdown' }],
      };
      if (r.sidecar.liveness) sidecar.livenessProbe = { httpGet: { path: '/healthz', port: 8090 } };
      const sidecarResources = resources(r.sidecar.cpu, r.sidecar.memory);
      if (sidecarResources !== undefined) sidecar.resources = sidecarResources;
      const adminMount = envoyMounts.find((m) => m.mountPath === '/admin');
      if (adminMount !== undefined) sidecar.volumeMounts = [adminMount];
      if (r.sidecar.native) initContainers.push({ ...sidecar, restartPolicy: 'Always' });
      else containers.push(sidecar);
    }
    if (r.secondSidecar) containers.unshift({ name: 'legacy-shutdown', image: 'ghcr.io/projectcontour/contour:v1.20.0', args: ['contour envoy shutdown-manager'] });
    containers.push(envoy);
    if (r.otherContainer) containers.push({ name: 'app', image: 'nginx:1.27', ports: [{ containerPort: 80, name: 'web' }] });

    const pod: Pod = { apiVersion: 'v1', kind: 'Pod', spec: { containers } };
    if (initContainers.length > 0) pod.spec.initContainers = initContainers;
    if (volumes.length > 0) pod.spec.volumes = volumes;
    if (r.grace !== undefined) pod.spec.terminationGracePeriodSeconds = r.grace;
    if (r.podUser !== undefined) pod.spec.securityContext = { runAsUser: r.podUser };
    if (r.withMetadata || r.annotations.length > 0) {
      pod.metadata = { name: 'generated', labels: { app: 'envoy' } };
      if (r.annotations.length > 0) pod.metadata.annotations = Object.fromEntries(r.annotations);
    }

    const config = defaultConfig();
    config.sidecarMode = r.configSidecarMode;
    config.installer.delivery = r.configDelivery;
    config.gracePeriodFloor.enabled = r.floor;
    return { pod, config };
  })
  .filter(({ pod }) => validatePod(pod).length === 0);
