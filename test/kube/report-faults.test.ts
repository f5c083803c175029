/**
 * `drainguard report` through what goes wrong around it, on a cluster of the suite's own: kube-apiserver
 * audits every request of the reporter's ServiceAccount (what it asked, from which pod, and the status
 * it answered), and ends every watch after 10 to 20 s (--min-request-timeout), so bookmarks and watch
 * restarts happen within the test. Then, with drainguard installed by helm as a user installs it:
 *   - bookmarks: with no protected pod at all, each new watch resumes from a newer resourceVersion;
 *   - kube-apiserver stopped mid-rollout and etcd compacted meanwhile: the reporters' watches resume from
 *     a resourceVersion too old to watch from (410 Expired), they list again, and each drain is reported
 *     exactly once;
 *   - a reporter pod deleted mid-rollout: its successor lists the pods again, each drain is still one
 *     Event, created (201) once, and counted by the process whose create succeeded;
 *   - faults kube-apiserver does not make by itself, from a proxy in front of it (an answer lost after the
 *     write, a reset connection, a slow answer), for `drainguard report` processes run on the host with
 *     the reporter ServiceAccount's token: the process an Event's reported-by annotation names, and only
 *     it, counts the drain.
 */
import { auditFlags, readAuditLog, type AuditEvent } from '../support/cluster/audit';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parse } from 'yaml';
import { REPORTED_BY_ANNOTATION } from '../../src/report/drain-event';
import { CLI_MAIN } from '../support/build';
import type { TestCluster } from '../support/cluster/cluster';
import { FaultProxy, serviceAccountToken, type ArmedFault } from '../support/cluster/fault-proxy';
import { eventually, startPrivateCluster } from '../support/cluster/lane';
import { total } from '../support/metrics-text';
import { NODE } from '../support/repo';
import {
  contourEnvoy,
  drainEvents,
  kubectlOk,
  privateCluster,
  readyPods,
  reporterPods,
  scrape,
  type ClusterHandle,
  type EnvoyWorkload,
  type PodObject,
  type StoredEvent,
} from './report/workloads';

/** Where startPrivateCluster installs drainguard, and the reporter's ServiceAccount there. */
const RELEASE = { release: 'drainguard', namespace: 'drainguard-system' };
const REPORTER_ACCOUNT = 'drainguard-reporter';
const REPORTER_USER = `system:serviceaccount:${RELEASE.namespace}:${REPORTER_ACCOUNT}`;
const OPT_IN = { 'drainguard.io/inject': 'enabled' };

let dir: string;
let auditLog: string;
let cluster: TestCluster | undefined;
let handle: ClusterHandle;
let envoy: EnvoyWorkload;
const processes: ChildProcess[] = [];
const proxies: FaultProxy[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'drainguard-report-faults-'));
  const audit = auditFlags(dir, { users: [REPORTER_USER] });
  auditLog = audit.logPath;
  cluster = await startPrivateCluster({
    installDrainguard: true,
    apiServerArgs: [...audit.apiServerArgs, '--min-request-timeout=10'],
  });
  handle = privateCluster(cluster);
}, 600_000);

