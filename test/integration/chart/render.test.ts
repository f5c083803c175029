/**
 * `helm template` with the real helm binary: every variant (defaults, each TLS mode, each failure
 * policy, optional ServiceMonitor) renders, every object validates, and the properties the product
 * depends on hold.
 */
import { findOne, webhookObjects, helmBinary, renderChart, renderChartFailure, type K8sObject, type RenderOptions } from '../../support/helm';
import { parse } from 'yaml';
import { SERVE_USAGE } from '../../../src/cli/serve';
import { parseConfig } from '../../../src/config';
import { validateAll } from './validate';
import { admissionLimits, memoryLimitMiB } from '../../../src/server/sizing';

const NS = 'drainguard-system';
const CA_BUNDLE = Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n').toString('base64');

interface Container {
  name: string;
  image: string;
  args: string[];
  env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  ports: { name: string; containerPort: number }[];
  livenessProbe: { httpGet: { path: string; port: string | number; scheme: string } };
  readinessProbe: { httpGet: { path: string; port: string | number; scheme: string } };
  resources: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext: {
    runAsNonRoot?: boolean;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
    seccompProfile?: { type: string };
  };
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodSpec {
  serviceAccountName: string;
  automountServiceAccountToken: boolean;
  terminationGracePeriodSeconds: number;
  securityContext: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
  containers: Container[];
  volumes: { name: string; configMap?: { name: string }; secret?: { secretName: string } }[];
  topologySpreadConstraints: { topologyKey: string; labelSelector: { matchLabels: Record<string, string> } }[];
}
interface Deployment extends K8sObject {
  spec: {
    replicas: number;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string>; annotations: Record<string, string> }; spec: PodSpec };
  };
}
interface Webhook {
  name: string;
  admissionReviewVersions: string[];
  clientConfig: { service: { name: string; namespace: string; path: string; port: number }; caBundle?: string };
  rules: { apiGroups: string[]; apiVersions: string[]; operations: string[]; resources: string[]; scope?: string }[];
  matchPolicy: string;
  namespaceSelector: {
    matchLabels?: Record<string, string>;
    matchExpressions?: { key: string; operator: string; values?: string[] }[];
  };
  objectSelector?: unknown;
  sideEffects: string;
  timeoutSeconds: number;
  reinvocationPolicy: string;
  failurePolicy: string;
  matchConditions?: { name: string; expression: string }[];
}
interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

const deploymentOf = (objects: K8sObject[]): Deployment => findOne(webhookObjects(objects), 'Deployment') as Deployment;
const webhookOf = (objects: K8sObject[]): Webhook => {
  const config = findOne(webhookObjects(objects), 'MutatingWebhookConfiguration') as K8sObject & { webhooks: Webhook[] };
  expect(config.webhooks).toHaveLength(1);
  return config.webhooks[0]!;
};
const serverContainer = (d: Deployment): Container => {
  expect(d.spec.template.spec.containers).toHaveLength(1);
  return d.spec.template.spec.containers[0]!;
};
/** The value following a flag in an argument list (flags are passed as separate tokens). */
const flag = (args: string[], name: string): string | undefined => {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args[i + 1];
};
const kinds = (objects: K8sObject[]): string[] => objects.map((o) => o.kind).sort();

const VARIANTS: Record<string, RenderOptions> = {
  defaults: {},
  'tls self': { set: { 'tls.mode': 'self' } },
  'tls certManager': { set: { 'tls.mode': 'certManager' } },
  'tls certManager with an existing ClusterIssuer': {
    set: { 'tls.mode': 'certManager', 'tls.certManager.issuerRef.name': 'corp-ca', 'tls.certManager.issuerRef.kind': 'ClusterIssuer' },
  },
  'tls secret': { set: { 'tls.mode': 'secret', 'tls.secret.name': 'my-webhook-tls', 'tls.secret.caBundle': CA_BUNDLE } },
  'failurePolicy Ignore': { set: { 'webhook.failurePolicy': 'Ignore' } },
  'failurePolicy Fail': { set: { 'webhook.failurePolicy': 'Fail' } },
  'serviceMonitor enabled': { set: { 'metrics.serviceMonitor.enabled': true } },
  'monitoring pack': { set: { 'monitoring.rules.enabled': true, 'monitoring.dashboard.enabled': true } },
  'single replica': { set: { replicaCount: 1 } },
  'networkPolicy disabled': { set: { 'networkPolicy.enabled': false } },
  'Kubernetes 1.29': { kubeVersion: '1.29.0' },
  'Kubernetes 1.30': { kubeVersion: '1.30.0' },
  'matchConditions off': { set: { 'webhook.matchConditions': false } },
  'matchConditions forced on 1.29': { kubeVersion: '1.29.0', set: { 'webhook.matchConditions': true } },
};

