/**
 * The reporter's engine: pod views in (from the watch), Events and metrics out, each termination
 * exactly once across replicas and restarts.
 *
 * The mechanism: every replica reports every termination it sees, and the API server decides which
 * one counts. The pod's Event is named after the termination (`<pod>.<key>`, ./drain-event.ts), so
 * only one create of it can succeed: the replica that gets 201 counts the metrics; a 409
 * AlreadyExists means another replica, or this one before a restart, already did. No Lease is needed,
 * both replicas watch and report at all times, so nothing waits for a failover, and an API server that
 * applies a create is the single point of agreement there is anyway.
 *
 * Two things keep it exactly once beyond that:
 *   - A create whose answer never came (no answer, a timeout, a 5xx) may have been applied. The retry
 *     that then gets 409 reads the Event back: it counts only if its `reported-by` annotation names
 *     this very process.
 *   - Events do not live for ever (kube-apiserver's --event-ttl, 1 h by default), while a pod keeps a
 *     container's `lastState` as long as it runs. A termination older than `maxReportAgeMs` (default
 *     45 min, below the TTL) is never reported, so no replica can report again once the Event that
 *     guards it has expired. (Report age is measured from the kubelet's finishedAt; the margin to the
 *     TTL covers clock skew between nodes.)
 *
 * Work is bounded: the terminations waiting or in flight are keyed (one job per termination, however
 * often the pod is seen), at most `concurrency` requests run at once, and failures retry with backoff
 * until the termination is too old.
 */
import type { Logger } from 'pino';
import { ApiFailure } from '../kube-api/failure';
import { describeTermination } from './describe';
import { podEvent, workloadEvent, type EventBody, type InvolvedObject, type Reporter } from './drain-event';
import type { ReporterMetrics } from './metrics';
import type { ControllerRef, PodView, WatchedPod } from './pod-view';
import { terminationsOf, type Termination } from './termination';

/** The Kubernetes calls the reporter makes (./kube.ts implements them over src/kube-api's client). */
export interface ReporterApi {
  /** `exists`: 409 AlreadyExists. Throws ApiFailure for anything else but success. */
  createEvent(event: EventBody): Promise<'created' | 'exists'>;
  /** The Event's `reported-by` annotation; undefined when it has none or does not exist. */
  eventReportedBy(namespace: string, name: string): Promise<string | undefined>;
  /** The controller of a ReplicaSet (its Deployment); undefined when it has none or is gone. */
  replicaSetController(namespace: string, name: string): Promise<ControllerRef | undefined>;
}

export type ScopeVerdict = { admitted: true } | { admitted: false; why: string };

/** Whether drainguard's webhook could have admitted a pod of a namespace (./admission-scope.ts watches it). */
export interface NamespaceScope {
  /** Rejects with an ApiFailure while the answer cannot be known (not listed yet, the API failing): the report is retried. */
  admits(namespace: string): Promise<ScopeVerdict>;
}

export interface ReporterOptions {
  api: ReporterApi;
  /** Only terminations of pods in namespaces it admits are reported; the others are counted as ignored. */
  scope: NamespaceScope;
  metrics: ReporterMetrics;
  logger: Logger;
  reporter: Reporter;
  /** Terminations that ended longer ago are not reported (keep it below the API server's --event-ttl). */
  maxReportAgeMs: number;
  /** Requests in flight at once. */
  concurrency?: number;
  /** First retry delay; doubled on each failure up to `maxRetryDelayMs`. */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  now?: () => Date;
}

interface Job {
  termination: Termination;
  /** The pod's Event first (it decides who counts), then the workload's. */
  stage: 'pod' | 'workload';
  failures: number;
  /** An earlier create of the pod's Event may have been applied without this process learning it. */
  maybeCreated: boolean;
  /** When the reporter first saw it: the age of a termination the kubelet gave no finishedAt. */
  seenAtMs: number;
  timer?: NodeJS.Timeout;
}

/** Answers a retry would get again: 400 Bad Request, 404 (the namespace is gone), 422 Invalid. */
const FINAL_STATUSES = new Set([400, 404, 422]);

/** ReplicaSets whose controller is remembered (a Deployment keeps ten old ones by default). */
const REPLICA_SET_CACHE = 4096;

export class DrainReporter {
  private readonly api: ReporterApi;
  private readonly scope: NamespaceScope;
  private readonly metrics: ReporterMetrics;
  private readonly logger: Logger;
  private readonly reporter: Reporter;
  private readonly maxReportAgeMs: number;
  private readonly concurrency: number;
  private readonly retryDelayMs: number;
  private readonly maxRetryDelayMs: number;
  private readonly now: () => Date;
  /** The termination keys each watched pod shows, so a pod seen again is not reported again. */
  private readonly seen = new Map<string, Set<string>>();
  /** Terminations waiting, retrying or in flight. */
  private readonly jobs = new Map<string, Job>();
  private readonly ready: Job[] = [];
  private running = 0;
  private stopped = false;
  private readonly replicaSets = new Map<string, Promise<ControllerRef | undefined>>();
  private readonly idleWaiters: (() => void)[] = [];

