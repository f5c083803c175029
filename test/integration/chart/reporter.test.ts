/**
 * The reporter's objects in the chart (templates/reporter.yaml), rendered by the real helm: on by
 * default with two replicas and its own ServiceAccount and least-privilege ClusterRole, selectors that
 * never cross with the webhook's, a ServiceMonitor that scrapes what the reporter serves, arguments
 * `drainguard report` accepts, and nothing of it with `report.enabled=false`.
 */
import { readReportFlags } from '../../../src/cli/report';
import { findOne, renderChart, renderChartFailure, reporterObjects, webhookObjects, type K8sObject } from '../../support/helm';
import { validateAll } from './validate';

const NS = 'drainguard-system';

interface Container {
  name: string;
  args: string[];
  env: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  ports: { name: string; containerPort: number }[];
  livenessProbe: { httpGet: { path: string; port: string; scheme: string } };
  readinessProbe: { httpGet: { path: string; port: string; scheme: string } };
  securityContext: { readOnlyRootFilesystem?: boolean; runAsNonRoot?: boolean; allowPrivilegeEscalation?: boolean; capabilities?: { drop?: string[] } };
  resources: { requests: Record<string, string>; limits: Record<string, string> };
}
interface Deployment extends K8sObject {
  spec: {
    replicas: number;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: { serviceAccountName: string; automountServiceAccountToken: boolean; containers: Container[] } };
  };
}
type Selecting = K8sObject & { spec: { selector?: Record<string, string> | { matchLabels: Record<string, string> }; podSelector?: { matchLabels: Record<string, string> } } };
interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

const defaults = renderChart({ namespace: NS });
const reporter = reporterObjects(defaults);
const deployment = findOne(reporter, 'Deployment') as Deployment;
const container = () => deployment.spec.template.spec.containers[0]!;

/** The labels a workload object selects pods by (Deployment, PodDisruptionBudget, Service, NetworkPolicy). */
function selectorOf(object: Selecting): Record<string, string> {
  if (object.spec.podSelector) return object.spec.podSelector.matchLabels;
  const selector = object.spec.selector as Record<string, string> & { matchLabels?: Record<string, string> };
  return selector.matchLabels ?? selector;
}
const selects = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([key, value]) => labels[key] === value);

test('on by default: every reporter object renders and validates against its schema, in the release namespace', async () => {
  expect(reporter.map((o) => o.kind).sort()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'Deployment', 'NetworkPolicy', 'PodDisruptionBudget', 'Service', 'ServiceAccount']);
  expect(await validateAll(reporter)).toEqual([]);
  for (const o of reporter.filter((object) => !object.kind.startsWith('Cluster'))) expect(o.metadata.namespace).toBe(NS);
  expect(deployment.metadata.name).toBe('drainguard-reporter');
  expect(deployment.spec.replicas).toBe(2);
});

test('report.enabled=false renders nothing of the reporter', () => {
  const objects = renderChart({ namespace: NS, set: { 'report.enabled': false, 'metrics.serviceMonitor.enabled': true } });
  expect(reporterObjects(objects)).toEqual([]);
  expect(objects.filter((o) => o.metadata.name.includes('reporter'))).toEqual([]);
});

test('its own ServiceAccount, with a token; the webhook\'s ServiceAccount and RBAC gain nothing', () => {
  const account = findOne(reporter, 'ServiceAccount');
  expect(deployment.spec.template.spec.serviceAccountName).toBe(account.metadata.name);
  expect(deployment.spec.template.spec.automountServiceAccountToken).toBe(true);
  const webhookAccount = findOne(webhookObjects(defaults), 'ServiceAccount');
  expect(webhookAccount.metadata.name).not.toBe(account.metadata.name);
  const binding = findOne(reporter, 'ClusterRoleBinding') as K8sObject & { subjects: unknown[]; roleRef: { name: string } };
  expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: account.metadata.name, namespace: NS }]);
  expect(binding.roleRef.name).toBe(findOne(reporter, 'ClusterRole').metadata.name);
  for (const kind of ['RoleBinding', 'ClusterRoleBinding']) {
    for (const other of webhookObjects(defaults).filter((o) => o.kind === kind) as (K8sObject & { subjects: { name: string }[] })[]) {
      expect(other.subjects.map((subject) => subject.name)).not.toContain(account.metadata.name);
    }
  }
});

test("least privilege: list and watch pods, create and get events, get replicasets, list and watch this release's webhook configuration alone, read namespaces; nothing else", () => {
  const rules = (findOne(reporter, 'ClusterRole') as K8sObject & { rules: Rule[] }).rules;
  const webhookConfiguration = findOne(webhookObjects(defaults), 'MutatingWebhookConfiguration').metadata.name;
  expect(rules).toEqual([
    { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'get'] },
    { apiGroups: ['apps'], resources: ['replicasets'], verbs: ['get'] },
    { apiGroups: ['admissionregistration.k8s.io'], resources: ['mutatingwebhookconfigurations'], resourceNames: [webhookConfiguration], verbs: ['list', 'watch'] },
    { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] },
  ]);
  // Cluster-scoped names carry the namespace, so two releases of one name never share a role.
  expect(findOne(reporter, 'ClusterRole').metadata.name).toBe('drainguard-reporter-drainguard-system');
});