const rendered = new Map<string, K8sObject[]>();
beforeAll(() => {
  helmBinary();
  for (const [name, opts] of Object.entries(VARIANTS)) rendered.set(name, renderChart(opts));
});
const variant = (name: keyof typeof VARIANTS): K8sObject[] => rendered.get(name)!;

describe.each(Object.keys(VARIANTS))('variant %s', (name) => {
  test('every rendered object validates against its schema', async () => {
    const objects = variant(name);
    expect(objects.length).toBeGreaterThan(0);
    expect(await validateAll(objects)).toEqual([]);
  });

  test('namespaced objects go to the release namespace', () => {
    const clusterScoped = new Set(['ClusterRole', 'ClusterRoleBinding', 'MutatingWebhookConfiguration']);
    for (const o of variant(name)) {
      if (clusterScoped.has(o.kind)) expect(o.metadata.namespace).toBeUndefined();
      else expect(`${o.kind} ${o.metadata.namespace}`).toBe(`${o.kind} ${NS}`);
    }
  });
});

describe('Deployment', () => {
  const d = (): Deployment => deploymentOf(variant('defaults'));

  test('2 replicas, spread across nodes and zones', () => {
    expect(d().spec.replicas).toBe(2);
    const spread = d().spec.template.spec.topologySpreadConstraints;
    expect(spread.map((c) => c.topologyKey).sort()).toEqual(['kubernetes.io/hostname', 'topology.kubernetes.io/zone']);
    for (const c of spread) expect(c.labelSelector.matchLabels).toEqual(d().spec.selector.matchLabels);
  });

  test('the pod is hardened: non-root, read-only root, no capabilities, RuntimeDefault seccomp', () => {
    const pod = d().spec.template.spec;
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.securityContext.runAsUser).toBe(65532);
    expect(pod.securityContext.seccompProfile).toEqual({ type: 'RuntimeDefault' });
    const sc = serverContainer(d()).securityContext;
    expect(sc.runAsNonRoot).toBe(true);
    expect(sc.readOnlyRootFilesystem).toBe(true);
    expect(sc.allowPrivilegeEscalation).toBe(false);
    expect(sc.capabilities).toEqual({ drop: ['ALL'] });
    expect(sc.seccompProfile).toEqual({ type: 'RuntimeDefault' });
  });

  test('resources are requested', () => {
    const { requests } = serverContainer(d()).resources;
    expect(requests?.cpu).toMatch(/^\d+m?$/);
    expect(requests?.memory).toMatch(/^\d+(Mi|Gi)$/);
  });

  test('liveness probes /healthz and readiness probes /readyz, over HTTPS on the serving port', () => {
    const c = serverContainer(d());
    expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'https', scheme: 'HTTPS' });
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'https', scheme: 'HTTPS' });
    expect(c.ports).toEqual([expect.objectContaining({ name: 'https', containerPort: 8443 })]);
  });

  test('serves with the config file, the shutdown delay and POD_NAMESPACE from the downward API', () => {
    const c = serverContainer(d());
    expect(c.args[0]).toBe('serve');
    expect(flag(c.args, '--host')).toBe('0.0.0.0');
    expect(flag(c.args, '--port')).toBe('8443');
    expect(flag(c.args, '--log-level')).toBe('info');
    expect(flag(c.args, '--shutdown-delay')).toBe('5s');
    const config = flag(c.args, '--config')!;
    const mount = c.volumeMounts.find((m) => config.startsWith(`${m.mountPath}/`));
    expect(mount?.readOnly).toBe(true);
    const volume = d().spec.template.spec.volumes.find((v) => v.name === mount?.name);
    expect(volume?.configMap?.name).toBe(findOne(webhookObjects(variant('defaults')), 'ConfigMap').metadata.name);
    expect(c.env).toContainEqual({ name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } });
  });

  test.each(['tls self', 'tls certManager', 'tls secret'])('every flag passed in %s is one `drainguard serve` accepts', (name) => {
    const args = serverContainer(deploymentOf(variant(name))).args;
    const flags = args.filter((a) => a.startsWith('--'));
    expect(flags.length).toBeGreaterThan(5);
    for (const f of flags) expect(`${f}: ${SERVE_USAGE.includes(`${f} `)}`).toBe(`${f}: true`);
  });

  test('the grace period outlives the shutdown delay', () => {
    const delay = Number(/^(\d+)s$/.exec(flag(serverContainer(d()).args, '--shutdown-delay')!)![1]);
    expect(d().spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(delay);
  });

  test('the image defaults to the chart appVersion', () => {
    expect(serverContainer(d()).image).toBe('ghcr.io/drainguard/drainguard:0.1.0');
  });

  test('a config change changes the pod template (checksum annotation)', () => {
    const before = d().spec.template.metadata.annotations['checksum/config'];
    const after = deploymentOf(renderChart({ set: { 'config.drain.minDrainSeconds': 9 } })).spec.template.metadata.annotations[
      'checksum/config'
    ];
    expect(before).toMatch(/^[0-9a-f]{64}$/);
    expect(after).toMatch(/^[0-9a-f]{64}$/);
    expect(after).not.toBe(before);
  });

  test('topologySpreadConstraints from values replace the defaults', () => {
    const custom = deploymentOf(
      renderChart({
        set: {
          'topologySpreadConstraints[0].maxSkew': 2,
          'topologySpreadConstraints[0].topologyKey': 'example.com/rack',
          'topologySpreadConstraints[0].whenUnsatisfiable': 'DoNotSchedule',
        },
      }),
    );
    expect(custom.spec.template.spec.topologySpreadConstraints.map((c) => c.topologyKey)).toEqual(['example.com/rack']);
  });
});

