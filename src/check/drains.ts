/**
 * Recent drains in `drainguard check`: the reporter's Deployment, and per workload the outcome of its
 * last drains as the reporter's pod Events record them (their `drainguard.io/drain` annotation, read
 * strictly: a message is never parsed). A workload fails when any of its recent drains hit the deadline,
 * was not reported, was interrupted, or otherwise did not drain. Events live for the API server's
 * --event-ttl (1 h by default), so "recent" means that. Reads only.
 */
import type * as k8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { describeListeners, describeUdpProxies, formatSeconds } from '../report/describe';
import type { DrainOutcome } from '../report/drain-event';
import { describeFailure, type ClusterReader, type DrainEventView, type Read } from './cluster';
import type { InstallationNames } from './names';
import type { CheckResult, Scope, WorkloadDrains } from './report';

/** Drains shown and judged per workload. */
export const RECENT_DRAINS = 10;

/** How each outcome is counted in a line, and what to do about it. */
const OUTCOME_WORDS: Record<Exclude<DrainOutcome, 'drained' | 'exited'>, { words: string; advice: string }> = {
  deadline: { words: 'deadline', advice: 'raise terminationGracePeriodSeconds or set drainguard.io/min-connections' },
  'not-reported': {
    words: 'not reported',
    advice: 'the drain left no record: look for FailedPreStopHook events on the pods and check the pod lines above',
  },
  interrupted: { words: 'interrupted', advice: 'a drain was killed before its deadline: keep terminationGracePeriodSeconds above it (no shorter --grace-period)' },
  'admin-unreachable': { words: 'admin unreachable', advice: "the drain could not reach Envoy's admin API: check the preStop's --admin address (the pod lines above)" },
  signal: { words: 'stopped by a signal', advice: 'something signalled the drain program: find what' },
  unreadable: { words: 'record unreadable', advice: "only drainguard's drain program should write Envoy's termination message file" },
};

const timeOf = (drain: DrainEventView) => Date.parse(drain.summary.finishedAt ?? drain.at ?? '') || 0;

function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : Math.round((sorted[middle - 1]! + sorted[middle]!) / 2);
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;

/** One workload's recent drains: the newest RECENT_DRAINS of its drains (Envoy's own exits aside). */
export function summariseWorkload(namespace: string, workload: string, views: readonly DrainEventView[]): WorkloadDrains {
  const newestFirst = [...views].sort((a, b) => timeOf(b) - timeOf(a));
  const drains = newestFirst.filter((view) => view.summary.outcome !== 'exited').slice(0, RECENT_DRAINS);
  const exits = newestFirst.filter((view) => view.summary.outcome === 'exited');
  const outcomes: Partial<Record<DrainOutcome, number>> = {};
  for (const { summary } of drains) outcomes[summary.outcome] = (outcomes[summary.outcome] ?? 0) + 1;
  const drainedDurations = drains.flatMap(({ summary }) => (summary.outcome === 'drained' && summary.durationMs !== null ? [summary.durationMs] : []));
  const medianMs = median(drainedDurations);
  return {
    namespace,
    workload,
    outcomes,
    ...(medianMs !== undefined ? { medianDrainedSeconds: medianMs / 1000 } : {}),
    envoyExits: exits.length,
    ok: drains.every(({ summary }) => summary.outcome === 'drained'),
    drains: drains.map(({ summary }) => ({
      pod: summary.pod,
      outcome: summary.outcome,
      finishedAt: summary.finishedAt,
      durationMs: summary.durationMs,
      connectionsAtEnd: summary.connectionsAtEnd,
      openListeners: summary.openListeners,
      ...(summary.udpSessionsAtEnd === undefined ? {} : { udpSessionsAtEnd: summary.udpSessionsAtEnd, openUdpProxies: summary.openUdpProxies ?? [] }),
    })),
  };
}

/**
 * `daemonset/envoy in projectcontour: last 10 drains — 9 drained, median 12 s; 1 deadline, 17 left on
 * ingress_https`; UDP sessions a deadline left are named too (`3 UDP sessions left on UDP proxy dns`).
 */
