/**
 * `drainguard check` from start to end: the installation, then every pod in scope judged with the
 * webhook's own code, the opt-in label of every namespace that holds Envoy pods, and the commands
 * that fix what is unprotected. Reads only: nothing here can write to the cluster.
 */
import type { Pod } from '../mutate';
import { describeFailure, type ClusterReader } from './cluster';
import { checkRecentDrains } from './drains';
import { describeNodes, nodeImageVolumes, type NodeImageVolumes } from './image-volumes';
import { CHART_DEFAULT_NAMESPACE_SELECTOR, checkInstallation, type InstallationFacts, type WebhookView } from './installation';
import type { InstallationNames } from './names';
import { assessPod, judgePod } from './pods';
import { linesOf, summarise, type CheckReport, type CheckResult, type EnvoyPodReport, type Scope } from './report';
import { describeSelector, failedExpressions, missingLabels, selects, type Labels } from '../k8s/label-selector';
import { mapWithLimit, OwnerResolver, planFixes, type FixCandidate, type NamespaceCoverage } from './workloads';

export interface CheckOptions {
  names: InstallationNames;
  scope: Scope;
  now: Date;
  /** This program's version: what pods are compared with when the Deployment does not say. */
  checkVersion: string;
}

/** Reads of namespaces and ReplicaSets in flight at once. */
const READ_CONCURRENCY = 8;

interface EnvoyPod {
  report: EnvoyPodReport;
  raw: Pod;
}

export async function runCheck(reader: ClusterReader, options: CheckOptions): Promise<Omit<CheckReport, 'context' | 'server'>> {
  const { names, scope, now, checkVersion } = options;
  const installation = await checkInstallation(reader, names, now, checkVersion);
  const { facts } = installation;

  const envoyPods: EnvoyPod[] = [];
  const refused: CheckResult[] = [];
  const scopeNamespace = scope.allNamespaces ? undefined : scope.namespace;
  const listed = await reader.eachPodPage(scopeNamespace, (pods) => {
    for (const raw of pods) {
      const assessment = assessPod(raw, facts.config, facts.installedVersion);
      if (assessment.kind === 'envoy') envoyPods.push({ report: assessment.report, raw });
      else if (assessment.kind === 'refused') {
        refused.push({ category: 'pods', id: 'pod', verdict: 'fail', message: `${assessment.namespace}/${assessment.name}: ${assessment.message}` });
      }
    }
  });
  const where = scope.allNamespaces ? 'all namespaces' : `namespace ${scope.namespace}`;
  const podList: CheckResult = !listed.ok
    ? { category: 'pods', id: 'pod-list', verdict: 'fail', message: describeFailure(listed, `pods in ${where}`) }
    : listedLine(listed.value, envoyPods, where, scope);

  // Namespaces whose Envoy pods the webhook should see; an opted-out pod does not need its namespace.
  const namespaces = [...new Set(envoyPods.filter((p) => p.report.protection !== 'opted-out').map((p) => p.report.namespace))].sort();
  const coverageResults = await mapWithLimit(namespaces, READ_CONCURRENCY, (namespace) => namespaceCoverage(reader, namespace, facts, envoyPods));
  const coverage = new Map(namespaces.map((namespace, index) => [namespace, coverageResults[index]!.coverage]));

  const resolver = new OwnerResolver(reader);
  const owners = await mapWithLimit(envoyPods, READ_CONCURRENCY, (pod) => resolver.resolve(pod.raw));
  envoyPods.forEach((pod, index) => (pod.report.owner = owners[index]!.owner));

  const nodesListed = await reader.nodes();
  const nodes = nodesListed.ok ? nodesListed.value.map(nodeImageVolumes) : undefined;
  const delivery = facts.config.installer.delivery;
  const nodeChecks = imageVolumeNodeChecks(nodesListed.ok ? { nodes: nodes! } : { failure: describeFailure(nodesListed, 'nodes') }, delivery);
  const context = { installedVersion: facts.installedVersion, delivery, ...(nodes ? { nodes: new Map(nodes.map((node) => [node.name, node])) } : {}) };

  const podChecks: CheckResult[] = envoyPods.map(({ report }, index) => {
    const verdict = judgePod(report, context);
    const problem = owners[index]!.problem;
    const hint = [verdict.hint, problem ? `its owner could not be followed: ${problem}` : undefined].filter(Boolean).join('; ');
    return {
      category: 'pods',
      id: 'pod',
      verdict: verdict.verdict,
      message: `${report.namespace}/${report.name}: ${verdict.message}`,
      ...(hint ? { hint } : {}),
      pod: report,
    };
  });
  const podLines = [...podChecks, ...refused].sort((a, b) => a.message.localeCompare(b.message));

  const candidates: FixCandidate[] = envoyPods
    .filter(({ report }) => !report.terminating && report.leftWhole === undefined && RECREATION_FIXES.has(report.protection))
    .map(({ report, raw }) => ({
      pod: report,
      owner: report.owner!,
      coverage: coverage.get(report.namespace),
      objectSelected: facts.webhooks === undefined || facts.webhooks.some((webhook) => selects(webhook.objectSelector, labelsOf(raw))),
    }));

  const drains = await checkRecentDrains(reader, { names, scope });
  const checks = [...installation.checks, ...coverageResults.map((result) => result.check), ...nodeChecks, podList, ...podLines, ...drains];
  return {
    scope,
    installation: {
      release: names.release,
      namespace: names.namespace,
      webhookConfiguration: names.webhookConfiguration,
      version: facts.installedVersion,
      versionSource: facts.versionSource,
    },
    checks,
    ...(nodes ? { nodes } : {}),
    fixes: planFixes(candidates),
    summary: summarise(checks),
  };
}