describe('PodDisruptionBudget', () => {
  test('keeps one replica available and selects the Deployment pods', () => {
    const objects = variant('defaults');
    const pdb = findOne(webhookObjects(objects), 'PodDisruptionBudget') as K8sObject & {
      spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } };
    };
    expect(pdb.spec.minAvailable).toBe(1);
    expect(pdb.spec.selector.matchLabels).toEqual(deploymentOf(objects).spec.selector.matchLabels);
  });

  test('is not rendered for a single replica (it would block every node drain)', () => {
    expect(kinds(webhookObjects(variant('single replica')))).not.toContain('PodDisruptionBudget');
    expect(deploymentOf(variant('single replica')).spec.replicas).toBe(1);
  });
});

describe('Service', () => {
  test('443 to the https container port, selecting the Deployment pods', () => {
    const objects = variant('defaults');
    const svc = findOne(webhookObjects(objects), 'Service') as K8sObject & {
      spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string }[] };
    };
    expect(svc.spec.ports).toEqual([expect.objectContaining({ name: 'https', port: 443, targetPort: 'https' })]);
    const pod = deploymentOf(objects).spec.template;
    for (const [k, v] of Object.entries(svc.spec.selector)) expect(pod.metadata.labels[k]).toBe(v);
  });
});

