/**
 * The Node runtime settings the chart gives a container (charts/drainguard/values.yaml `server.runtime`,
 * `report.runtime`, `report.maxHeapMiB`), as the environment the benchmarks start that process with:
 * a process measured here runs as the chart runs it. Read from the chart of the checkout whose build
 * runs, so another checkout's process (bench/versus.ts) runs with that checkout's own settings, or
 * Node's defaults when its chart has none.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT } from '../../test/support/repo';

interface Runtime {
  semiSpaceMiB: number;
  v8PoolSize: number;
  mallocMmapThresholdBytes: number;
}

interface Values {
  server?: { runtime?: Runtime };
  report?: { runtime?: Runtime; maxHeapMiB?: number };
}

export type ChartComponent = 'server' | 'report';

/** `NODE_OPTIONS` and `MALLOC_MMAP_THRESHOLD_` as the chart of `root` sets them for `component` (absent ones omitted). */
export function chartRuntimeEnv(component: ChartComponent, root = REPO_ROOT): Record<string, string> {
  const path = join(root, 'charts', 'drainguard', 'values.yaml');
  const values = existsSync(path) ? (parse(readFileSync(path, 'utf8')) as Values) : {};
  const runtime = values[component]?.runtime;
  const options: string[] = [];
  const maxHeapMiB = component === 'report' ? values.report?.maxHeapMiB : undefined;
  if (maxHeapMiB !== undefined) options.push(`--max-old-space-size=${maxHeapMiB}`);
  if (runtime) options.push(`--max-semi-space-size=${runtime.semiSpaceMiB}`, `--v8-pool-size=${runtime.v8PoolSize}`);
  return {
    ...(options.length > 0 ? { NODE_OPTIONS: options.join(' ') } : {}),
    ...(runtime ? { MALLOC_MMAP_THRESHOLD_: String(runtime.mallocMmapThresholdBytes) } : {}),
  };
}

/** `process.env` without what would change how Node runs a measured process, then `runtime` on top. */
export function measuredEnv(runtime: Record<string, string>): NodeJS.ProcessEnv {
  const { NODE_OPTIONS: _options, MALLOC_MMAP_THRESHOLD_: _threshold, ...rest } = process.env;
  return { ...rest, ...runtime };
}
