/**
 * How many admissions the server works on at once, and how many may wait. An admission holds its slot
 * from before its body is read until its answer is written, so the memory the server needs is bounded by
 * slots × (body limit + one decision), whatever clients send. A request that finds every slot taken
 * waits in a bounded line, without its body being read (TCP holds it back); one that finds the line
 * full is refused at once with 429 and `Retry-After`, which the API server's client honours by retrying.
 */

export type ReleaseSlot = () => void;

export class AdmissionLimiter {
  private running = 0;
  private readonly line: ((release: ReleaseSlot) => void)[] = [];

  constructor(
    readonly concurrency: number,
    readonly queueLimit: number,
  ) {}

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.line.length;
  }

  /** A slot now, or once one is free; undefined when the line is full (refuse the request). */
  acquire(): Promise<ReleaseSlot> | undefined {
    if (this.running < this.concurrency) {
      this.running += 1;
      return Promise.resolve(this.releaser());
    }
    if (this.line.length >= this.queueLimit) return undefined;
    return new Promise((resolve) => this.line.push(resolve));
  }

  private releaser(): ReleaseSlot {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.line.shift();
      // The slot passes straight to the next in line: `running` stays the same.
      if (next) next(this.releaser());
      else this.running -= 1;
    };
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