describe('MutatingWebhookConfiguration', () => {
  test('calls /mutate on the Service for pod CREATE in core v1 only', () => {
    const objects = variant('defaults');
    const wh = webhookOf(objects);
    expect(wh.clientConfig.service).toEqual({
      name: findOne(webhookObjects(objects), 'Service').metadata.name,
      namespace: NS,
      path: '/mutate',
      port: 443,
    });
    expect(wh.rules).toEqual([
      { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'], scope: 'Namespaced' },
    ]);
  });

  test('namespaces opt in by label; the release namespace is always excluded, kube-system by default', () => {
    const wh = webhookOf(variant('defaults'));
    expect(wh.namespaceSelector.matchLabels).toEqual({ 'drainguard.io/inject': 'enabled' });
    expect(wh.namespaceSelector.matchExpressions).toEqual([{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [NS, 'kube-system'] }]);

    const extra = webhookOf(renderChart({ set: { 'webhook.excludedNamespaces[0]': 'tenant-a' } }));
    expect(extra.namespaceSelector.matchExpressions?.[0]?.values).toEqual([NS, 'tenant-a']);
    const none = webhookOf(renderChart({ set: { 'webhook.excludedNamespaces': 'null' } }));
    expect(none.namespaceSelector.matchExpressions?.[0]?.values).toEqual([NS]);
    const other = webhookOf(renderChart({ namespace: 'edge' }));
    expect(other.namespaceSelector.matchExpressions?.[0]?.values).toEqual(['edge', 'kube-system']);
  });

  test('v1 reviews, no side effects, Equivalent matching, IfNeeded reinvocation, timeout ≤ 5 s', () => {
    const wh = webhookOf(variant('defaults'));
    expect(wh.admissionReviewVersions).toEqual(['v1']);
    expect(wh.sideEffects).toBe('None');
    expect(wh.matchPolicy).toBe('Equivalent');
    expect(wh.reinvocationPolicy).toBe('IfNeeded');
    expect(wh.timeoutSeconds).toBeGreaterThanOrEqual(1);
    expect(wh.timeoutSeconds).toBeLessThanOrEqual(5);
    expect(wh.objectSelector).toBeUndefined();
  });

  test.each(['Ignore', 'Fail'] as const)('failurePolicy %s is rendered as given', (policy) => {
    expect(webhookOf(variant(`failurePolicy ${policy}`)).failurePolicy).toBe(policy);
  });

  test('defaults to failurePolicy Ignore', () => {
    expect(webhookOf(variant('defaults')).failurePolicy).toBe('Ignore');
  });

  test('an objectSelector is passed through when set', () => {
    const wh = webhookOf(renderChart({ set: { 'webhook.objectSelector.matchLabels.app': 'envoy' } }));
    expect(wh.objectSelector).toEqual({ matchLabels: { app: 'envoy' } });
  });
});

describe('config', () => {
  const configOf = (objects: K8sObject[]): Record<string, unknown> & { installer: { image: string } } => {
    const cm = findOne(webhookObjects(objects), 'ConfigMap') as K8sObject & { data: Record<string, string> };
    return parse(cm.data['config.yaml']!) as Record<string, unknown> & { installer: { image: string } };
  };

  test("the drain program's image defaults to drainImage at the chart's appVersion, apart from the server's", () => {
    expect(configOf(variant('defaults')).installer.image).toBe('ghcr.io/drainguard/envoy-shutdown:0.1.0');
    const tagged = renderChart({ set: { 'image.repository': 'registry.example/dg', 'image.tag': 'dev-1', 'drainImage.repository': 'registry.example/drain', 'drainImage.tag': 'dev-2' } });
    expect(configOf(tagged).installer.image).toBe('registry.example/drain:dev-2');
    expect(serverContainer(deploymentOf(tagged)).image).toBe('registry.example/dg:dev-1');
  });

  test("a digest pins the drain image by tag and digest (what a released package carries), and the server's by digest", () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    const objects = renderChart({ set: { 'image.digest': digest, 'drainImage.digest': `sha256:${'b'.repeat(64)}` } });
    expect(configOf(objects).installer.image).toBe(`ghcr.io/drainguard/envoy-shutdown:0.1.0@sha256:${'b'.repeat(64)}`);
    expect(serverContainer(deploymentOf(objects)).image).toBe(`ghcr.io/drainguard/drainguard@${digest}`);
  });

  test('an explicit installer image wins', () => {
    expect(configOf(renderChart({ set: { 'config.installer.image': 'mirror.example/dg:1' } })).installer.image).toBe('mirror.example/dg:1');
  });

  test('image-volume delivery renders on Kubernetes 1.35 and newer, and is refused below, where the API server would drop the volume', () => {
    const config = configOf(renderChart({ set: { 'config.installer.delivery': 'image-volume' }, kubeVersion: '1.35.0' }));
    expect(config.installer).toMatchObject({ delivery: 'image-volume', image: 'ghcr.io/drainguard/envoy-shutdown:0.1.0' });
    const refused = renderChartFailure({ set: { 'config.installer.delivery': 'image-volume' }, kubeVersion: '1.34.3' });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toMatch(/config\.installer\.delivery image-volume needs Kubernetes 1\.35 or newer \(this cluster: v1\.34\.3\)/);
    expect(configOf(renderChart({ kubeVersion: '1.27.0' })).installer).toMatchObject({ delivery: 'copy' });
  });

  test('values under config reach the file', () => {
    const config = configOf(renderChart({ set: { 'config.drain.drainDelaySeconds': 7, 'config.sidecarMode': 'disarm' } }));
    expect(config).toMatchObject({ drain: { drainDelaySeconds: 7 }, sidecarMode: 'disarm' });
  });

  /** The server's reading of the rendered file, as `drainguard serve --config` reads it. */
  const loadedDrain = (objects: K8sObject[]) => {
    const cm = findOne(webhookObjects(objects), 'ConfigMap') as K8sObject & { data: Record<string, string> };
    return parseConfig(cm.data['config.yaml']!, 'config.yaml').drain;
  };

  test('a drain setting the values leave unset stays unset in the file (a default written there would outrank the replaced component\'s)', () => {
    expect(loadedDrain(variant('defaults'))).toEqual({});
    expect(loadedDrain(renderChart({ set: { 'config.drain.minDrainSeconds': 20 } }))).toEqual({ minDrainSeconds: 20 });
    // Setting one to drainguard's own default still sets it: the operator said so.
    expect(loadedDrain(renderChart({ set: { 'config.drain.drainDelaySeconds': 0 } }))).toEqual({ drainDelaySeconds: 0 });
  });
});