  constructor(options: ReporterOptions) {
    this.api = options.api;
    this.scope = options.scope;
    this.metrics = options.metrics;
    this.logger = options.logger;
    this.reporter = options.reporter;
    this.maxReportAgeMs = options.maxReportAgeMs;
    this.concurrency = options.concurrency ?? 8;
    this.retryDelayMs = options.retryDelayMs ?? 1000;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 60_000;
    this.now = options.now ?? (() => new Date());
  }

  /** Terminations not yet reported (waiting, retrying or in flight). */
  get pending(): number {
    return this.jobs.size;
  }

  /** A pod as the watch shows it now (added, changed, or listed again). */
  observe(pod: PodView): void {
    const terminations = terminationsOf(pod);
    const before = this.seen.get(pod.metadata.uid);
    const keys = new Set<string>();
    for (const termination of terminations) {
      keys.add(termination.key);
      if (before?.has(termination.key) || this.jobs.has(termination.key)) continue;
      const seenAtMs = this.now().getTime();
      if (this.tooOld(termination, seenAtMs)) {
        this.logger.debug({ pod: describePod(termination), container: termination.container }, 'termination older than --max-report-age: not reported');
        continue;
      }
      this.enqueue({ termination, stage: 'pod', failures: 0, maybeCreated: false, seenAtMs });
    }
    // Only the keys the pod shows now: a container's older terminations never come back.
    if (keys.size > 0) this.seen.set(pod.metadata.uid, keys);
    else this.seen.delete(pod.metadata.uid);
  }

  /** A pod whose deletion the watch delivered: its last state is observed, then it is forgotten (reports under way go on). */
  deleted(pod: PodView): void {
    this.observe(pod);
    this.seen.delete(pod.metadata.uid);
  }

  /**
   * A pod a relist no longer lists: it ended and was deleted while the watch was re-established. Its
   * last view was observed when it arrived; an Envoy this replica last saw still running ended unseen
   * here, which is counted and said.
   */
  vanished(pod: WatchedPod): void {
    this.seen.delete(pod.uid);
    for (const container of pod.running) {
      this.metrics.recordUnseen(pod.namespace, pod.workload);
      this.logger.warn(
        { pod: `${pod.namespace}/${pod.name}`, container, workload: pod.workload },
        'pod deleted while the watch was re-established: how its Envoy ended was not seen by this replica',
      );
    }
  }

