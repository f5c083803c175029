/**
 * Decision workers (worker_threads), at most `size` of them. Each decides one review at a time; the
 * admission limiter in front guarantees no more reviews are in flight than there are workers. A worker
 * whose decision uses more CPU than the deadline allows is terminated, one that runs out of its heap
 * dies on its own: either way the review is answered as drainguard's own failure (admitted unchanged,
 * with a warning), never left hanging, and the next review starts a new worker.
 *
 * Workers are started when a review needs one and leave after `idleMs` without a decision. Only
 * reviews over 64 KiB come here (a Pod's review is a few KiB, decided on the main thread), so most
 * servers never start one: an idle worker holds about 12 MiB resident (its isolate, Node's bootstrap,
 * the core's code; `npm run bench:memory` measures it), which two of them kept for good made a fifth of
 * an idle server's memory. Starting one costs about 30 ms of CPU, once per burst of large reviews.
 *
 * The deadline counts the CPU time the worker's thread used, not the time that passed: the workers run
 * at a lower CPU priority than the main thread (./decision-worker), so on a busy node a decision can
 * wait for a CPU far longer than it computes (a 3 MiB review took 1 s idle and over 10 s beside two
 * busy loops on two cores), and a wall-clock deadline failed good reviews there. A decision still
 * unanswered when the API server can no longer be waiting (30 s) is abandoned all the same.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Config } from '../config/types';
import type { AdmissionOutcome } from '../admission/decide';
import { INTERNAL_ERROR_WARNING } from '../admission/decide';
import type { DecideMessage, DecisionWorkerData, ParsedMessage, WorkerMessage } from './decision-protocol';

export interface DecisionPoolOptions {
  size: number;
  config: Config;
  /** V8 old-generation limit of each worker, MiB. */
  heapLimitMb: number;
  /** A decision that has used this much CPU time (ms) without finishing is abandoned. */
  timeoutMs: number;
  /** A decision not finished this long (ms of wall-clock time) after it began is abandoned. */
  wallTimeoutMs: number;
  coreModule?: string;
  /** A worker without a decision this long (ms) exits; the next large review starts one again. */
  idleMs?: number;
}

/** How long a decision worker stays after its last decision. */
export const DECISION_WORKER_IDLE_MS = 60_000;

export interface Decided {
  httpStatus: number;
  text: string;
  outcome: AdmissionOutcome | undefined;
  /** Set when the worker failed (deadline, memory, crash): what happened, for the log. */
  failure?: string;
}

/** Young generation of each worker, MiB: V8's semi-spaces, small on purpose (short-lived garbage). */
export const WORKER_YOUNG_GENERATION_MB = 8;

/**
 * dist/server/decision-worker.js beside this module. When this module itself runs as TypeScript
 * source (ts-jest), the worker is the compiled one of the same tree: jest's globalSetup builds dist/
 * before any test starts.
 */
export function decisionWorkerScript(): string {
  const beside = join(__dirname, 'decision-worker.js');
  if (existsSync(beside)) return beside;
  const built = resolve(__dirname, '..', '..', 'dist', 'server', 'decision-worker.js');
  if (__filename.endsWith('.ts') && existsSync(built)) return built;
  throw new Error(`decision worker not found at ${beside}; run \`npm run build\``);
}

/** How often a running decision's CPU time is read (worker.cpuUsage() is cheap: a getrusage of its thread). */
export const CPU_CHECK_INTERVAL_MS = 100;

interface Pending {
  id: number;
  review: ParsedMessage['review'];
  timer: NodeJS.Timeout;
  resolve: (decided: Decided) => void;
}

class Slot {
  /** Started when a decision needs it; gone again after `idleMs` without one, or when it failed. */
  worker: Worker | undefined;
  pending: Pending | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  constructor(private readonly pool: DecisionPool) {}

  /** This slot's worker, started now when it has none. */
  start(): Worker {
    clearTimeout(this.idleTimer);
    if (this.worker !== undefined) return this.worker;
    const worker = this.pool.createWorker();
    worker.on('message', (message: WorkerMessage) => this.onMessage(worker, message));
    worker.on('error', (error) => this.fail(worker, describeWorkerError(error)));
    worker.on('exit', (code) => this.fail(worker, `decision worker exited with code ${code}`));
    this.worker = worker;
    return worker;
  }

  /** The slot's decision is done: its worker leaves after `idleMs` unless another decision comes first. */
  rest(idleMs: number): void {
    const worker = this.worker;
    if (worker === undefined) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.worker === worker && this.pending === undefined) this.stop();
    }, idleMs);
    this.idleTimer.unref();
  }

  /** Ends the worker, if any, with nothing pending. */
  stop(): Promise<unknown> {
    clearTimeout(this.idleTimer);
    const worker = this.worker;
    this.worker = undefined;
    if (worker === undefined) return Promise.resolve();
    worker.removeAllListeners('exit');
    return worker.terminate();
  }

  private onMessage(worker: Worker, message: WorkerMessage): void {
    const pending = this.pending;
    if (worker !== this.worker || pending === undefined || pending.id !== message.id) return;
    if (message.kind === 'parsed') {
      pending.review = message.review;
      return;
    }
    this.pending = undefined;
    clearInterval(pending.timer);
    pending.resolve({ httpStatus: message.httpStatus, text: message.text, outcome: message.outcome });
  }

  /** The worker is gone or must go: answer its review as drainguard's failure; the next decision starts a new one. */
  fail(worker: Worker, reason: string): void {
    if (worker !== this.worker) return;
    const pending = this.pending;
    this.pending = undefined;
    void this.stop();
    if (pending) {
      clearInterval(pending.timer);
      pending.resolve(failedDecision(pending.review, reason));
    }
  }
}

