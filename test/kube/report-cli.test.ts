/**
 * The exit codes of `drainguard report` that need an API server, provoked for real: the built CLI as its
 * own process against the test cluster's kube-apiserver (test/e2e/cli/exit-codes.test.ts provokes the
 * others and reads the table its --help prints). It runs as the cluster's admin, for a webhook
 * configuration name no other suite uses: it lists and watches, and never finds a pod to report.
 */
import { once } from 'node:events';
import { request } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { clusterInfo, eventually, uniqueSuffix } from '../support/cluster/lane';
import { temporaryDirectory } from '../integration/server/webhook-test-kit';
import { spawnDrainguard, stopAll } from '../e2e/cli/spawn-cli';

const directory = temporaryDirectory();
afterEach(() => stopAll());
afterAll(() => directory.remove());

function report(port: string) {
  return spawnDrainguard(
    ['report', '--kubeconfig', clusterInfo().adminKubeconfig, '--host', '127.0.0.1', '--port', port, '--instance', 'exit-codes', '--webhook-config-name', `report-cli-${uniqueSuffix()}`],
    { env: { HOME: directory.path } },
  );
}

/** GET /readyz of the reporter: its status code. */
function readyz(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/readyz', timeout: 10_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error('GET /readyz: no answer')));
    req.on('error', reject);
    req.end();
  });
}

test('0 after SIGTERM once it is ready (it has listed the protected pods, its webhook configuration and the namespaces, and watches them)', async () => {
  const reporter = report('0');
  // Its log's `reporter started` line says which port it bound.
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: reporter.child.stdout! }).on('line', (line) => {
      const entry = JSON.parse(line) as { msg?: string; port?: number };
      if (entry.msg === 'reporter started') resolve(entry.port!);
    });
    reporter.child.once('exit', (code) => reject(new Error(`drainguard report exited with ${code} before it started`)));
  });
  await eventually('the reporter ready', async () => ((await readyz(port)) === 200 ? true : undefined));
  reporter.child.kill('SIGTERM');
  expect((await reporter).status).toBe(0);
}, 120_000);

test('3 for a port another process holds, with the reason; the process ends (its watch never started)', async () => {
  const taken = createServer();
  taken.listen(0, '127.0.0.1');
  await once(taken, 'listening');
  try {
    const port = String((taken.address() as AddressInfo).port);
    const refused = await report(port);
    expect(refused.status).toBe(3);
    expect(refused.stderr).toContain(`drainguard report: listen EADDRINUSE: address already in use 127.0.0.1:${port}`);
  } finally {
    taken.close();
  }
});
