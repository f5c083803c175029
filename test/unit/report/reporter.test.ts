/**
 * The reporter's engine (src/report/reporter.ts) on its own, with the Kubernetes calls answered from
 * memory: what it decides from each answer. Everything that needs the API server's own behaviour
 * (409 on a taken name, watches, relists, lost answers on the wire) is tested against the real one in
 * test/kube/report-*.test.ts; here are the rules that need no server: which answers count, what is
 * ignored, what is given up, and hostile records through the whole engine.
 */
import pino from 'pino';
import type { FinishedRecord } from '../../../src/drain-record';
import { judgeNamespace, webhookNamespaceSelectors } from '../../../src/report/admission-scope';
import { REPORTED_BY_ANNOTATION, type EventBody } from '../../../src/report/drain-event';
import { ReporterMetrics } from '../../../src/report/metrics';
import { viewPod, type PodView } from '../../../src/report/pod-view';
import { ApiFailure } from '../../../src/kube-api/failure';
import { DrainReporter, type NamespaceScope, type ReporterApi, type ScopeVerdict } from '../../../src/report/reporter';
import { finishedRecord } from '../../support/generators/drain-records';
import { series, total } from '../../support/metrics-text';

const HOOK = { exec: { command: ['/config/drainguard/envoy-shutdown', 'drain', '--admin', 'unix:/admin/admin.sock', '--deadline', '290s'] } };

const record = (fields: Partial<FinishedRecord> = {}): string => finishedRecord('drained', fields);

let podNumber = 0;
/** A deleted protected pod of DaemonSet `envoy` whose Envoy ended with `message`, `finishedAgoMs` ago. */
function endedPod(message: string, options: { namespace?: string; finishedAgoMs?: number } = {}): PodView {
  podNumber++;
  return viewPod({
    metadata: {
      name: `envoy-${podNumber}`,
      namespace: options.namespace ?? 'projectcontour',
      uid: `uid-${podNumber}`,
      resourceVersion: String(podNumber),
      deletionTimestamp: new Date().toISOString(),
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'envoy', uid: 'ds-uid', controller: true }],
    },
    spec: { containers: [{ name: 'envoy', lifecycle: { preStop: HOOK } }] },
    status: {
      phase: 'Running',
      containerStatuses: [
        {
          name: 'envoy',
          restartCount: 0,
          state: {
            terminated: {
              exitCode: 0,
              reason: 'Completed',
              message,
              containerID: `containerd://${podNumber}`,
              startedAt: new Date(Date.now() - 3600_000).toISOString(),
              finishedAt: new Date(Date.now() - (options.finishedAgoMs ?? 1000)).toISOString(),
            },
          },
        },
      ],
    },
  })!;
}

/**
 * Events kept in memory as the API server keeps them by name. `lose` applies the next pod Event
 * create and throws as a lost answer does; `refuse` answers every create with that status.
 */
class MemoryApi implements ReporterApi {
  readonly events = new Map<string, EventBody>();
  readonly calls: string[] = [];
  lose = 0;
  refuse: number | undefined;
  /** The Status causes' types that go with `refuse`. */
  refuseCauses: string[] = [];

  async createEvent(event: EventBody): Promise<'created' | 'exists'> {
    const key = `${event.metadata.namespace}/${event.metadata.name}`;
    this.calls.push(`create ${event.involvedObject.kind}`);
    if (this.refuse !== undefined) throw new ApiFailure(`create event ${key}: HTTP ${this.refuse}`, this.refuse, { causeTypes: this.refuseCauses });
    if (this.events.has(key)) return 'exists';
    this.events.set(key, event);
    if (this.lose > 0 && event.involvedObject.kind === 'Pod') {
      this.lose--;
      throw new ApiFailure(`create event ${key}: socket hang up`, undefined);
    }
    return 'created';
  }

  async eventReportedBy(namespace: string, name: string): Promise<string | undefined> {
    this.calls.push('get event');
    return this.events.get(`${namespace}/${name}`)?.metadata.annotations?.[REPORTED_BY_ANNOTATION];
  }

  async replicaSetController() {
    return undefined;
  }

  podEvents(): EventBody[] {
    return [...this.events.values()].filter((event) => event.involvedObject.kind === 'Pod');
  }
}

const everywhere: NamespaceScope = { admits: async () => ({ admitted: true }) };

function reporter(api: ReporterApi, options: { id?: string; scope?: NamespaceScope; maxReportAgeMs?: number } = {}) {
  const metrics = new ReporterMetrics();
  const engine = new DrainReporter({
    api,
    scope: options.scope ?? everywhere,
    metrics,
    logger: pino({ level: 'silent' }),
    reporter: { instance: 'reporter-0', id: options.id ?? 'reporter-0/aaaa' },
    maxReportAgeMs: options.maxReportAgeMs ?? 45 * 60_000,
    retryDelayMs: 1,
    maxRetryDelayMs: 2,
  });
  return { engine, metrics, scrape: async () => [await metrics.registry.metrics()] };
}