export class DecisionPool {
  private readonly slots: Slot[];
  private readonly idle: Slot[];
  private readonly waiting: ((slot: Slot) => void)[] = [];
  private nextId = 0;
  private closed = false;
  private readonly script = decisionWorkerScript();

  constructor(private readonly options: DecisionPoolOptions) {
    this.slots = Array.from({ length: options.size }, () => new Slot(this));
    this.idle = [...this.slots];
  }

  /** Workers running now (started and not yet left or failed). */
  get running(): number {
    return this.slots.filter((slot) => slot.worker !== undefined).length;
  }

  /** @internal used by the slots */
  createWorker(): Worker {
    const workerData: DecisionWorkerData = {
      config: this.options.config,
      ...(this.options.coreModule ? { coreModule: this.options.coreModule } : {}),
    };
    const worker = new Worker(this.script, {
      workerData,
      resourceLimits: { maxOldGenerationSizeMb: this.options.heapLimitMb, maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      // The worker writes nothing; its errors come back as 'error' events.
      stdout: false,
      stderr: false,
    });
    worker.unref();
    return worker;
  }

  /** Decides on `body`; its memory is transferred to the worker (the caller must not use it after). */
  async decide(body: Buffer): Promise<Decided> {
    // Closed once the server has stopped taking requests: no worker is started any more.
    if (this.closed) return failedDecision(undefined, 'the server is shutting down');
    const slot = this.idle.pop() ?? (await new Promise<Slot>((resolve) => this.waiting.push(resolve)));
    try {
      return await new Promise<Decided>((resolve) => {
        const id = (this.nextId += 1);
        const worker = slot.start();
        const { timeoutMs, wallTimeoutMs } = this.options;
        const startedAt = performance.now();
        // A worker still starting has no usage to read yet: its decision is counted from zero (its own
        // start, some tens of milliseconds, then counts towards the deadline).
        const cpuAtStart = worker.cpuUsage().catch(() => ({ user: 0, system: 0 }));
        const timer = setInterval(() => {
          if (performance.now() - startedAt >= wallTimeoutMs) {
            slot.fail(worker, `decision did not finish within ${wallTimeoutMs} ms; worker replaced`);
            return;
          }
          void Promise.all([cpuAtStart, worker.cpuUsage()]).then(
            ([before, now]) => {
              const usedMs = (now.user + now.system - before.user - before.system) / 1000;
              if (usedMs >= timeoutMs && slot.pending?.id === id) slot.fail(worker, `decision used ${timeoutMs} ms of CPU without finishing; worker replaced`);
            },
            // The worker is not running (starting, or gone: its exit answers the review).
            () => undefined,
          );
        }, Math.min(CPU_CHECK_INTERVAL_MS, timeoutMs));
        slot.pending = { id, review: undefined, timer, resolve };
        const message: DecideMessage = { id, body: ownArrayBuffer(body) };
        worker.postMessage(message, [message.body]);
      });
    } finally {
      const next = this.waiting.shift();
      if (next) next(slot);
      else {
        slot.rest(this.options.idleMs ?? DECISION_WORKER_IDLE_MS);
        this.idle.push(slot);
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((slot) => slot.stop()));
  }
}

/** A buffer's memory as an ArrayBuffer of exactly its bytes, copied only when it shares a larger one. */
function ownArrayBuffer(body: Buffer): ArrayBuffer {
  if (body.byteOffset === 0 && body.byteLength === body.buffer.byteLength && body.buffer instanceof ArrayBuffer) return body.buffer;
  const copy = new ArrayBuffer(body.byteLength);
  new Uint8Array(copy).set(body);
  return copy;
}

function describeWorkerError(error: Error & { code?: string }): string {
  return error.code === 'ERR_WORKER_OUT_OF_MEMORY'
    ? 'decision needed more memory than a decision worker may use; worker replaced'
    : `decision worker failed: ${error.message}`;
}

/**
 * A review whose decision failed in the worker. With its uid known, the same answer as for any other
 * drainguard bug: allowed, unchanged, with a warning. Without it (the body never parsed, which a
 * limit-sized body cannot cause), there is no review to answer: a 500 naming the failure.
 */
function failedDecision(review: ParsedMessage['review'], reason: string): Decided {
  if (review === undefined) return { httpStatus: 500, text: JSON.stringify({ error: `internal error: ${reason}` }), outcome: undefined, failure: reason };
  const body = {
    apiVersion: review.apiVersion,
    kind: 'AdmissionReview',
    response: { uid: review.uid, allowed: true, warnings: [INTERNAL_ERROR_WARNING] },
  };
  return {
    httpStatus: 200,
    text: JSON.stringify(body),
    outcome: { result: 'error', uid: review.uid, actions: [], patchOperations: 0, error: reason },
    failure: reason,
  };
}
