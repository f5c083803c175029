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
