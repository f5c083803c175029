/**
 * End to end, every part real but the API server, the kubelet and Envoy: drainguard installed from
 * the chart into the API double, a DaemonSet of five Envoy pods rewritten by drainguard's webhook code,
 * two `drainguard report` processes built from dist/ (as the chart runs them), and a rollout restart.
 * For each pod, the real static drain program runs with the arguments of the pod's own preStop hook
 * (the admin address pointed at an Envoy admin simulator, a short deadline) and writes its record to a
 * termination message file the way the kubelet provides it; the kubelet simulator reads that file as
 * the kubelet does and puts it in the pod's status. One pod has a client connection that never closes.
 * Then: one Event per drain on each pod and on the DaemonSet, the metrics summed over both processes,
 * and the `drainguard check` process failing for that workload with what to do.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI_MAIN } from '../../support/build';
import { NODE, REPO_ROOT } from '../../support/repo';
import { KubeApiDouble, type KubeObject } from '../../support/kube-api-double';
import { KubeletSimulator, readTerminationMessageFile } from '../../support/kube/kubelet';
import { total } from '../../support/metrics-text';
import { HOST_TARGET } from '../../support/envoy/shutdown-executable';
import { drainHarness } from '../shutdown/harness';
import { installDrainguard, namespace, OPT_IN } from '../../integration/check/cluster-scenario';
import { envoyWorkload, ENVOY, events, runPod, scrape } from '../../integration/report/scenario';

const h = drainHarness(HOST_TARGET, 'report');

let double: KubeApiDouble;
const processes: ChildProcess[] = [];

beforeEach(async () => {
  double = await KubeApiDouble.start();
});
afterEach(async () => {
  await Promise.all(
    processes.splice(0).map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    ),
  );
  await double.close();
});

function kubeconfigFile(): string {
  const path = join(h.workDir, `kubeconfig-${Math.random()}`);
  writeFileSync(path, double.kubeconfigYaml());
  return path;
}

/** `drainguard report` as its own process; resolves with its metrics port once it has bound it. */
function startReporterProcess(instance: string): Promise<number> {
  const child = spawn(NODE, [CLI_MAIN, 'report', '--kubeconfig', kubeconfigFile(), '--host', '127.0.0.1', '--port', '0', '--instance', instance], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  processes.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const started = out.split('\n').find((line) => line.includes('"msg":"reporter started"'));
      if (started) resolve((JSON.parse(started) as { port: number }).port);
    });
    child.once('exit', (code) => reject(new Error(`drainguard report exited with ${code}: ${out}`)));
  });
}

/** A process of the built CLI, without blocking this process (the API double answers from here). */
function drainguardCheck(args: string[]): Promise<{ code: number | null; stdout: string }> {
  const child = spawn(NODE, [CLI_MAIN, 'check', ...args, '--kubeconfig', kubeconfigFile()], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  processes.push(child);
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout })));
}

