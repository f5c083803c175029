/**
 * Small reviews are decided on the main thread in batches: every review whose body completed in the same
 * turn of the event loop is decided back to back in one `setImmediate`, and the answers are written
 * after the whole batch (each waiting handler resumes in a microtask once the batch returns).
 *
 * Why: a decision run alone between the TLS, HTTP and socket work of its own request finds the core's
 * code and data evicted from the CPU caches by that work, and evicts the network path's in turn. Measured
 * on the benchmark machine, a decision in the server took about 95 µs of CPU, a second decision of the
 * same review right after it about 63 µs, and the same call in a tight loop 53 µs (docs/serve.md,
 * "Small reviews are decided in batches"). Deciding the reviews that are ready together, then writing
 * their answers together, pays the cold start once per batch instead of once per review. Under light
 * load a batch holds one review, and the only cost is one `setImmediate`.
 *
 * A batch is bounded in time, not only by the number of reviews the admission limiter lets in: once a
 * batch has run for `budgetMs`, the reviews left wait for the next turn, so health probes and other
 * connections are served in between.
 */
interface Waiting<Review, Decision> {
  review: Review;
  resolve: (decision: Decision) => void;
  reject: (error: unknown) => void;
}

/** `Review` is what a decision reads (the server: the body), `Decision` what it answers. */
export interface DecisionBatchOptions<Review, Decision> {
  /** Decides one review synchronously. A throw fails that review alone. */
  decideOne: (review: Review) => Decision;
  /** A batch stops taking reviews once it has run this long; the rest go in the next turn. */
  budgetMs: number;
  /** Milliseconds from a fixed point (performance.now by default; injectable for tests). */
  now?: () => number;
}

/** How long one batch may hold the event loop before the next review waits for the next turn. */
export const DEFAULT_BATCH_BUDGET_MS = 5;

export class DecisionBatch<Review, Decision> {
  /** In arrival order; a decided review's place is emptied, so a long batch does not hold them all. */
  private waiting: (Waiting<Review, Decision> | undefined)[] = [];
  /** The first review not yet decided: the list is consumed from the front without shifting. */
  private next = 0;
  private scheduled = false;
  private readonly decideOne: (review: Review) => Decision;
  private readonly budgetMs: number;
  private readonly now: () => number;

  constructor(options: DecisionBatchOptions<Review, Decision>) {
    this.decideOne = options.decideOne;
    this.budgetMs = options.budgetMs;
    this.now = options.now ?? (() => performance.now());
  }

  /** The decision of `review`, made in the next batch. */
  decide(review: Review): Promise<Decision> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ review, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.run);
  }

  /**
   * Decides waiting reviews in arrival order until none is left or the budget is spent. Resolving a
   * promise only queues its handler, so every answer of the batch is written after the last decision.
   */
  private readonly run = (): void => {
    this.scheduled = false;
    const started = this.now();
    while (this.next < this.waiting.length) {
      const item = this.waiting[this.next] as Waiting<Review, Decision>;
      this.waiting[this.next] = undefined;
      this.next += 1;
      try {
        item.resolve(this.decideOne(item.review));
      } catch (error) {
        item.reject(error);
      }
      if (this.now() - started >= this.budgetMs) break;
    }
    if (this.next < this.waiting.length) this.schedule();
    else {
      this.waiting = [];
      this.next = 0;
    }
  };
}
