/**
 * Reads Prometheus text exposition (what /metrics answers) into samples, so tests compare numbers,
 * not regular expressions. Only what prom-client writes: `name{label="value",…} number` lines, `#`
 * comments; label values with `\\`, `\"` and `\n` escapes. `promtool check metrics` (the real
 * Prometheus tool) is what checks the format itself.
 */
import { spawnSync } from 'node:child_process';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/y;

export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    const body = match[3] ?? '';
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < body.length) {
      const label = LABEL.exec(body);
      if (!label) throw new Error(`unreadable labels in: ${line}`);
      labels[label[1]!] = label[2]!.replace(/\\(.)/g, (_all, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: match[1]!, labels, value: Number(match[4]) });
  }
  return samples;
}

/** The sum of every sample named `name` whose labels include `labels` (over several scrapes: several replicas). */
export function total(scrapes: readonly string[], name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const text of scrapes) {
    for (const sample of parseMetrics(text)) {
      if (sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value)) sum += sample.value;
    }
  }
  return sum;
}

/** Every distinct label set of the samples named `name`, as `key=value,…` strings (for cardinality checks). */
export function series(scrapes: readonly string[], name: string): string[] {
  const found = new Set<string>();
  for (const text of scrapes) {
    for (const sample of parseMetrics(text)) {
      if (sample.name !== name) continue;
      found.add(
        Object.entries(sample.labels)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([key, value]) => `${key}=${value}`)
          .join(','),
      );
    }
  }
  return [...found].sort();
}

/**
 * `promtool check metrics` on a scrape: Prometheus's own reading of the format (and its lint rules).
 * Families whose name matches `skip` are left out first (prom-client's default process metrics, whose
 * `nodejs_active_*_total` gauges the lint flags, are prom-client's names, not ours).
 */
export function promtoolCheck(text: string, skip?: RegExp): { status: number; output: string } {
  const kept = skip
    ? text
        .split('\n')
        .filter((line) => !skip.test(line.startsWith('# ') ? (line.split(' ')[2] ?? '') : line))
        .join('\n')
    : text;
  const result = spawnSync('promtool', ['check', 'metrics'], { input: kept, encoding: 'utf8' });
  if (result.error) throw result.error;
  return { status: result.status ?? -1, output: `${result.stdout}${result.stderr}` };
}
