/** What the dashboard asks Prometheus: each panel's queries and each variable's label_values(). */
import { DRAIN_METRIC_NAMES } from '../../../src/report/metrics';

export interface PanelQuery {
  panel: string;
  expr: string;
  datasource: string;
}

export interface VariableQuery {
  name: string;
  /** label_values(SELECTOR, LABEL) */
  selector: string;
  label: string;
}

interface DashboardJson {
  panels: { title: string; type: string; targets?: { expr: string; datasource: { uid: string } }[] }[];
  templating: { list: { name: string; type: string; query?: unknown }[] };
}

export function dashboardQueries(dashboard: DashboardJson): { panels: PanelQuery[]; variables: VariableQuery[] } {
  const panels = dashboard.panels.flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr, datasource: target.datasource.uid })),
  );
  const variables = dashboard.templating.list
    .filter((variable) => variable.type === 'query')
    .map((variable) => {
      const match = /^label_values\((.+), (\w+)\)$/.exec(String(variable.query));
      if (!match) throw new Error(`variable ${variable.name}: not a label_values() query: ${String(variable.query)}`);
      return { name: variable.name, selector: match[1]!, label: match[2]! };
    });
  return { panels, variables };
}

/** The metric names a query reads (a histogram's _bucket, _sum and _count are its one metric). */
export function metricsOf(expr: string): string[] {
  const names = [...expr.matchAll(/\b(drainguard_[a-z_]+|up)\b/g)].map((m) => m[1]!.replace(/_(bucket|sum|count)$/, ''));
  return [...new Set(names)];
}

/** A query of `drainguard report`'s metrics (see DRAIN_METRIC_NAMES). */
export function readsReporter(expr: string): boolean {
  return metricsOf(expr).some((name) => (DRAIN_METRIC_NAMES as readonly string[]).includes(name));
}