describe('TLS modes', () => {
  const rulesOf = (objects: K8sObject[], kind: string): Rule[] => (findOne(webhookObjects(objects), kind) as K8sObject & { rules: Rule[] }).rules;

  test("self: the certificates' lifetimes reach the server (a year, renewed 30 days ahead, unless tls.self says otherwise); a renewal not before expiry is refused", () => {
    const args = (set: Record<string, string>) => serverContainer(deploymentOf(renderChart({ set }))).args;
    const defaults = args({});
    expect([flag(defaults, '--certificate-validity'), flag(defaults, '--certificate-renew-before')]).toEqual(['8760h', '720h']);
    const short = args({ 'tls.self.duration': '80s', 'tls.self.renewBefore': '60s' });
    expect([flag(short, '--certificate-validity'), flag(short, '--certificate-renew-before')]).toEqual(['80s', '60s']);
    expect(() => renderChart({ set: { 'tls.self.duration': '1h', 'tls.self.renewBefore': '60m' } })).toThrow(/tls\.self\.renewBefore must be shorter than tls\.self\.duration/);
    expect(() => renderChart({ set: { 'tls.self.duration': '365d' } })).toThrow(/tls\/self\/duration/);
  });

  test('self: no Secret or caBundle rendered; the server gets what it needs to create and publish them', () => {
    const objects = variant('tls self');
    expect(kinds(objects)).not.toContain('Secret');
    const wh = webhookOf(objects);
    expect(wh.clientConfig.caBundle).toBeUndefined();
    const c = serverContainer(deploymentOf(objects));
    expect(flag(c.args, '--tls-mode')).toBe('self');
    const secretName = flag(c.args, '--secret-name');
    const configName = flag(c.args, '--webhook-config-name');
    expect(configName).toBe(findOne(webhookObjects(objects), 'MutatingWebhookConfiguration').metadata.name);
    expect(flag(c.args, '--service-name')).toBe(wh.clientConfig.service.name);
    expect(deploymentOf(objects).spec.template.spec.automountServiceAccountToken).toBe(true);
    expect((findOne(webhookObjects(objects), 'ServiceAccount') as K8sObject & { automountServiceAccountToken: boolean }).automountServiceAccountToken).toBe(
      true,
    );

    // RBAC: its own Secret and its own webhook configuration, by name; `create` alone is unrestricted.
    const role = rulesOf(objects, 'Role');
    expect(role).toContainEqual({ apiGroups: [''], resources: ['secrets'], resourceNames: [secretName], verbs: ['get', 'update'] });
    expect(role).toContainEqual({ apiGroups: [''], resources: ['secrets'], verbs: ['create'] });
    expect(role).toHaveLength(2);
    expect(rulesOf(objects, 'ClusterRole')).toEqual([
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['mutatingwebhookconfigurations'],
        resourceNames: [configName],
        verbs: ['get', 'patch'],
      },
    ]);
    const sa = findOne(webhookObjects(objects), 'ServiceAccount').metadata.name;
    for (const kind of ['RoleBinding', 'ClusterRoleBinding']) {
      const binding = findOne(webhookObjects(objects), kind) as K8sObject & { subjects: unknown[]; roleRef: { kind: string; name: string } };
      expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: sa, namespace: NS }]);
      expect(binding.roleRef.name).toBe(findOne(webhookObjects(objects), kind.replace('Binding', '')).metadata.name);
    }
  });

  /** The files modes: no API access at all, the Secret mounted as a directory (so renewals are seen). */
  function expectFilesMode(objects: K8sObject[], secretName: string): void {
    const d = deploymentOf(objects);
    const c = serverContainer(d);
    expect(flag(c.args, '--tls-mode')).toBe('files');
    expect(d.spec.template.spec.automountServiceAccountToken).toBe(false);
    expect((findOne(webhookObjects(objects), 'ServiceAccount') as K8sObject & { automountServiceAccountToken: boolean }).automountServiceAccountToken).toBe(
      false,
    );
    for (const kind of ['Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding']) expect(kinds(webhookObjects(objects))).not.toContain(kind);
    const volume = d.spec.template.spec.volumes.find((v) => v.secret?.secretName === secretName);
    expect(volume).toBeDefined();
    const mount = c.volumeMounts.find((m) => m.name === volume!.name)!;
    expect(mount.readOnly).toBe(true);
    expect(flag(c.args, '--tls-cert')).toBe(`${mount.mountPath}/tls.crt`);
    expect(flag(c.args, '--tls-key')).toBe(`${mount.mountPath}/tls.key`);
  }

  test('certManager: CA chain, serving certificate for the Service, CA injected into the webhook', () => {
    const objects = variant('tls certManager');
    const certs = objects.filter((o) => o.kind === 'Certificate') as (K8sObject & {
      spec: { isCA?: boolean; secretName: string; dnsNames?: string[]; issuerRef: { name: string; kind: string } };
    })[];
    const issuers = objects.filter((o) => o.kind === 'Issuer') as (K8sObject & { spec: { selfSigned?: object; ca?: { secretName: string } } })[];
    expect(certs).toHaveLength(2);
    expect(issuers).toHaveLength(2);
    const selfSigned = issuers.find((i) => i.spec.selfSigned)!;
    const caIssuer = issuers.find((i) => i.spec.ca)!;
    const ca = certs.find((c) => c.spec.isCA)!;
    const serving = certs.find((c) => !c.spec.isCA)!;
    expect(ca.spec.issuerRef).toMatchObject({ name: selfSigned.metadata.name, kind: 'Issuer' });
    expect(caIssuer.spec.ca?.secretName).toBe(ca.spec.secretName);
    expect(serving.spec.issuerRef).toMatchObject({ name: caIssuer.metadata.name, kind: 'Issuer' });
    const svc = findOne(webhookObjects(objects), 'Service').metadata.name;
    expect(serving.spec.dnsNames).toContain(`${svc}.${NS}.svc`);

    const config = findOne(webhookObjects(objects), 'MutatingWebhookConfiguration');
    expect(config.metadata.annotations?.['cert-manager.io/inject-ca-from']).toBe(`${NS}/${serving.metadata.name}`);
    expect(webhookOf(objects).clientConfig.caBundle).toBeUndefined();
    expectFilesMode(objects, serving.spec.secretName);
  });

  test('certManager with an existing issuer: no CA chain rendered', () => {
    const objects = variant('tls certManager with an existing ClusterIssuer');
    expect(kinds(objects)).not.toContain('Issuer');
    const serving = findOne(webhookObjects(objects), 'Certificate') as K8sObject & { spec: { issuerRef: unknown; secretName: string } };
    expect(serving.spec.issuerRef).toEqual({ name: 'corp-ca', kind: 'ClusterIssuer', group: 'cert-manager.io' });
    expectFilesMode(objects, serving.spec.secretName);
  });

  test('secret: the given Secret is mounted and the given caBundle is trusted', () => {
    const objects = variant('tls secret');
    expect(webhookOf(objects).clientConfig.caBundle).toBe(CA_BUNDLE);
    expect(kinds(objects)).not.toContain('Certificate');
    expect(findOne(webhookObjects(objects), 'MutatingWebhookConfiguration').metadata.annotations?.['cert-manager.io/inject-ca-from']).toBeUndefined();
    expectFilesMode(objects, 'my-webhook-tls');
  });
});