test('the selectors never cross: no webhook selector picks a reporter pod, and the reporter\'s pick only its own', () => {
  const reporterPod = deployment.spec.template.metadata.labels;
  const webhookDeployment = findOne(webhookObjects(defaults), 'Deployment') as Deployment;
  const webhookPod = webhookDeployment.spec.template.metadata.labels;
  for (const object of webhookObjects(defaults).filter((o) => ['Deployment', 'Service', 'PodDisruptionBudget', 'NetworkPolicy'].includes(o.kind)) as Selecting[]) {
    expect(`${object.kind} ${selects(selectorOf(object), reporterPod)}`).toBe(`${object.kind} false`);
  }
  for (const object of reporter.filter((o) => ['Deployment', 'Service', 'PodDisruptionBudget', 'NetworkPolicy'].includes(o.kind)) as Selecting[]) {
    expect(`${object.kind} ${selects(selectorOf(object), reporterPod)} ${selects(selectorOf(object), webhookPod)}`).toBe(`${object.kind} true false`);
  }
});

test('the container: `drainguard report` with arguments its own parser accepts, POD_NAME as its instance, HTTP probes, locked down', () => {
  const c = container();
  expect(c.args[0]).toBe('report');
  const settings = readReportFlags(c.args.slice(1), { POD_NAME: 'drainguard-reporter-7d9f-abcde' });
  expect(settings).toMatchObject({ port: 8080, maxReportAgeMs: 2_700_000, requestTimeoutMs: 10_000, instance: 'drainguard-reporter-7d9f-abcde', logLevel: 'info' });
  // Only pods in namespaces this release's webhook selects are reported.
  expect(settings).toMatchObject({ webhookConfigName: findOne(webhookObjects(defaults), 'MutatingWebhookConfiguration').metadata.name });
  expect(c.env).toEqual([
    { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'NODE_OPTIONS', value: '--max-old-space-size=96 --max-semi-space-size=1 --v8-pool-size=1' },
    { name: 'MALLOC_MMAP_THRESHOLD_', value: '8192' },
  ]);
  expect(c.ports).toEqual([{ name: 'http-metrics', containerPort: 8080, protocol: 'TCP' }]);
  expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http-metrics', scheme: 'HTTP' });
  expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http-metrics', scheme: 'HTTP' });
  expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
  // The heap limit leaves half the memory limit for code, buffers and the young generation.
  expect(c.resources.limits.memory).toBe('192Mi');
});

test('settings reach the arguments, and the values schema refuses what the reporter would', () => {
  const objects = reporterObjects(renderChart({ namespace: NS, set: { 'report.port': 9090, 'report.maxReportAgeSeconds': 1800, 'report.replicaCount': 1, 'report.logLevel': 'debug' } }));
  const c = (findOne(objects, 'Deployment') as Deployment).spec.template.spec.containers[0]!;
  expect(readReportFlags(c.args.slice(1), {})).toMatchObject({ port: 9090, maxReportAgeMs: 1_800_000, logLevel: 'debug' });
  expect(objects.map((o) => o.kind)).not.toContain('PodDisruptionBudget');
  const refused: Record<string, string | number>[] = [{ 'report.port': 0 }, { 'report.maxReportAgeSeconds': 0 }, { 'report.logLevel': 'loud' }, { 'report.replicas': 2 }];
  for (const set of refused) {
    expect(renderChartFailure({ namespace: NS, set }).status).not.toBe(0);
  }
});

test('the ServiceMonitor scrapes the reporter\'s Service over plain HTTP on its metrics port', async () => {
  const objects = reporterObjects(renderChart({ namespace: NS, set: { 'metrics.serviceMonitor.enabled': true } }));
  expect(await validateAll(objects)).toEqual([]);
  const monitor = findOne(objects, 'ServiceMonitor') as K8sObject & { spec: { selector: { matchLabels: Record<string, string> }; endpoints: Record<string, unknown>[] } };
  const service = findOne(objects, 'Service') as K8sObject & { spec: { ports: { name: string; targetPort: string }[] } };
  expect(selects(monitor.spec.selector.matchLabels, service.metadata.labels!)).toBe(true);
  // honorLabels: the drain metrics' namespace label is the Envoy pod's, which Prometheus must keep.
  expect(monitor.spec.endpoints).toEqual([{ port: 'http-metrics', scheme: 'http', path: '/metrics', honorLabels: true, interval: '30s', scrapeTimeout: '10s' }]);
  expect(service.spec.ports.map((port) => [port.name, port.targetPort])).toEqual([['http-metrics', 'http-metrics']]);
  // The webhook's own ServiceMonitor still selects only the webhook's Service.
  const webhookMonitor = findOne(webhookObjects(renderChart({ namespace: NS, set: { 'metrics.serviceMonitor.enabled': true } })), 'ServiceMonitor') as typeof monitor;
  expect(selects(webhookMonitor.spec.selector.matchLabels, service.metadata.labels!)).toBe(false);
});

test('the NetworkPolicy opens only the metrics port', () => {
  const policy = findOne(reporter, 'NetworkPolicy') as K8sObject & { spec: { ingress: unknown[]; policyTypes: string[] } };
  expect(policy.spec).toMatchObject({ policyTypes: ['Ingress'], ingress: [{ ports: [{ port: 8080, protocol: 'TCP' }] }] });
  expect(reporterObjects(renderChart({ namespace: NS, set: { 'networkPolicy.enabled': false } })).map((o) => o.kind)).not.toContain('NetworkPolicy');
});
