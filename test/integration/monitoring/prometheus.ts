/**
 * The real Prometheus for the monitoring tests: Debian's `prometheus` package (`prometheus`, `promtool`
 * on PATH; .ci/run installs it). `PrometheusServer.start` runs the server on loopback with a config the
 * test gives, and `query` asks its HTTP API.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { eventually } from '../server/webhook-test-kit';

export interface ToolResult {
  status: number;
  output: string;
}

/** `promtool ARGS` in `cwd`: its exit status and what it printed (stdout, then stderr). */
export function promtool(args: string[], cwd: string): ToolResult {
  const result = spawnSync('promtool', args, { cwd, encoding: 'utf8' });
  if (result.error) throw new Error(`promtool: ${result.error.message} (Debian's prometheus package brings it; .ci/run installs it)`);
  return { status: result.status ?? -1, output: `${result.stdout}${result.stderr}` };
}

export function prometheusVersion(): string {
  const result = spawnSync('prometheus', ['--version'], { encoding: 'utf8' });
  if (result.error) throw new Error(`prometheus: ${result.error.message}`);
  return `${result.stdout}${result.stderr}`.split('\n')[0]!;
}

/** One series of an instant query's result. */
export interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export class PrometheusServer {
  private constructor(
    private readonly child: ChildProcess,
    private readonly exited: Promise<void>,
    readonly url: string,
    private readonly readLog: () => string,
  ) {}

  /** What Prometheus logged (warnings and errors), for a failure message. */
  get log(): string {
    return this.readLog();
  }

  /** Writes `config` as prometheus.yml in `directory` and starts Prometheus with `flags`; resolves once it is ready. */
  static async start(config: Record<string, unknown>, directory: string, flags: string[] = []): Promise<PrometheusServer> {
    const configFile = join(directory, 'prometheus.yml');
    writeFileSync(configFile, stringify(config));
    const port = await freePort();
    const child = spawn(
      'prometheus',
      [
        `--config.file=${configFile}`,
        `--storage.tsdb.path=${join(directory, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
        ...flags,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let log = '';
    child.stderr!.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-20_000)));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const server = new PrometheusServer(child, exited, `http://127.0.0.1:${port}`, () => log);
    try {
      // Refused connections until it listens.
      await eventually('Prometheus to be ready', async () => ((await fetch(`${server.url}/-/ready`)).ok ? true : undefined), { attempts: 300, intervalMs: 100 });
    } catch (error) {
      await server.stop();
      throw error;
    }
    return server;
  }

  /** An instant query through the HTTP API (the API's own error for a query it refuses). */
  async query(expr: string, at?: Date): Promise<Sample[]> {
    const form = new URLSearchParams({ query: expr, ...(at ? { time: String(at.getTime() / 1000) } : {}) });
    const response = await fetch(`${this.url}/api/v1/query`, { method: 'POST', body: form });
    const body = (await response.json()) as { status: string; error?: string; data?: { resultType: string; result: Sample[] | [number, string] } };
    if (body.status !== 'success') throw new Error(`Prometheus refused ${expr}: ${body.error}`);
    const { resultType, result } = body.data!;
    // A scalar (vector(0) < 1 is a vector; a bare number would be a scalar) counts as one series.
    return resultType === 'scalar' ? [{ metric: {}, value: result as [number, string] }] : (result as Sample[]);
  }

  /** The values of a label on series matching `selector` (what Grafana's label_values() asks). */
  async labelValues(label: string, selector: string): Promise<string[]> {
    const response = await fetch(`${this.url}/api/v1/label/${encodeURIComponent(label)}/values?${new URLSearchParams({ 'match[]': selector })}`);
    const body = (await response.json()) as { status: string; error?: string; data?: string[] };
    if (body.status !== 'success') throw new Error(`Prometheus refused label_values(${selector}, ${label}): ${body.error}`);
    return body.data!;
  }

  /** Each scrape target's health and last error (what a failure message needs). */
  async targets(): Promise<string> {
    const body = (await (await fetch(`${this.url}/api/v1/targets`)).json()) as {
      data: { activeTargets: { scrapeUrl: string; health: string; lastError: string }[] };
    };
    return body.data.activeTargets.map((t) => `${t.scrapeUrl}: ${t.health} ${t.lastError}`).join('\n');
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    await this.exited;
  }
}