test("a create whose answer was lost is retried; its 409 counts because the Event's reported-by names this very process", async () => {
  const api = new MemoryApi();
  api.lose = 1;
  const { engine, scrape } = reporter(api, { id: 'reporter-0/first' });
  engine.observe(endedPod(record()));
  await engine.idle();
  expect(total(await scrape(), 'drainguard_drains_total')).toBe(1);
  expect(api.calls).toEqual(['create Pod', 'create Pod', 'get event', 'create DaemonSet']);
});

test('a create that failed without an answer, then 409 on an Event another process created: read back, not counted', async () => {
  const api = new MemoryApi();
  const pod = endedPod(record());
  const other = reporter(api, { id: 'reporter-1/other' });
  other.engine.observe(pod);
  await other.engine.idle();
  api.calls.length = 0;
  // This process's first create is reset before the server applied it (no answer: it may have been).
  let reset = true;
  const resetting: ReporterApi = {
    createEvent: async (event) => {
      if (reset && event.involvedObject.kind === 'Pod') {
        reset = false;
        throw new ApiFailure('create event: ECONNRESET', undefined);
      }
      return api.createEvent(event);
    },
    eventReportedBy: (namespace, name) => api.eventReportedBy(namespace, name),
    replicaSetController: async () => undefined,
  };
  const mine = reporter(resetting, { id: 'reporter-0/mine' });
  mine.engine.observe(pod);
  await mine.engine.idle();
  expect(api.calls).toEqual(['create Pod', 'get event', 'create DaemonSet']);
  expect(total(await mine.scrape(), 'drainguard_drains_total')).toBe(0);
  expect(total(await other.scrape(), 'drainguard_drains_total')).toBe(1);
});

test('a 409 without a lost answer before it is never read back and never counted', async () => {
  const api = new MemoryApi();
  const first = reporter(api, { id: 'a/1' });
  const second = reporter(api, { id: 'b/2' });
  const pod = endedPod(record());
  first.engine.observe(pod);
  await first.engine.idle();
  second.engine.observe(pod);
  await second.engine.idle();
  expect(api.calls).toEqual(['create Pod', 'create DaemonSet', 'create Pod', 'create DaemonSet']);
  expect(total([...(await first.scrape()), ...(await second.scrape())], 'drainguard_drains_total')).toBe(1);
});

test('terminations older than --max-report-age are never reported (the Event that guarded them may have expired)', async () => {
  const api = new MemoryApi();
  const { engine, scrape } = reporter(api, { maxReportAgeMs: 45 * 60_000 });
  engine.observe(endedPod(record(), { finishedAgoMs: 2 * 24 * 3600_000 }));
  engine.observe(endedPod(record(), { finishedAgoMs: 60_000 }));
  await engine.idle();
  expect(api.podEvents()).toHaveLength(1);
  expect(total(await scrape(), 'drainguard_drains_total')).toBe(1);
});

test('a termination the API keeps refusing is retried, then given up once older than --max-report-age, and counted as abandoned', async () => {
  const api = new MemoryApi();
  api.refuse = 403;
  const { engine, scrape } = reporter(api, { maxReportAgeMs: 1500 });
  engine.observe(endedPod(record(), { finishedAgoMs: 1000 }));
  await engine.idle();
  expect(api.calls.length).toBeGreaterThan(1);
  expect(total(await scrape(), 'drainguard_reporter_reports_abandoned_total')).toBe(1);
  expect(total(await scrape(), 'drainguard_drains_total')).toBe(0);
});

test("a pod Event refused because its namespace is being deleted (403, cause NamespaceTerminating) is given up at once and counted as abandoned (any other 403 is retried, above)", async () => {
  const api = new MemoryApi();
  api.refuse = 403;
  api.refuseCauses = ['NamespaceTerminating'];
  const { engine, scrape } = reporter(api, { maxReportAgeMs: 3600_000 });
  engine.observe(endedPod(record()));
  await engine.idle();
  expect(api.calls).toEqual(['create Pod']);
  expect(total(await scrape(), 'drainguard_reporter_reports_abandoned_total')).toBe(1);
  expect(total(await scrape(), 'drainguard_drains_total')).toBe(0);
});

