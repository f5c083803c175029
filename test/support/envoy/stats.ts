/** `/stats` rendering (docs/design.md, "Envoy's admin API"): the text and JSON shapes, ordering, filters and the bad-regex answer. */

/**
 * What Envoy makes of a name it puts into a stat name (Stats::Utility::sanitizeStatsName, source/common/stats/utility.cc):
 * one leading and one trailing `.` trimmed, every `:` and NUL replaced by `_`. So `[::]:8443` becomes `[__]_8443`,
 * and no stat name holds a `:`, which is what lets a plain-text `name: value` line split at its first `:`.
 */
export function sanitizeStatsName(name: string): string {
  return name.replace(/\.$/, '').replace(/^\./, '').replace(/[:\0]/g, '_');
}
export interface StatsModel {
  textReadouts: Map<string, string>;
  counters: Map<string, number>;
  gauges: Map<string, number>;
  /** Names of histograms; rendered with empty quantiles (enough for shape, not for values). */
  histograms: string[];
}

export interface RenderedStats {
  status: number;
  body: string;
  contentType: string;
}

const TYPES = new Set(['All', 'Counters', 'Gauges', 'Histograms', 'TextReadouts']);
/** RE2 has no lookaround or backreferences: patterns JavaScript accepts but Envoy rejects. */
const NOT_RE2 = /\(\?[=!<]|\\[1-9]/;

export function renderStats(model: StatsModel, params: URLSearchParams): RenderedStats {
  let filter: RegExp | undefined;
  const filterText = params.get('filter');
  if (filterText !== null && filterText !== '') {
    try {
      if (NOT_RE2.test(filterText)) throw new Error('not RE2');
      filter = new RegExp(filterText);
    } catch {
      return { status: 400, body: 'Invalid re2 regex', contentType: 'text/plain; charset=UTF-8' };
    }
  }
  const format = params.get('format') ?? 'text';
  if (!['text', 'json'].includes(format)) return { status: 400, body: 'usage: /stats?format=(html|active-html|json|prometheus|text)\n\n', contentType: 'text/plain; charset=UTF-8' };
  const type = params.get('type') ?? 'All';
  if (!TYPES.has(type)) return { status: 400, body: `invalid type=${type}\n`, contentType: 'text/plain; charset=UTF-8' };
  const wanted = (t: string) => type === 'All' || type === t;
  const keep = (name: string) => filter === undefined || filter.test(name);

  const readouts = wanted('TextReadouts') ? [...model.textReadouts].filter(([n]) => keep(n)).sort(byName) : [];
  // Counters and gauges come together, in name order.
  const scalars = [
    ...(wanted('Counters') ? [...model.counters] : []),
    ...(wanted('Gauges') ? [...model.gauges] : []),
  ]
    .filter(([n]) => keep(n))
    .sort(byName);
  const histograms = wanted('Histograms') ? model.histograms.filter(keep).sort() : [];

  if (format === 'json') {
    const stats: object[] = [...readouts, ...scalars].map(([name, value]) => ({ name, value }));
    if (histograms.length > 0) {
      stats.push({
        histograms: {
          supported_quantiles: [0, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 100],
          computed_quantiles: histograms.map((name) => ({ name, values: [] })),
        },
      });
    }
    return { status: 200, body: JSON.stringify({ stats }), contentType: 'application/json' };
  }
  // Plain text, Envoy's default: `name: value` lines (StatsTextRender in source/server/admin/stats_render.cc).
  const lines = [
    ...readouts.map(([n, v]) => `${n}: "${v}"`),
    ...scalars.map(([n, v]) => `${n}: ${v}`),
    ...histograms.map((n) => `${n}: No recorded values`),
  ];
  return { status: 200, body: lines.map((l) => `${l}\n`).join(''), contentType: 'text/plain; charset=UTF-8' };
}

function byName(a: [string, unknown], b: [string, unknown]): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
}