describe('ServiceMonitor', () => {
  test('absent by default', () => {
    expect(kinds(variant('defaults'))).not.toContain('ServiceMonitor');
  });

  test('scrapes /metrics over HTTPS on the Service port, selecting the Service', () => {
    const objects = variant('serviceMonitor enabled');
    const sm = findOne(webhookObjects(objects), 'ServiceMonitor') as K8sObject & {
      spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; scheme: string; path: string }[] };
    };
    expect(sm.spec.endpoints).toEqual([expect.objectContaining({ port: 'https', scheme: 'https', path: '/metrics' })]);
    const svc = findOne(webhookObjects(objects), 'Service');
    for (const [k, v] of Object.entries(sm.spec.selector.matchLabels)) expect(svc.metadata.labels?.[k]).toBe(v);
  });
});

describe('matchConditions', () => {
  test('rendered on Kubernetes 1.30 and newer (helm 4 assumes a current version), not on 1.29', () => {
    for (const name of ['defaults', 'Kubernetes 1.30'] as const) {
      expect(webhookOf(variant(name)).matchConditions?.map((c) => c.name)).toEqual(['may-be-envoy-pod']);
    }
    expect(webhookOf(variant('Kubernetes 1.29')).matchConditions).toBeUndefined();
  });

  test('webhook.matchConditions true or false decides regardless of the version', () => {
    expect(webhookOf(variant('matchConditions off')).matchConditions).toBeUndefined();
    expect(webhookOf(variant('matchConditions forced on 1.29')).matchConditions).toHaveLength(1);
  });

  test('the condition is made from the configured Envoy container name and image repositories', () => {
    const [condition] = webhookOf(
      renderChart({ set: { 'config.envoyContainerName': 'proxy', 'config.envoyImageRepositories[0]': 'mirror.example/envoy+edge' } }),
    ).matchConditions!;
    expect(condition!.expression).toContain("c.name == 'proxy'");
    // Regular-expression characters of a repository are matched literally.
    expect(condition!.expression).toContain(String.raw`(mirror\.example/envoy\+edge)`);
    expect(condition!.expression).toContain("k.startsWith('drainguard.io/')");
  });

  test('the schema refuses a value other than auto, true or false', () => {
    expect(() => renderChart({ set: { 'webhook.matchConditions': 'sometimes' } })).toThrow(/matchConditions/);
  });
});