  /** Resolves when no termination is waiting or in flight (tests). */
  idle(): Promise<void> {
    if (this.jobs.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  stop(): void {
    this.stopped = true;
    for (const job of this.jobs.values()) clearTimeout(job.timer);
  }

  private tooOld(termination: Termination, seenAtMs: number): boolean {
    const endedAt = termination.ended.finishedAtMs ?? seenAtMs;
    return this.now().getTime() - endedAt > this.maxReportAgeMs;
  }

  private enqueue(job: Job): void {
    this.jobs.set(job.termination.key, job);
    this.ready.push(job);
    this.pump();
  }

  private pump(): void {
    while (!this.stopped && this.running < this.concurrency && this.ready.length > 0) {
      const job = this.ready.shift()!;
      this.running++;
      void this.run(job).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  private finish(job: Job): void {
    this.jobs.delete(job.termination.key);
    if (this.jobs.size === 0) this.idleWaiters.splice(0).forEach((resolve) => resolve());
  }

  private async run(job: Job): Promise<void> {
    const { termination } = job;
    const text = describeTermination(termination);
    const now = this.now();
    try {
      if (job.stage === 'pod') {
        if (this.tooOld(termination, job.seenAtMs)) return this.abandon(job, 'its pod Event could not be created before it was older than --max-report-age');
        const verdict = await this.scope.admits(termination.namespace);
        if (!verdict.admitted) return this.ignore(job, verdict.why);
        const event = podEvent(termination, text, this.reporter, now);
        const answer = await this.createPodEvent(job, event);
        if (answer === 'counted') {
          this.metrics.count(termination);
          this.logger.info(
            { event: event.metadata.name, reason: text.reason, pod: describePod(termination), container: termination.container, workload: termination.workload.label },
            text.message,
          );
        } else {
          this.logger.debug({ event: event.metadata.name }, 'already reported by another replica or an earlier run');
        }
        job.stage = 'workload';
        job.failures = 0;
      }
      const workload = await this.workloadObject(termination);
      if (workload) await this.api.createEvent(workloadEvent(termination, text, workload, this.reporter, now));
      this.finish(job);
    } catch (error) {
      if (error instanceof ApiFailure) return this.retry(job, error);
      // A bug of the reporter's own: never a crash that would stop every other report.
      this.logger.error({ err: error, pod: describePod(termination) }, 'reporting a termination failed (a drainguard bug, please report it)');
      this.finish(job);
    }
  }

  /** Creates the pod's Event; `counted` when this process is the one that created it. */
  private async createPodEvent(job: Job, event: EventBody): Promise<'counted' | 'reported-elsewhere'> {
    try {
      const answer = await this.api.createEvent(event);
      if (answer === 'created') return 'counted';
      if (!job.maybeCreated) return 'reported-elsewhere';
      // An earlier attempt's answer was lost: the Event may be this process's own.
      const by = await this.api.eventReportedBy(event.metadata.namespace, event.metadata.name);
      return by === this.reporter.id ? 'counted' : 'reported-elsewhere';
    } catch (error) {
      if (error instanceof ApiFailure && error.maybeApplied) job.maybeCreated = true;
      throw error;
    }
  }

  private retry(job: Job, failure: ApiFailure): void {
    const { termination } = job;
    if (this.stopped) return;
    if ((failure.status !== undefined && FINAL_STATUSES.has(failure.status)) || failure.namespaceTerminating) {
      // Asking again gets the same answer (the namespace is gone or being deleted, the Event is refused
      // as invalid). Kubernetes' own controllers drop a create refused for a terminating namespace too.
      if (job.stage === 'pod') return this.abandon(job, `the API server refused its Event: ${failure.message}`);
      this.logger.warn({ pod: describePod(termination), error: failure.message }, 'the workload Event was refused');
      return this.finish(job);
    }
    if (job.stage === 'workload' && this.tooOld(termination, job.seenAtMs)) {
      this.logger.warn({ pod: describePod(termination), error: failure.message }, 'the workload Event could not be created before the termination was older than --max-report-age');
      return this.finish(job);
    }
    job.failures++;
    const delay = Math.min(this.retryDelayMs * 2 ** (job.failures - 1), this.maxRetryDelayMs);
    this.logger.warn(
      { pod: describePod(termination), container: termination.container, stage: job.stage, status: failure.status, error: failure.message, retryInMs: delay },
      'reporting a termination failed; will retry',
    );
    job.timer = setTimeout(() => {
      job.timer = undefined;
      this.ready.push(job);
      this.pump();
    }, delay);
    job.timer.unref();
  }

  /** A termination of a pod drainguard never protected, whatever its labels and hooks say: counted, logged, not reported. */
  private ignore(job: Job, why: string): void {
    this.metrics.recordIgnored(job.termination.namespace);
    this.logger.warn({ pod: describePod(job.termination), container: job.termination.container }, `termination not reported: ${why}`);
    this.finish(job);
  }

  private abandon(job: Job, why: string): void {
    this.metrics.recordAbandoned();
    this.logger.error({ pod: describePod(job.termination), container: job.termination.container }, `termination not reported: ${why}`);
    this.finish(job);
  }

  /**
   * The object the workload Event is about, with its uid (`kubectl describe` matches events by it):
   * the pod's controller, except that a Deployment's pods name their ReplicaSet, whose own controller
   * reference gives the Deployment's uid (one `get replicasets`, remembered).
   */
  private async workloadObject(termination: Termination): Promise<Omit<InvolvedObject, 'namespace'> | undefined> {
    const controller = termination.controller;
    if (!controller) return undefined;
    const direct = { apiVersion: controller.apiVersion, kind: controller.kind, name: controller.name, uid: controller.uid };
    if (controller.kind !== 'ReplicaSet' || termination.workload.kind !== 'Deployment') return direct;
    const owner = await this.replicaSetController(termination.namespace, controller.name);
    return owner?.kind === 'Deployment' ? { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid } : direct;
  }

  private replicaSetController(namespace: string, name: string): Promise<ControllerRef | undefined> {
    const key = `${namespace}/${name}`;
    let known = this.replicaSets.get(key);
    if (!known) {
      if (this.replicaSets.size >= REPLICA_SET_CACHE) this.replicaSets.delete(this.replicaSets.keys().next().value as string);
      known = this.api.replicaSetController(namespace, name);
      this.replicaSets.set(key, known);
      // A failed read is not remembered: the next report asks again.
      known.catch(() => this.replicaSets.delete(key));
    }
    return known;
  }
}

function describePod(termination: Termination): string {
  return `${termination.namespace}/${termination.podName}`;
}