test('a termination in a namespace the webhook does not select is counted as ignored, never reported; the scope is asked again after a failure', async () => {
  const api = new MemoryApi();
  let failures = 1;
  const scope: NamespaceScope = {
    admits: async (namespace): Promise<ScopeVerdict> => {
      if (failures-- > 0) throw new ApiFailure('the namespaces are not listed yet', undefined);
      return namespace === 'projectcontour' ? { admitted: true } : { admitted: false, why: `namespace ${namespace} is not selected` };
    },
  };
  const { engine, scrape } = reporter(api, { scope });
  engine.observe(endedPod(record(), { namespace: 'forged' }));
  engine.observe(endedPod(record(), { namespace: 'projectcontour' }));
  await engine.idle();
  expect(api.podEvents().map((event) => event.metadata.namespace)).toEqual(['projectcontour']);
  const scrapes = await scrape();
  expect(total(scrapes, 'drainguard_drains_total')).toBe(1);
  expect(series(scrapes, 'drainguard_reporter_terminations_ignored_total')).toEqual(['namespace=forged']);
  expect(total(scrapes, 'drainguard_reporter_terminations_ignored_total')).toBe(1);
});

test('not JSON, 4 KiB of garbage, a forged reason, huge numbers, 20 forged listener names: unreadable, one series, the engine goes on', async () => {
  const api = new MemoryApi();
  const { engine, scrape } = reporter(api);
  const good = record();
  const hostile = [
    'not JSON',
    Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 131 + 7) % 256)).toString('latin1'),
    good.replace('"reason":"drained"', '"reason":"pwned"'),
    good.replace('"connectionsAtStart":312', '"connectionsAtStart":1e300'),
    good.replace('"durationMs":14000', '"durationMs":-1'),
    ...Array.from({ length: 20 }, (_, i) => good.replace('"openListeners":[]', `"openListeners":[{"name":"x\\"${i}","connections":1}]`)),
  ];
  for (const message of hostile) engine.observe(endedPod(message));
  engine.observe(endedPod(good));
  await engine.idle();
  const scrapes = await scrape();
  expect(total(scrapes, 'drainguard_drain_records_unreadable_total')).toBe(hostile.length);
  expect(total(scrapes, 'drainguard_drains_total')).toBe(1);
  for (const name of ['drainguard_drain_records_unreadable_total', 'drainguard_drains_total']) {
    expect(series(scrapes, name).every((labels) => /^namespace=projectcontour,(reason=drained,)?workload=daemonset\/envoy$/.test(labels))).toBe(true);
  }
  const warnings = api.podEvents().filter((event) => event.reason === 'DrainRecordUnreadable');
  expect(warnings).toHaveLength(hostile.length);
  // The Event quotes only the reader's own words for the problem, never the message.
  expect(warnings.every((event) => !event.message.includes('pwned') && !event.message.includes('x\\"'))).toBe(true);
});

describe("the webhook's namespaceSelector decides", () => {
  const selectors = webhookNamespaceSelectors({
    webhooks: [
      {
        name: 'pods.drainguard.io',
        namespaceSelector: {
          matchLabels: { 'drainguard.io/inject': 'enabled' },
          matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['drainguard-system'] }],
        },
      },
    ],
  });
  const labels = (name: string, extra: Record<string, string> = {}) => ({ 'kubernetes.io/metadata.name': name, ...extra });

  test('a namespace with the opt-in label is admitted; one without, or the excluded one, is not, and the verdict says why', () => {
    expect(judgeNamespace('dg', selectors, 'projectcontour', labels('projectcontour', { 'drainguard.io/inject': 'enabled' }))).toEqual({ admitted: true });
    expect(judgeNamespace('dg', selectors, 'forged', labels('forged'))).toEqual({
      admitted: false,
      why: 'namespace forged is not selected by the namespaceSelector of MutatingWebhookConfiguration dg (drainguard.io/inject=enabled, kubernetes.io/metadata.name NotIn (drainguard-system)), so drainguard\'s webhook never saw its pods',
    });
    expect(judgeNamespace('dg', selectors, 'drainguard-system', labels('drainguard-system', { 'drainguard.io/inject': 'enabled' })).admitted).toBe(false);
  });

  test('no configuration admits nothing; a gone namespace is not admitted; a webhook without a selector selects every namespace', () => {
    expect(judgeNamespace('dg', undefined, 'projectcontour', labels('projectcontour'))).toEqual({ admitted: false, why: 'the MutatingWebhookConfiguration dg does not exist, so drainguard admits no pod' });
    expect(judgeNamespace('dg', selectors, 'gone', undefined)).toEqual({ admitted: false, why: 'namespace gone does not exist' });
    expect(webhookNamespaceSelectors({ webhooks: [{ name: 'a' }] })).toEqual([{}]);
    expect(judgeNamespace('dg', webhookNamespaceSelectors({ webhooks: [{ name: 'a' }] }), 'any', labels('any'))).toEqual({ admitted: true });
    expect(judgeNamespace('dg', webhookNamespaceSelectors({ webhooks: [] }), 'any', labels('any')).admitted).toBe(false);
  });
});