describe('NetworkPolicy', () => {
  test('on by default: ingress to the webhook pods only on the HTTPS port, which serves admission, probes and /metrics', () => {
    const objects = variant('defaults');
    const policy = findOne(webhookObjects(objects), 'NetworkPolicy') as K8sObject & {
      spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress: { from?: unknown; ports: { port: number | string; protocol: string }[] }[] };
    };
    expect(policy.spec.podSelector.matchLabels).toEqual(deploymentOf(objects).spec.selector.matchLabels);
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    expect(policy.spec.ingress).toEqual([{ ports: [{ port: 8443, protocol: 'TCP' }] }]);
    const container = serverContainer(deploymentOf(objects));
    expect(container.ports.map((p) => p.containerPort)).toEqual([8443]);
    // The metrics endpoint is on that same port: the ServiceMonitor scrapes the Service's https port.
    const monitor = findOne(webhookObjects(variant('serviceMonitor enabled')), 'ServiceMonitor') as K8sObject & { spec: { endpoints: { port: string }[] } };
    expect(monitor.spec.endpoints.map((e) => e.port)).toEqual(['https']);
  });

  test('follows server.port', () => {
    const policy = findOne(webhookObjects(renderChart({ set: { 'server.port': 9443 } })), 'NetworkPolicy') as K8sObject & { spec: { ingress: { ports: { port: number }[] }[] } };
    expect(policy.spec.ingress[0]!.ports[0]!.port).toBe(9443);
  });

  test('networkPolicy.enabled=false renders none', () => {
    expect(kinds(variant('networkPolicy disabled'))).not.toContain('NetworkPolicy');
  });
});

