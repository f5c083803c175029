/**
 * How many admissions the server works on at once, and how many may wait. A small admission takes its
 * slot once its body is read (it is at most 64 KiB, which its connection's share of memory covers); a
 * large one holds its slot from before its body is read until its answer is written, so the memory the
 * server needs is bounded by large slots × (body limit + one decision), whatever clients send. A request
 * that finds every slot taken waits in a bounded line (a large one without its body being read: TCP
 * holds it back); one that finds the line full is refused at once with 429 and `Retry-After`, which the
 * API server's client honours by retrying.
 */

export type ReleaseSlot = () => void;

/** A slot (call it to give the slot back), or `undefined`: refused, answer 429. */
export type Grant = Promise<ReleaseSlot | undefined>;

interface Waiter {
  source: string;
  grant: (release: ReleaseSlot | undefined) => void;
}

/** What one source holds in one line: slots, and requests waiting (oldest first). */
interface Share {
  running: number;
  waiting: Waiter[];
}

/**
 * Slots and a waiting line, shared fairly between sources (client addresses). A freed slot goes to the
 * waiting source holding the fewest slots (the one that has waited longest among equals). When the line
 * is full, a newcomer takes the place of the newest waiter of the source with the most places in it, if
 * that source has at least as many as the newcomer's will have; that waiter is refused instead. So one
 * source can fill the line only while no other source wants a place.
 */
export class AdmissionLimiter {
  private running = 0;
  private queuedCount = 0;
  private readonly shares = new Map<string, Share>();

  constructor(
    readonly concurrency: number,
    readonly queueLimit: number,
  ) {}

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.queuedCount;
  }

  /** A slot now, or once one is free for `source`; undefined when refused (the line is full). */
  acquire(source: string): Grant {
    if (this.running < this.concurrency) return Promise.resolve(this.take(source));
    const share = this.shareOf(source);
    if (this.queuedCount >= this.queueLimit && !this.displaceFor(share)) {
      this.forget(source, share);
      return Promise.resolve(undefined);
    }
    return new Promise((grant) => {
      share.waiting.push({ source, grant });
      this.queuedCount += 1;
    });
  }

  private take(source: string): ReleaseSlot {
    this.running += 1;
    this.shareOf(source).running += 1;
    return this.releaser(source);
  }

  /** Refuses the newest waiter of the source with most places, if it has at least as many as `share` will. */
  private displaceFor(share: Share): boolean {
    let largest: Share | undefined;
    for (const other of this.shares.values()) {
      if (other !== share && other.waiting.length > (largest?.waiting.length ?? 0)) largest = other;
    }
    if (largest === undefined || largest.waiting.length < share.waiting.length + 1) return false;
    const displaced = largest.waiting.pop() as Waiter;
    this.queuedCount -= 1;
    this.forget(displaced.source, largest);
    displaced.grant(undefined);
    return true;
  }

  private releaser(source: string): ReleaseSlot {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running -= 1;
      const share = this.shares.get(source) as Share;
      share.running -= 1;
      this.forget(source, share);
      const next = this.nextWaiter();
      if (next) next.grant(this.take(next.source));
    };
  }

  /** The oldest waiter of the waiting source holding the fewest slots. */
  private nextWaiter(): Waiter | undefined {
    let chosen: Share | undefined;
    for (const share of this.shares.values()) {
      if (share.waiting.length > 0 && (chosen === undefined || share.running < chosen.running)) chosen = share;
    }
    if (chosen === undefined) return undefined;
    this.queuedCount -= 1;
    return chosen.waiting.shift();
  }

  private shareOf(source: string): Share {
    let share = this.shares.get(source);
    if (share === undefined) {
      share = { running: 0, waiting: [] };
      this.shares.set(source, share);
    }
    return share;
  }

  private forget(source: string, share: Share): void {
    if (share.running === 0 && share.waiting.length === 0) this.shares.delete(source);
  }
}

/**
 * The two lines of slots. A review whose declared body is at most `smallMaxBytes` is decided on the main
 * thread, in a batch with the others ready at the same time, and holds little memory: it takes a small
 * slot, of which there are many, so batches can form. Any other (larger, or chunked and so of unknown
 * size until read) takes one of the few large slots, one per decision worker. Small reviews therefore
 * never wait behind large ones.
 */
export class AdmissionSlots {
  constructor(
    readonly small: AdmissionLimiter,
    readonly large: AdmissionLimiter,
    readonly smallMaxBytes: number,
  ) {}

  /** The line for a request declaring `declaredBytes` of body (undefined: not declared). */
  lineFor(declaredBytes: number | undefined): AdmissionLimiter {
    return declaredBytes !== undefined && declaredBytes <= this.smallMaxBytes ? this.small : this.large;
  }

  get active(): number {
    return this.small.active + this.large.active;
  }

  get queued(): number {
    return this.small.queued + this.large.queued;
  }
}
