/**
 * `drainguard check --pre`: what `helm install` of the chart needs from a cluster, checked before it
 * runs, so that an install does not fail half-way or leave a webhook that cannot work. Reads, and
 * SelfSubjectAccessReviews (questions to the authorizer; nothing is stored).
 */
import { describeFailure, type AccessQuestion, type ClusterReader, type ServerVersion } from './cluster';
import { controlPlaneImageVolumes, describeNodes, nodeImageVolumes, type NodeImageVolumes } from './image-volumes';
import type { InstallationNames } from './names';
import { linesOf, summarise, type CheckResult, type CheckReport } from './report';

/** The chart's `tls.mode`: how the webhook will get its certificate. */
export type PlannedTlsMode = 'self' | 'certManager' | 'secret';
export const PLANNED_TLS_MODES: readonly PlannedTlsMode[] = ['self', 'certManager', 'secret'];

/** The oldest Kubernetes the chart installs on (Chart.yaml `kubeVersion: >=1.27.0-0`). */
export const MINIMUM_KUBERNETES = { major: 1, minor: 27 } as const;

/**
 * Webhook matchConditions (feature gate AdmissionWebhookMatchConditions): alpha and off by default in
 * 1.27, beta and on by default in 1.28 and 1.29, GA from 1.30. The chart's `webhook.matchConditions:
 * auto` renders them from 1.30 on.
 */
const MATCH_CONDITIONS_BETA_MINOR = 28;
const MATCH_CONDITIONS_GA_MINOR = 30;

interface ChartObject {
  resource: string;
  group: string;
  namespaced: boolean;
}

const namespaced = (resource: string, group = ''): ChartObject => ({ resource, group, namespaced: true });
const clusterScoped = (resource: string, group: string): ChartObject => ({ resource, group, namespaced: false });

/**
 * The kinds of object `helm install` creates with the chart's default values in each TLS mode
 * (test/integration/chart/helm-test-hook.test.ts renders the chart to keep this list true).
 */
export function chartObjects(tlsMode: PlannedTlsMode): ChartObject[] {
  return [
    namespaced('configmaps'),
    namespaced('services'),
    namespaced('serviceaccounts'),
    namespaced('deployments', 'apps'),
    namespaced('poddisruptionbudgets', 'policy'),
    namespaced('networkpolicies', 'networking.k8s.io'),
    clusterScoped('mutatingwebhookconfigurations', 'admissionregistration.k8s.io'),
    // The reporter's (report.enabled, on by default), the helm test's check (helmTest.enabled, on by
    // default), and in self mode the webhook's too.
    clusterScoped('clusterroles', 'rbac.authorization.k8s.io'),
    clusterScoped('clusterrolebindings', 'rbac.authorization.k8s.io'),
    namespaced('roles', 'rbac.authorization.k8s.io'),
    namespaced('rolebindings', 'rbac.authorization.k8s.io'),
    ...(tlsMode === 'certManager' ? [namespaced('issuers', 'cert-manager.io'), namespaced('certificates', 'cert-manager.io')] : []),
  ];
}

export interface PreInstallOptions {
  names: InstallationNames;
  tlsMode: PlannedTlsMode;
}

export type PreInstallReport = Pick<CheckReport, 'context' | 'server' | 'checks' | 'nodes' | 'summary'> & {
  preInstall: { release: string; namespace: string; tlsMode: PlannedTlsMode; kubernetesVersion?: string };
};

const CATEGORY = 'pre-install' as const;
const line = linesOf(CATEGORY);

/** `{ major: 1, minor: 30 }` from `/version`: `gitVersion` first (`v1.30.2-eks-…`), else major/minor (`30+`). */
export function kubernetesRelease(version: ServerVersion): { major: number; minor: number } | undefined {
  const git = /^v?(\d{1,4})\.(\d{1,4})(\.|$|-|\+)/.exec(version.gitVersion);
  if (git) return { major: Number(git[1]), minor: Number(git[2]) };
  const major = /^(\d{1,4})\+?$/.exec(version.major);
  const minor = /^(\d{1,4})\+?$/.exec(version.minor);
  return major && minor ? { major: Number(major[1]), minor: Number(minor[1]) } : undefined;
}