afterAll(async () => {
  await Promise.all(processes.map(stopProcess));
  await Promise.all(proxies.map((proxy) => proxy.close()));
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 300_000);

/** The reporter's requests as kube-apiserver audited them, in order. */
function audited(): AuditEvent[] {
  return readAuditLog(auditLog).filter((event) => event.user.username === REPORTER_USER);
}
const query = (event: AuditEvent) => new URL(event.requestURI, 'https://audit').searchParams;
/** Watches (as they started) and lists of protected pods, from one address. */
const podReads = (events: AuditEvent[], address: string) =>
  events.filter((e) => e.objectRef?.resource === 'pods' && e.sourceIPs[0] === address && (e.verb === 'list' ? e.stage === 'ResponseComplete' : e.verb === 'watch' && e.stage === 'ResponseStarted'));
/** Creates of pod Events (each name once per process that tried it) and their answers. */
const podEventCreates = (events: AuditEvent[], namespace: string) =>
  events.filter((e) => e.verb === 'create' && e.objectRef?.resource === 'events' && e.objectRef.namespace === namespace && e.stage === 'ResponseComplete');

async function reporterAddresses(): Promise<string[]> {
  return (await reporterPods(handle, RELEASE)).map((pod) => pod.status.podIP!);
}

const drainsIn = (texts: string[], namespace: string) => total(texts, 'drainguard_drains_total', { namespace });

async function namespace(prefix: string, labels: Record<string, string>): Promise<string> {
  const name = `${prefix}-${Math.random().toString(16).slice(2, 8)}`;
  await handle.api.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
  await eventually(`the default ServiceAccount of ${name}`, () => handle.api.find(`/api/v1/namespaces/${name}/serviceaccounts/default`));
  return name;
}

/** Pod Events of a namespace once there are `count`. */
const podEventsOnce = (ns: string, count: number) =>
  eventually(`${count} pod Events in ${ns}`, async () => {
    const events = await drainEvents(handle, ns, 'pod');
    if (events.length > count) throw new Error(`${events.length} pod Events in ${ns}, expected ${count}`);
    return events.length === count ? events : undefined;
  });

test('bookmarks: with no protected pod anywhere, each of a reporter\'s watches resumes from a newer resourceVersion, and it never lists again', async () => {
  const addresses = await reporterAddresses();
  expect((await handle.api.list('/api/v1/pods?labelSelector=drainguard.io%2Fprotected%3Dtrue')).items).toEqual([]);
  const reads = await eventually(
    'three pod watches of each reporter',
    async () => {
      const events = audited();
      const each = addresses.map((address) => podReads(events, address));
      return each.every((list) => list.filter((e) => e.verb === 'watch').length >= 3) ? each : undefined;
    },
    180_000,
  );
  for (const list of reads) {
    expect(list.map((e) => e.verb)).toEqual(['list', ...list.slice(1).map(() => 'watch')]);
    expect(list.every((e) => query(e).get('labelSelector') === 'drainguard.io/protected=true')).toBe(true);
    const watches = list.filter((e) => e.verb === 'watch');
    expect(watches.every((e) => query(e).get('allowWatchBookmarks') === 'true')).toBe(true);
    const versions = watches.map((e) => Number(query(e).get('resourceVersion')));
    // Only bookmarks can move it: no protected pod changed.
    expect(versions[versions.length - 1]).toBeGreaterThan(versions[0]!);
  }
}, 300_000);

test('kube-apiserver stopped mid-rollout and etcd compacted meanwhile: the watches expire (410), the reporters list again, and each drain is reported once', async () => {
  const ns = await namespace('faults-restart', OPT_IN);
  let before = 0;
  let compacted = 0;
  // Each drain lasts at least 3 s, so that a reporter is deleted while one runs (the next test).
  envoy = await contourEnvoy(handle, ns, { gracePeriodSeconds: 60, minDrain: '3s' });
  const old = await readyPods(handle, envoy, 2);
  const addresses = await reporterAddresses();
  // A client on each old pod's listener holds its drain open until kube-apiserver is back: a pod that
  // ended *and* was deleted while no reporter could watch is one no reporter can tell the outcome of
  // (docs/report.md, "What can still be missed"), which is not what this test is about.
  const clients = await Promise.all(old.map((pod) => holdConnection(pod)));
  try {
    await kubectlOk(handle, ['-n', ns, 'rollout', 'restart', 'daemonset/envoy']);
    await eventually('an old pod being deleted', async () => {
      const pods = (await handle.api.list<PodObject>(`/api/v1/namespaces/${ns}/pods?labelSelector=app%3Denvoy`)).items;
      return pods.some((pod) => pod.metadata.deletionTimestamp !== undefined) ? true : undefined;
    });
    before = audited().length;
    await cluster!.stopApiServer();
    compacted = await cluster!.compactEtcd();
    await cluster!.startApiServer();
  } finally {
    clients.forEach((client) => client.destroy());
  }
  await kubectlOk(handle, ['-n', ns, 'rollout', 'status', 'daemonset/envoy', '--timeout=5m']);

  const events = await podEventsOnce(ns, 2);
  expect(events.map((event) => event.involvedObject.uid).sort()).toEqual(old.map((pod) => pod.metadata.uid).sort());
  const texts = await eventually('both drains counted', async () => {
    const scraped = await Promise.all(addresses.map((address) => scrape(address)));
    return drainsIn(scraped, ns) === 2 && total(scraped, 'drainguard_reporter_pending_reports') === 0 ? scraped : undefined;
  });
  expect(total(texts, 'drainguard_drains_total', { namespace: ns, reason: 'drained' })).toBe(2);
  expect(total(texts, 'drainguard_reporter_terminations_unseen_total')).toBe(0);
  // Each reporter resumed watching from the resourceVersion it had, older than the compaction: kube-apiserver
  // answered with 410 Expired, and the reporter listed again.
  const after = audited().slice(before);
  for (const address of addresses) {
    const reads = podReads(after, address);
    const resumed = reads.findIndex((e) => e.verb === 'watch' && Number(query(e).get('resourceVersion')) < compacted);
    expect(resumed).toBeGreaterThanOrEqual(0);
    expect(reads.slice(resumed + 1).some((e) => e.verb === 'list')).toBe(true);
  }
  const expired = await expiredAnswer(`/api/v1/pods?labelSelector=drainguard.io%2Fprotected%3Dtrue`, compacted - 1);
  expect(expired).toMatchObject({ type: 'ERROR', object: { code: 410, reason: 'Expired' } });
  // Created once each: the other reporter's create of the same name got 409 AlreadyExists.
  const creates = podEventCreates(audited(), ns).filter((e) => events.some((event) => event.metadata.name === e.objectRef?.name));
  expect(creates.filter((e) => e.responseStatus?.code === 201)).toHaveLength(2);
  expect(creates.every((e) => e.responseStatus?.code === 201 || e.responseStatus?.code === 409)).toBe(true);
}, 600_000);

test('a reporter pod deleted mid-rollout: its successor lists again; each drain is one Event, created once, counted by the process whose create succeeded', async () => {
  const ns = envoy.namespace;
  const old = await readyPods(handle, envoy, 2);
  const before = (await drainEvents(handle, ns, 'pod')).length;
  const [doomed] = await reporterPods(handle, RELEASE);
  await kubectlOk(handle, ['-n', ns, 'rollout', 'restart', 'daemonset/envoy']);
  await eventually('an old pod being deleted', async () => {
    const pods = (await handle.api.list<PodObject>(`/api/v1/namespaces/${ns}/pods?labelSelector=app%3Denvoy`)).items;
    return pods.some((pod) => pod.metadata.deletionTimestamp !== undefined) ? true : undefined;
  });
  await kubectlOk(handle, ['-n', RELEASE.namespace, 'delete', 'pod', doomed!.metadata.name, '--wait=false']);
  await kubectlOk(handle, ['-n', ns, 'rollout', 'status', 'daemonset/envoy', '--timeout=5m']);
  const replicas = await eventually('two reporters again, the doomed one gone', async () => {
    const pods = await reporterPods(handle, RELEASE);
    return pods.every((pod) => pod.metadata.name !== doomed!.metadata.name) ? pods : undefined;
  });

  const events = (await podEventsOnce(ns, before + 2)).filter((event) => old.some((pod) => pod.metadata.uid === event.involvedObject.uid));
  expect(events).toHaveLength(2);
  expect(events.map((event) => event.count)).toEqual([1, 1]);
  const podEventNames = new Set((await drainEvents(handle, ns, 'pod')).map((event) => event.metadata.name));
  const created = podEventCreates(audited(), ns).filter((e) => podEventNames.has(e.objectRef!.name!) && e.responseStatus?.code === 201);
  // Every pod Event of the namespace was created (201) once, whoever tried it.
  expect(created.map((e) => e.objectRef!.name).sort()).toEqual([...podEventNames].sort());
  // Whoever got 201 counted it: each running reporter counts exactly the creates answered 201 to it.
  for (const pod of replicas) {
    const scraped = await eventually('no report pending', async () => {
      const text = await scrape(pod.status.podIP!);
      return total([text], 'drainguard_reporter_pending_reports') === 0 ? text : undefined;
    });
    expect(drainsIn([scraped], ns)).toBe(created.filter((e) => e.sourceIPs[0] === pod.status.podIP).length);
  }
}, 600_000);

describe('faults the API server does not make by itself, from a proxy in front of it', () => {
  let token: string;
  /** This test's processes: each test's own report alone. */
  const reporting: HostReporter[] = [];
  afterEach(async () => {
    await Promise.all(reporting.splice(0).map((reporter) => reporter.stop()));
  });
  beforeAll(async () => {
    // Only the processes below report from here on: the chart's reporters stop.
    await kubectlOk(handle, ['-n', RELEASE.namespace, 'scale', 'deployment/drainguard-reporter', '--replicas=0']);
    await eventually('the chart\'s reporters gone', async () => ((await handle.api.list(`/api/v1/namespaces/${RELEASE.namespace}/pods?labelSelector=app.kubernetes.io%2Fcomponent%3Dreporter`)).items.length === 0 ? true : undefined));
    token = await serviceAccountToken(handle.api, RELEASE.namespace, REPORTER_ACCOUNT);
  }, 300_000);

  interface HostReporter {
    instance: string;
    proxy: FaultProxy;
    port: number;
    stop(): Promise<void>;
  }

  /** `drainguard report` on the host, as the reporter's ServiceAccount, through a proxy of its own. */
  async function hostReporter(instance: string): Promise<HostReporter> {
    const proxy = await FaultProxy.start({ upstream: cluster!.info.server, upstreamCa: clusterCa(), dir: join(dir, `proxy-${instance}`) });
    proxies.push(proxy);
    const kubeconfig = proxy.writeKubeconfig(join(dir, `${instance}.kubeconfig`), token);
    const configuration = (await handle.api.list<{ metadata: { name: string; labels?: Record<string, string> } }>('/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations')).items.find(
      (c) => c.metadata.labels?.['app.kubernetes.io/instance'] === RELEASE.release,
    )!;
    const child = spawn(
      NODE,
      [CLI_MAIN, 'report', '--kubeconfig', kubeconfig, '--host', '127.0.0.1', '--port', '0', '--instance', instance, '--webhook-config-name', configuration.metadata.name, '--request-timeout', '2s'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    processes.push(child);
    const port = await new Promise<number>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const entry = JSON.parse(line) as { msg?: string; port?: number };
        if (entry.msg === 'reporter started') resolve(entry.port!);
      });
      child.once('exit', (code) => reject(new Error(`drainguard report exited with ${code}`)));
    });
    // Listed and watching: ready.
    await eventually(`${instance} ready`, async () => ((await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200 ? true : undefined));
    return { instance, proxy, port, stop: () => stopProcess(child) };
  }

  /** Ends one Envoy pod of the DaemonSet (its drain runs), once a fault is armed; resolves with its pod Event. */
  async function drainOne(ns: string, faults: [HostReporter, ArmedFault][]): Promise<StoredEvent> {
    const [pod] = await readyPods(handle, envoy, 2);
    const before = (await drainEvents(handle, ns, 'pod')).length;
    const injected = faults.map(([reporter, fault]) => reporter.proxy.arm(fault));
    await handle.api.delete(`/api/v1/namespaces/${ns}/pods/${pod!.metadata.name}`);
    await Promise.all(injected);
    const events = await podEventsOnce(ns, before + 1);
    return events.find((event) => event.involvedObject.uid === pod!.metadata.uid)!;
  }

  const createEvents = (ns: string): ArmedFault['path'] => new RegExp(`^/api/v1/namespaces/${ns}/events$`);
  const counted = async (reporters: HostReporter[], ns: string) =>
    eventually('no report pending', async () => {
      const texts = await Promise.all(reporters.map((reporter) => scrape('127.0.0.1', reporter.port)));
      return total(texts, 'drainguard_reporter_pending_reports') === 0 ? reporters.map((_, i) => drainsIn([texts[i]!], ns)) : undefined;
    });

  test("a create whose answer is lost after kube-apiserver applied it: the retry's 409 is read back, names this process, and is counted once", async () => {
    const ns = envoy.namespace;
    const alone = await hostReporter('host-a');
    reporting.push(alone);
    const event = await drainOne(ns, [[alone, { kind: 'lose-answer', method: 'POST', path: createEvents(ns) }]]);
    expect(await counted([alone], ns)).toEqual([1]);
    expect(event.metadata.annotations![REPORTED_BY_ANNOTATION]).toMatch(/^host-a\//);
    // The create (answer lost), the retry (409), the read-back of the Event.
    const seen = alone.proxy.seen.filter((request) => request.path.includes(`/namespaces/${ns}/events`));
    expect(seen.slice(0, 3)).toEqual([
      { method: 'POST', path: `/api/v1/namespaces/${ns}/events`, fault: 'lose-answer' },
      { method: 'POST', path: `/api/v1/namespaces/${ns}/events` },
      { method: 'GET', path: `/api/v1/namespaces/${ns}/events/${event.metadata.name}` },
    ]);
    const answers = podEventCreates(audited(), ns).filter((e) => e.objectRef?.name === event.metadata.name).map((e) => e.responseStatus?.code);
    expect(answers).toEqual([201, 409]);
  }, 300_000);

  test.each([
    ['a reset connection (nothing applied)', { kind: 'reset' } as const],
    ['a slow answer past the request timeout (applied, the client gave up)', { kind: 'slow', delayMs: 5000 } as const],
  ])('%s, with a second process reporting too: the process reported-by names counts the drain, the other does not', async (_what, fault) => {
    const ns = envoy.namespace;
    const reporters = [await hostReporter(`host-${fault.kind}-1`), await hostReporter(`host-${fault.kind}-2`)];
    reporting.push(...reporters);
    const event = await drainOne(ns, [[reporters[0]!, { ...fault, method: 'POST', path: createEvents(ns) }]]);
    const counts = await counted(reporters, ns);
    const creator = reporters.findIndex((reporter) => event.metadata.annotations![REPORTED_BY_ANNOTATION]!.startsWith(`${reporter.instance}/`));
    expect(creator).toBeGreaterThanOrEqual(0);
    expect(counts).toEqual(reporters.map((_, index) => (index === creator ? 1 : 0)));
    expect(podEventCreates(audited(), ns).filter((e) => e.objectRef?.name === event.metadata.name && e.responseStatus?.code === 201)).toHaveLength(1);
  }, 300_000);
});

/** The cluster's CA, as its admin kubeconfig trusts it. */
function clusterCa(): string {
  const config = parse(readFileSync(cluster!.info.adminKubeconfig, 'utf8')) as { clusters: { cluster: { 'certificate-authority-data': string } }[] };
  return Buffer.from(config.clusters[0]!.cluster['certificate-authority-data'], 'base64').toString('utf8');
}

/** A client connection to the Envoy pod's HTTPS listener, open until destroyed: its drain waits for it. */
async function holdConnection(pod: PodObject): Promise<Socket> {
  const client = connect({ host: pod.status.podIP!, port: 8443 });
  client.on('error', () => undefined);
  await once(client, 'connect');
  return client;
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

/** The first event of a watch from `resourceVersion`, as the cluster's admin. */
async function expiredAnswer(path: string, resourceVersion: number): Promise<unknown> {
  const controller = new AbortController();
  let first: unknown;
  await handle.api.watch(path, String(resourceVersion), (event) => {
    first ??= event;
    controller.abort();
  }, controller.signal);
  return first;
}
