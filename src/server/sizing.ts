/**
 * The server's limits and the memory they add up to. One formula, used by the server (each decision
 * worker's heap limit) and documented for the chart, whose default memory limit is computed the same
 * way (a test keeps the two equal):
 *
 *   memory limit (MiB) = BASE + connections × PER_CONNECTION + small concurrency × PER_SMALL_ADMISSION
 *                        + concurrency × (worker heap + WORKER_OVERHEAD + body limit)
 *   worker heap (MiB)  = WORKER_HEAP_BASE + WORKER_HEAP_PER_BODY_MIB × body limit (MiB)
 *
 * A small admission's body (at most 64 KiB) is read before it takes a slot and counts against its
 * connection; a large admission waiting for a slot costs next to nothing: its body is not read until
 * it holds one.
 */

export interface AdmissionLimits {
  /** Largest request body accepted, bytes. */
  bodyLimitBytes: number;
  /** Admissions read and decided at once (one decision worker each). */
  concurrency: number;
  /**
   * Admissions whose declared body is at most `INLINE_DECISION_MAX_BYTES` (./webhook-server), read and
   * decided at once on the main thread (in batches, ./decision-batch), besides the large ones above.
   */
  smallConcurrency: number;
  /** Admissions that may wait for a slot, in each line (small and large); more are refused with 429. */
  queueLimit: number;
  /** Open connections, idle ones included; more are closed at once. */
  maxConnections: number;
  /** V8 heap limit of each decision worker, MiB (derived from the body limit). */
  workerHeapMb: number;
}

export const DEFAULT_LIMITS = {
  bodyLimitBytes: 3 * 1024 * 1024,
  concurrency: 2,
  smallConcurrency: 16,
  queueLimit: 32,
  maxConnections: 128,
} as const;

/**
 * Node, express, TLS contexts, metrics, the main thread's heap and its inline decisions of small
 * reviews, and the main thread's share of large admissions (reading each body, handing it to a worker,
 * its buffers and young generation). Measured idle, with the chart's Node settings (values.yaml
 * `server.runtime`) and no decision worker started: 79 MiB resident (51 of them Node's mapped code,
 * which a cgroup charges as page cache). Under `npm run bench:memory` (8 clients sending ~3 MiB reviews
 * as fast as an idle 2-core machine answers them) the whole process peaked at 339 to 362 MiB resident
 * (281 to 300 MiB anonymous) over five runs: the base is what makes the default limit (400 MiB) cover
 * the highest of those resident peaks with a 10% margin. (Before the KubeConfig bundle, the decision
 * workers started on demand and the runtime settings, the peaks were 422 to 456 MiB and the base 256.)
 */
export const BASE_MEMORY_MIB = 138;
/**
 * An open TLS connection: socket and TLS buffers, the HTTP parser (measured: ~85 KiB each), and the
 * body of a small review being read before it takes a slot (64 KiB at most, one per connection: the
 * admissions of a connection take turns).
 */
export const PER_CONNECTION_KIB = 192;
/**
 * A small admission: its body (64 KiB at most), its answer, and its share of the main thread's young
 * generation while it is decided. The parsed review and the decision's garbage are the main thread's
 * (in BASE): a batch decides one review at a time.
 */
export const PER_SMALL_ADMISSION_KIB = 512;
/** A decision worker besides its old-generation heap: isolate, code, young generation. */
export const WORKER_OVERHEAD_MIB = 24;
/** Heap of an idle decision worker, MiB. */
export const WORKER_HEAP_BASE_MIB = 16;
/** Heap a decision needs per MiB of review (parsed pod, draft, patch, verification copy). */
export const WORKER_HEAP_PER_BODY_MIB = 24;

const MIB = 1024 * 1024;

export function workerHeapMb(bodyLimitBytes: number): number {
  return WORKER_HEAP_BASE_MIB + Math.ceil((WORKER_HEAP_PER_BODY_MIB * bodyLimitBytes) / MIB);
}

/** The limits with defaults filled in and the worker heap derived. */
export function admissionLimits(given: Partial<AdmissionLimits> = {}): AdmissionLimits {
  const bodyLimitBytes = given.bodyLimitBytes ?? DEFAULT_LIMITS.bodyLimitBytes;
  return {
    bodyLimitBytes,
    concurrency: given.concurrency ?? DEFAULT_LIMITS.concurrency,
    smallConcurrency: given.smallConcurrency ?? DEFAULT_LIMITS.smallConcurrency,
    queueLimit: given.queueLimit ?? DEFAULT_LIMITS.queueLimit,
    maxConnections: given.maxConnections ?? DEFAULT_LIMITS.maxConnections,
    workerHeapMb: given.workerHeapMb ?? workerHeapMb(bodyLimitBytes),
  };
}

/** The memory limit (MiB) a server with these limits stays under. */
export function memoryLimitMiB(limits: AdmissionLimits): number {
  const bodyMiB = Math.ceil(limits.bodyLimitBytes / MIB);
  const connections = Math.ceil((limits.maxConnections * PER_CONNECTION_KIB) / 1024);
  const small = Math.ceil((limits.smallConcurrency * PER_SMALL_ADMISSION_KIB) / 1024);
  return BASE_MEMORY_MIB + connections + small + limits.concurrency * (limits.workerHeapMb + WORKER_OVERHEAD_MIB + bodyMiB);
}