export async function runPreInstallCheck(reader: ClusterReader, options: PreInstallOptions): Promise<Omit<PreInstallReport, 'context' | 'server'>> {
  const { names, tlsMode } = options;
  const [versionRead, nodesRead, webhookRead, namespaceRead, certManagerRead] = await Promise.all([
    reader.serverVersion(),
    reader.nodes(),
    reader.webhookConfiguration(names.webhookConfiguration),
    reader.namespace(names.namespace),
    tlsMode === 'certManager' ? reader.servedResources('cert-manager.io', 'v1') : Promise.resolve(undefined),
  ]);
  const checks: CheckResult[] = [];

  let kubernetesVersion: string | undefined;
  if (!versionRead.ok) {
    checks.push(line('kubernetes-version', 'fail', describeFailure(versionRead, 'the Kubernetes version')));
  } else {
    kubernetesVersion = versionRead.value.gitVersion;
    const release = kubernetesRelease(versionRead.value);
    checks.push(...versionChecks(versionRead.value, release));
  }

  if (certManagerRead !== undefined) checks.push(certManagerCheck(certManagerRead));
  const nodes = nodesRead.ok ? nodesRead.value.map(nodeImageVolumes) : undefined;
  checks.push(imageVolumesCheck(versionRead.ok ? versionRead.value.gitVersion : undefined, nodes ?? describeFailure(nodesRead as Exclude<typeof nodesRead, { ok: true }>, 'nodes')));

  if (webhookRead.ok) {
    const annotations = webhookRead.value.metadata?.annotations ?? {};
    const owner = annotations['meta.helm.sh/release-name'];
    const ownerNamespace = annotations['meta.helm.sh/release-namespace'];
    const label = `MutatingWebhookConfiguration ${names.webhookConfiguration}`;
    checks.push(
      owner === names.release && ownerNamespace === names.namespace
        ? line(
            'webhook-name',
            'fail',
            `${label} exists: drainguard is already installed as release ${names.release} in ${names.namespace}`,
            `upgrade it with helm upgrade, and check it with drainguard check (without --pre)`,
          )
        : line(
            'webhook-name',
            'fail',
            `${label} already exists and ${owner ? `belongs to Helm release ${owner} in ${ownerNamespace ?? 'an unknown namespace'}` : 'was not created by Helm'}: helm install would refuse to take it over`,
            'pick another release name or namespace (--release, --drainguard-namespace), or delete that configuration if nothing uses it',
          ),
    );
  } else if (webhookRead.reason === 'not-found') {
    checks.push(line('webhook-name', 'pass', `no MutatingWebhookConfiguration named ${names.webhookConfiguration} exists yet`));
  } else {
    checks.push(line('webhook-name', 'fail', describeFailure(webhookRead, `MutatingWebhookConfiguration ${names.webhookConfiguration}`)));
  }

  const namespaceExists = namespaceRead.ok;
  if (namespaceRead.ok) checks.push(line('install-namespace', 'info', `namespace ${names.namespace} exists`));
  else if (namespaceRead.reason === 'not-found') {
    checks.push(line('install-namespace', 'info', `namespace ${names.namespace} does not exist yet: install with helm install --create-namespace`));
  } else checks.push(line('install-namespace', 'fail', describeFailure(namespaceRead, `namespace ${names.namespace}`)));

  checks.push(await permissionsCheck(reader, names.namespace, tlsMode, namespaceExists));

  return {
    preInstall: { release: names.release, namespace: names.namespace, tlsMode, ...(kubernetesVersion ? { kubernetesVersion } : {}) },
    checks,
    ...(nodes ? { nodes } : {}),
    summary: summarise(checks),
  };
}

/**
 * Whether this cluster can use `installer.delivery: image-volume` (docs/configuration.md, "Copy or image
 * volume"): its API server must keep image volumes, and the nodes that run Envoy must mount them. A note
 * either way: copy, the default, works everywhere.
 */
function imageVolumesCheck(kubernetesVersion: string | undefined, nodes: readonly NodeImageVolumes[] | string): CheckResult {
  const controlPlane = kubernetesVersion === undefined ? undefined : controlPlaneImageVolumes(kubernetesVersion);
  const parts = [controlPlane === undefined ? 'the Kubernetes version is unknown' : controlPlane.reason];
  parts.push(typeof nodes === 'string' ? `${nodes}: which nodes can mount them is not known` : describeNodes(nodes));
  if (typeof nodes !== 'string') {
    for (const node of nodes.filter((each) => each.capability !== 'yes')) parts.push(`node ${node.name}: ${node.reason}`);
  }
  const verdict =
    controlPlane?.capability !== 'yes'
      ? 'installer.delivery: image-volume is not for this cluster (copy, the default, is)'
      : typeof nodes !== 'string' && nodes.length > 0 && nodes.every((node) => node.capability === 'yes')
        ? 'the cluster can use installer.delivery: image-volume'
        : 'installer.delivery: image-volume only where Envoy runs on nodes that mount image volumes';
  return line('image-volumes', 'info', `${verdict}: ${parts.join('; ')}`);
}