/** The protections a recreation of the pod fixes: the webhook then writes it as it is configured now. */
const RECREATION_FIXES = new Set<EnvoyPodReport['protection']>(['none', 'other-version', 'other-delivery']);

/**
 * Whether the nodes can mount image volumes (docs/check.md, "Image volumes"): in copy mode one line, for
 * whoever considers image-volume; in image-volume mode also a line for each node that cannot or may not.
 * A node that cannot is no failure by itself (Envoy may never run there): an Envoy pod that runs on one
 * fails its own line.
 */
export function imageVolumeNodeChecks(listed: { nodes: readonly NodeImageVolumes[] } | { failure: string }, delivery: 'copy' | 'image-volume'): CheckResult[] {
  const line = linesOf('nodes');
  const mode = `installer.delivery: ${delivery}`;
  if ('failure' in listed) return [line('image-volumes', 'info', `${listed.failure}: which nodes can mount image volumes is not known (${mode})`)];
  const { nodes } = listed;
  // No nodes (a control plane alone): nothing to say in copy mode, and a note in image-volume mode.
  if (nodes.length === 0) return delivery === 'copy' ? [] : [line('image-volumes', 'info', `the cluster lists no nodes: none to judge whether they can mount image volumes (${mode})`)];
  const counts = describeNodes(nodes);
  if (delivery === 'copy') return [line('image-volumes', 'info', `${counts}: what installer.delivery: image-volume needs on every node that runs Envoy (${mode} now)`)];
  const lacking = nodes.filter((node) => node.capability !== 'yes');
  return [
    line(
      'image-volumes',
      lacking.length === 0 ? 'pass' : 'info',
      `${counts} (${mode})`,
      lacking.length === 0 ? undefined : 'an Envoy pod placed on a node that cannot mount them fails to start: keep Envoy on nodes that can (nodeSelector or affinity)',
    ),
    ...lacking.map((node) =>
      line('node', 'info', `node ${node.name} ${node.capability === 'no' ? 'cannot' : 'may not'} mount image volumes: ${node.reason} (kubelet ${node.kubeletVersion}, ${node.containerRuntimeVersion})`),
    ),
  ];
}

function labelsOf(pod: Pod): Labels {
  return pod.metadata?.labels ?? {};
}

function listedLine(total: number, envoyPods: readonly EnvoyPod[], where: string, scope: Scope): CheckResult {
  const namespaces = new Set(envoyPods.map((pod) => pod.report.namespace)).size;
  if (envoyPods.length === 0) {
    const wider = scope.allNamespaces ? '' : ' (-A checks every namespace)';
    return { category: 'pods', id: 'pod-list', verdict: 'info', message: `no Envoy pods among ${total} pods in ${where}${wider}` };
  }
  const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;
  return {
    category: 'pods',
    id: 'pod-list',
    verdict: 'pass',
    message: `${plural(envoyPods.length, 'Envoy pod')} in ${plural(namespaces, 'namespace')} among ${total} pods in ${where}`,
  };
}

async function namespaceCoverage(
  reader: ClusterReader,
  namespace: string,
  facts: InstallationFacts,
  envoyPods: readonly EnvoyPod[],
): Promise<{ check: CheckResult; coverage: NamespaceCoverage | undefined }> {
  const count = envoyPods.filter((pod) => pod.report.namespace === namespace).length;
  const pods = `${count} Envoy pod${count === 1 ? '' : 's'}`;
  const coverageLine = linesOf('coverage');
  const line = (verdict: CheckResult['verdict'], message: string, hint?: string): CheckResult => coverageLine('namespace', verdict, message, hint);
  const read = await reader.namespace(namespace);
  if (!read.ok) return { check: line('fail', `${describeFailure(read, `namespace ${namespace}`)} (${pods})`), coverage: undefined };
  const labels: Labels = read.value.metadata?.labels ?? {};

  // Without the webhook configuration, judge by the chart's default label, and say so.
  const webhooks: WebhookView[] = facts.webhooks ?? [{ name: 'the chart default', namespaceSelector: CHART_DEFAULT_NAMESPACE_SELECTOR }];
  const assumed = facts.webhooks === undefined ? " (judged by the chart's default label: the webhook configuration could not be read)" : '';
  if (webhooks.some((webhook) => selects(webhook.namespaceSelector, labels))) {
    const selector = describeSelector(webhooks.find((webhook) => selects(webhook.namespaceSelector, labels))?.namespaceSelector);
    return { check: line('pass', `namespace ${namespace} is opted in (${selector}): ${pods}${assumed}`), coverage: { selected: true } };
  }
  const selector = webhooks[0]?.namespaceSelector;
  const excludedBy = failedExpressions(selector, labels);
  if (excludedBy.length > 0) {
    return {
      check: line(
        'fail',
        `namespace ${namespace} is excluded by the webhook's namespaceSelector (${excludedBy.join(', ')}): ${pods} drainguard never rewrites${assumed}`,
        'run Envoy in another namespace, or remove it from webhook.excludedNamespaces',
      ),
      coverage: { selected: false, excludedBy },
    };
  }
  const missing = missingLabels(selector, labels);
  const overwrite = missing.some(([key]) => Object.hasOwn(labels, key)) ? ' --overwrite' : '';
  const labelCommand = `kubectl label namespace ${namespace} ${missing.map(([key, value]) => `${key}=${value}`).join(' ')}${overwrite}`;
  return {
    check: line(
      'fail',
      `namespace ${namespace} is not opted in: it lacks ${missing.map(([key, value]) => `${key}=${value}`).join(', ')} (${pods})${assumed}`,
      `${labelCommand}, then restart its Envoy workloads (see the fixes below)`,
    ),
    coverage: { selected: false, labelCommand },
  };
}