function describeWorkload(drains: WorkloadDrains): string {
  const parts: string[] = [];
  const drained = drains.outcomes.drained ?? 0;
  if (drained > 0) parts.push(`${drained} drained${drains.medianDrainedSeconds !== undefined ? `, median ${formatSeconds(drains.medianDrainedSeconds * 1000)}` : ''}`);
  for (const [outcome, { words }] of Object.entries(OUTCOME_WORDS) as [keyof typeof OUTCOME_WORDS, { words: string }][]) {
    const count = drains.outcomes[outcome] ?? 0;
    if (count === 0) continue;
    let detail = '';
    if (outcome === 'deadline') {
      // The newest deadline: how many it left, and where.
      const latest = drains.drains.find((drain) => drain.outcome === 'deadline')!;
      if (latest.connectionsAtEnd !== null && latest.connectionsAtEnd > 0) detail = `, ${latest.connectionsAtEnd} left${describeListeners(latest.openListeners, 0)}`;
      if (typeof latest.udpSessionsAtEnd === 'number' && latest.udpSessionsAtEnd > 0) {
        detail += `, ${plural(latest.udpSessionsAtEnd, 'UDP session')} left${describeUdpProxies(latest.openUdpProxies ?? [], 0)}`;
      }
      if (detail === '' && latest.connectionsAtEnd !== null) detail = `, ${latest.connectionsAtEnd} left`;
    }
    parts.push(`${count} ${words}${detail}`);
  }
  const shown = drains.drains.length;
  const exits = drains.envoyExits > 0 ? `; Envoy exited by itself ${plural(drains.envoyExits, 'time')}` : '';
  const head = shown === 0 ? 'no drains' : `last ${plural(shown, 'drain')} — ${parts.join('; ')}`;
  return `${drains.workload} in ${drains.namespace}: ${head}${exits}`;
}

function hintFor(drains: WorkloadDrains): string {
  const advice = (Object.keys(OUTCOME_WORDS) as (keyof typeof OUTCOME_WORDS)[]).filter((outcome) => (drains.outcomes[outcome] ?? 0) > 0).map((outcome) => OUTCOME_WORDS[outcome].advice);
  const describe = drains.workload === 'none' ? `kubectl -n ${drains.namespace} get events -l drainguard.io/drain-event=pod` : `kubectl -n ${drains.namespace} describe ${drains.workload}`;
  return `${advice.join('; ')} (${describe} shows each drain's Event)`;
}

export interface RecentDrainsOptions {
  names: InstallationNames;
  scope: Scope;
}

/** The reporter's Deployment and the recent drains of every workload in scope. */
export async function checkRecentDrains(reader: ClusterReader, options: RecentDrainsOptions): Promise<CheckResult[]> {
  const { names, scope } = options;
  const line = (id: CheckResult['id'], verdict: CheckResult['verdict'], message: string, hint?: string): CheckResult => ({
    category: 'drains',
    id,
    verdict,
    message,
    ...(hint ? { hint } : {}),
  });
  const [deploymentRead, eventsRead] = await Promise.all([
    reader.deployment(names.namespace, names.reporterDeployment),
    reader.drainEvents(scope.allNamespaces ? undefined : scope.namespace),
  ]);
  const checks = [reporterLine(deploymentRead, names, line)];
  const where = scope.allNamespaces ? 'all namespaces' : `namespace ${scope.namespace}`;
  if (!eventsRead.ok) {
    checks.push(line('drain-events', 'fail', describeFailure(eventsRead, `drain Events in ${where}`), 'give the user running check `list` on events (docs/check.md, "Permissions")'));
    return checks;
  }
  const byWorkload = new Map<string, DrainEventView[]>();
  for (const view of eventsRead.value) {
    const key = JSON.stringify([view.namespace, view.summary.workload]);
    byWorkload.set(key, [...(byWorkload.get(key) ?? []), view]);
  }
  if (byWorkload.size === 0) {
    checks.push(line('drain-events', 'info', `no drains reported in ${where} (the reporter's Events last for the API server's --event-ttl, 1 h by default)`));
    return checks;
  }
  for (const key of [...byWorkload.keys()].sort()) {
    const [namespace, workload] = JSON.parse(key) as [string, string];
    const drains = summariseWorkload(namespace, workload, byWorkload.get(key)!);
    const verdict = drains.drains.length === 0 ? 'info' : drains.ok ? 'pass' : 'fail';
    checks.push({ ...line('drains', verdict, describeWorkload(drains), drains.ok ? undefined : hintFor(drains)), drains });
  }
  return checks;
}

function reporterLine(
  read: Read<k8s.V1Deployment>,
  names: InstallationNames,
  line: (id: CheckResult['id'], verdict: CheckResult['verdict'], message: string, hint?: string) => CheckResult,
): CheckResult {
  const label = `reporter Deployment ${names.namespace}/${names.reporterDeployment}`;
  if (!read.ok) {
    if (read.reason === 'not-found') {
      return line('reporter', 'info', `${label} not found (report.enabled false?): no new drain outcomes are reported`);
    }
    return line('reporter', 'fail', describeFailure(read, label));
  }
  const wanted = read.value.spec?.replicas ?? 1;
  const available = read.value.status?.availableReplicas ?? 0;
  if (wanted === 0) return line('reporter', 'fail', `${label} is scaled to 0: no drain is reported`, `kubectl -n ${names.namespace} scale deployment/${names.reporterDeployment} --replicas=2`);
  if (available < 1) {
    return line('reporter', 'fail', `${label}: 0 of ${wanted} replicas available: no drain is reported`, `kubectl -n ${names.namespace} describe deployment ${names.reporterDeployment}; kubectl -n ${names.namespace} logs deployment/${names.reporterDeployment}`);
  }
  return line('reporter', 'pass', `${label}: ${available} of ${wanted} replicas available`);
}