function versionChecks(version: ServerVersion, release: { major: number; minor: number } | undefined): CheckResult[] {
  const minimum = `${MINIMUM_KUBERNETES.major}.${MINIMUM_KUBERNETES.minor}`;
  if (release === undefined) {
    return [line('kubernetes-version', 'fail', `Kubernetes version ${JSON.stringify(version.gitVersion)} cannot be read as MAJOR.MINOR; drainguard needs ${minimum} or newer`)];
  }
  const text = `Kubernetes ${release.major}.${release.minor} (${version.gitVersion})`;
  const tooOld = release.major < MINIMUM_KUBERNETES.major || (release.major === MINIMUM_KUBERNETES.major && release.minor < MINIMUM_KUBERNETES.minor);
  if (tooOld) {
    return [line('kubernetes-version', 'fail', `${text}: drainguard needs ${minimum} or newer (the chart refuses older clusters)`, 'upgrade the cluster first')];
  }
  const checks = [line('kubernetes-version', 'pass', `${text}: ${minimum} or newer`)];
  const newer = release.major > 1;
  if (newer || release.minor >= MATCH_CONDITIONS_GA_MINOR) {
    checks.push(line('match-conditions', 'pass', "webhook matchConditions are GA: the chart adds them, so only pods that may be Envoy pods are sent to drainguard"));
  } else if (release.minor >= MATCH_CONDITIONS_BETA_MINOR) {
    checks.push(
      line(
        'match-conditions',
        'info',
        'webhook matchConditions are beta here (AdmissionWebhookMatchConditions, on unless the cluster turned it off); the chart adds them only from 1.30, so every pod of an opted-in namespace is sent to drainguard (webhook.matchConditions=true adds them)',
      ),
    );
  } else {
    checks.push(
      line(
        'match-conditions',
        'info',
        'webhook matchConditions are alpha and off by default in 1.27; the chart leaves them out, so every pod of an opted-in namespace is sent to drainguard (keep webhook.matchConditions at auto or false)',
      ),
    );
  }
  return checks;
}

const CERT_MANAGER_RESOURCES = ['certificates', 'issuers'];

function certManagerCheck(read: Awaited<ReturnType<ClusterReader['servedResources']>>): CheckResult {
  const hint = 'install cert-manager (its CRDs and its CA injector) first, or install with tls.mode=self (the default)';
  if (!read.ok) {
    if (read.reason === 'not-found') {
      return line('cert-manager', 'fail', 'tls.mode certManager: the API server does not serve cert-manager.io/v1 (no cert-manager CRDs)', hint);
    }
    return line('cert-manager', 'fail', `tls.mode certManager: ${describeFailure(read, 'the cert-manager.io/v1 API')}`, hint);
  }
  const served = new Set(read.value.map((resource) => resource.name));
  const missing = CERT_MANAGER_RESOURCES.filter((resource) => !served.has(resource));
  if (missing.length > 0) {
    return line('cert-manager', 'fail', `tls.mode certManager: cert-manager.io/v1 does not serve ${missing.join(', ')}`, hint);
  }
  return line('cert-manager', 'pass', 'tls.mode certManager: cert-manager.io/v1 serves certificates and issuers (cert-manager CRDs installed)');
}

function describeObject(object: ChartObject): string {
  return object.group ? `${object.resource}.${object.group}` : object.resource;
}

async function permissionsCheck(reader: ClusterReader, namespace: string, tlsMode: PlannedTlsMode, namespaceExists: boolean): Promise<CheckResult> {
  const questions: AccessQuestion[] = chartObjects(tlsMode).map((object) => ({
    verb: 'create',
    resource: object.resource,
    group: object.group,
    ...(object.namespaced ? { namespace } : {}),
  }));
  if (!namespaceExists) questions.push({ verb: 'create', resource: 'namespaces', group: '' });
  const answers = await Promise.all(questions.map((question) => reader.mayI(question)));
  const refused: string[] = [];
  for (const [index, answer] of answers.entries()) {
    const question = questions[index]!;
    const what = `${describeObject({ resource: question.resource, group: question.group, namespaced: question.namespace !== undefined })}${question.namespace ? ` in ${question.namespace}` : ''}`;
    if (!answer.ok) return line('permissions', 'fail', describeFailure(answer, `the question whether you may create ${what}`));
    if (!answer.value.allowed) refused.push(what);
  }
  if (refused.length > 0) {
    return line(
      'permissions',
      'fail',
      `you may not create ${refused.join(', ')}: helm install would stop half-way`,
      'install as a user with those permissions (cluster-admin, typically)',
    );
  }
  return line('permissions', 'pass', `you may create every kind of object the chart installs (${questions.length} asked with SelfSubjectAccessReview)`);
}