describe('server limits and memory', () => {
  const memoryOf = (objects: K8sObject[]) => serverContainer(deploymentOf(objects)).resources.limits?.memory;

  test('the limits are passed to the server', () => {
    const args = serverContainer(deploymentOf(variant('defaults'))).args;
    expect(flag(args, '--max-body-bytes')).toBe('3145728');
    expect(flag(args, '--max-concurrent-admissions')).toBe('2');
    expect(flag(args, '--max-concurrent-small-admissions')).toBe('16');
    expect(flag(args, '--max-queued-admissions')).toBe('32');
    expect(flag(args, '--max-connections')).toBe('128');
  });

  test.each([
    [{}, admissionLimits()],
    [{ 'server.maxConcurrentAdmissions': 4 }, admissionLimits({ concurrency: 4 })],
    [{ 'server.maxConcurrentSmallAdmissions': 100 }, admissionLimits({ smallConcurrency: 100 })],
    [{ 'server.maxBodyBytes': 1048576, 'server.maxConnections': 1000 }, admissionLimits({ bodyLimitBytes: 1048576, maxConnections: 1000 })],
    [{ 'server.maxBodyBytes': 5000000, 'server.maxConcurrentAdmissions': 1 }, admissionLimits({ bodyLimitBytes: 5000000, concurrency: 1 })],
  ])('the memory limit for %j is the server\'s own formula', (set, limits) => {
    expect(memoryOf(renderChart({ set }))).toBe(`${memoryLimitMiB(limits)}Mi`);
  });

  test('the default limit is 400Mi', () => {
    expect(memoryOf(variant('defaults'))).toBe('400Mi');
  });

  test("the Node runtime settings measured for the server reach its environment, and the schema refuses nonsense", () => {
    const env = (objects: K8sObject[]) => (serverContainer(deploymentOf(objects)).env ?? []).filter((e) => e.name !== 'POD_NAMESPACE');
    expect(env(variant('defaults'))).toEqual([
      { name: 'NODE_OPTIONS', value: '--max-semi-space-size=4 --v8-pool-size=1' },
      { name: 'MALLOC_MMAP_THRESHOLD_', value: '8192' },
    ]);
    expect(env(renderChart({ set: { 'server.runtime.semiSpaceMiB': 16, 'server.runtime.v8PoolSize': 4, 'server.runtime.mallocMmapThresholdBytes': 131072 } }))).toEqual([
      { name: 'NODE_OPTIONS', value: '--max-semi-space-size=16 --v8-pool-size=4' },
      { name: 'MALLOC_MMAP_THRESHOLD_', value: '131072' },
    ]);
    expect(renderChartFailure({ set: { 'server.runtime.semiSpaceMiB': 0 } }).stderr).toMatch(/semiSpaceMiB/);
  });

  test('a memory limit given in values wins; other resources pass through', () => {
    const c = serverContainer(deploymentOf(renderChart({ setString: { 'resources.limits.memory': '1Gi', 'resources.limits.cpu': '2' } })));
    expect(c.resources.limits).toEqual({ memory: '1Gi', cpu: '2' });
    expect(c.resources.requests).toEqual({ cpu: '50m', memory: '96Mi' });
  });
});