/** Waits for a condition that only a scrape can tell, checking again after each answer. */
async function scrapedUntil(ports: number[], holds: (scrapes: string[]) => boolean): Promise<string[]> {
  for (;;) {
    const scrapes = await Promise.all(ports.map((port) => scrape(port)));
    if (holds(scrapes)) return scrapes;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** The termination message file, as the kubelet creates it before the container starts: empty, 0666. */
function terminationLog(pod: string): string {
  const dir = join(h.workDir, 'termination');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, pod);
  writeFileSync(path, '');
  chmodSync(path, 0o666);
  return path;
}

/** The Envoy container's preStop command as the webhook wrote it, with the test's admin, deadline and file. */
function preStopArguments(pod: KubeObject, overrides: Record<string, string>): string[] {
  const containers = (pod.spec as { containers: { name: string; lifecycle?: { preStop?: { exec?: { command?: string[] } } } }[] }).containers;
  const command = containers.find((container) => container.name === ENVOY)!.lifecycle!.preStop!.exec!.command!;
  expect(command.slice(1, 2)).toEqual(['drain']);
  expect(command).toContain('--termination-message-path');
  const args = [...command.slice(2)];
  for (const [flag, value] of Object.entries(overrides)) {
    const at = args.indexOf(flag);
    if (at >= 0) args[at + 1] = value;
    else args.push(flag, value);
  }
  return args;
}

test('a rollout restart of 5 pods, one with a connection that never closes: 4 Drained and 1 DrainDeadline Event naming the listener, the metrics, and a failing check', async () => {
  await installDrainguard(double);
  double.put(namespace('projectcontour', OPT_IN));
  const kubelet = new KubeletSimulator(double);
  const daemonSet = envoyWorkload(double, { namespace: 'projectcontour', name: 'envoy' });
  const pods = Array.from({ length: 5 }, () => runPod(kubelet, daemonSet));
  const ports = await Promise.all([startReporterProcess('reporter-a'), startReporterProcess('reporter-b')]);
  // "reporter started" comes once the port is bound, before the first list: a pod that ended and went
  // before a process's list is one that process never sees (the other reports it). The test's count of
  // creates below needs both to see every termination, so the rollout begins once both lists were
  // answered (each later change then reaches them through the watch from the list's resourceVersion).
  const podLists = () => double.requests.filter((request) => request.method === 'GET' && request.path === '/api/v1/pods' && request.status === 200 && !/(^|&)watch=/.test(request.query ?? ''));
  await double.until(() => podLists().length >= 2);

  for (const [index, pod] of pods.entries()) {
    const name = pod.metadata.name;
    // The DaemonSet controller deletes the pod; the kubelet runs Envoy's preStop hook.
    kubelet.beginDeletion('projectcontour', name);
    const sim = await h.simulator({ listeners: [{ statName: 'ingress_https' }] });
    const clients = await h.openClients(sim, 2);
    const file = terminationLog(name);
    const stuck = index === 2;
    const flags = { '--admin': sim.adminAddress, '--deadline': stuck ? '2s' : '30s', '--min-drain': '0s', '--poll-interval': '200ms', '--termination-message-path': h.seen(file) };
    const drain = h.run(['drain', ...preStopArguments(pod, flags)]);
    await sim.waitForRequest(/^\/drain_listeners/);
    // Clients reconnect elsewhere; on the stuck pod one connection never closes.
    for (const client of stuck ? clients.slice(1) : clients) client.end();
    expect((await drain.finished).code).toBe(0);
    // The hook returned: SIGTERM, Envoy exits 0, the kubelet reads the file and deletes the pod.
    kubelet.containerExited('projectcontour', name, ENVOY, { exitCode: 0, reason: 'Completed', message: readTerminationMessageFile(file) });
    kubelet.finishDeletion('projectcontour', name);
    runPod(kubelet, daemonSet);
  }

  // Each of the two processes creates each of the 10 Events once (a pod's and the DaemonSet's per
  // drain): waiting for the 20 creates, not only for the 10 Events, waits for the slower watch too.
  const eventCreates = () => double.requests.filter((request) => request.method === 'POST' && request.path.endsWith('/events')).map((request) => request.status);
  await double.until(() => eventCreates().length === 20);
  const scrapes = await scrapedUntil(ports, (texts) => total(texts, 'drainguard_drains_total') === 5 && total(texts, 'drainguard_reporter_pending_reports') === 0);
  const podEvents = events(double).filter((event) => event.involvedObject.kind === 'Pod');
  expect(podEvents.map((event) => event.reason).sort()).toEqual(['DrainDeadline', 'Drained', 'Drained', 'Drained', 'Drained']);
  expect(podEvents.find((event) => event.reason === 'DrainDeadline')!.message).toBe(
    '1 connection still open on listener ingress_https when the 2 s deadline ended: raise terminationGracePeriodSeconds or set drainguard.io/min-connections',
  );
  for (const event of podEvents.filter((e) => e.reason === 'Drained')) expect(event.message).toMatch(/^drained 2 connections in \d+(\.\d)? s$/);
  const workloadEvents = events(double).filter((event) => event.involvedObject.kind === 'DaemonSet');
  expect(workloadEvents.map((event) => event.involvedObject.uid)).toEqual(Array(5).fill(daemonSet.uid));
  // Both processes reported every termination; the API server let one create each Event, the other got 409.
  const creates = eventCreates();
  expect(creates.filter((status) => status === 201)).toHaveLength(10);
  expect(creates.filter((status) => status === 409)).toHaveLength(10);
  expect(podEvents.every((event) => ['reporter-a', 'reporter-b'].includes(event.reportingInstance))).toBe(true);

  const labels = { namespace: 'projectcontour', workload: 'daemonset/envoy' };
  expect(total(scrapes, 'drainguard_drains_total', { ...labels, reason: 'drained' })).toBe(4);
  expect(total(scrapes, 'drainguard_drains_total', { ...labels, reason: 'deadline' })).toBe(1);
  expect(total(scrapes, 'drainguard_drain_connections_left_sum', labels)).toBe(1);
  expect(total(scrapes, 'drainguard_drain_duration_seconds_count', labels)).toBe(5);
  expect(total(scrapes, 'drainguard_reporter_watched_pods')).toBe(10);

  const text = await drainguardCheck(['-A']);
  expect(text.code).toBe(1);
  expect(text.stdout).toMatch(
    /\n× daemonset\/envoy in projectcontour: last 5 drains — 4 drained, median [0-9.]+ s; 1 deadline, 1 left on listener ingress_https\n {4}raise terminationGracePeriodSeconds or set drainguard\.io\/min-connections \(kubectl -n projectcontour describe daemonset\/envoy shows each drain's Event\)\n/,
  );
  const json = await drainguardCheck(['-A', '-o', 'json']);
  const report = JSON.parse(json.stdout) as { checks: { id: string; verdict: string; drains?: { outcomes: Record<string, number> } }[] };
  expect(report.checks.find((check) => check.id === 'drains')).toMatchObject({ verdict: 'fail', drains: { outcomes: { drained: 4, deadline: 1 } } });
}, 120_000);
