/**
 * A decision worker: parses one AdmissionReview body and runs the pure admission decision on it, off
 * the main thread, so `/healthz`, `/readyz` and the TLS handshakes of other clients never wait behind a
 * large review. Its heap is capped by the pool; if a review needs more, only this worker dies.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { decideBody, loadCoreModule } from './decide-body';
import type { AnsweredMessage, DecideMessage, DecisionWorkerData, ParsedMessage } from './decision-protocol';

const { config, coreModule } = workerData as DecisionWorkerData;

/**
 * Decisions yield the CPU to the main thread: on Linux a thread has its own nice value, and this
 * thread's id is the last part of /proc/thread-self. With every decision worker busy on a small CPU
 * share, the main thread still gets the CPU first for health checks, handshakes and answers. Elsewhere
 * (or if refused) the worker runs at normal priority.
 */
const DECISION_NICENESS = 10;
try {
  const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
  if (Number.isInteger(threadId)) setPriority(threadId, DECISION_NICENESS);
} catch {
  // Not Linux, or not permitted: normal priority.
}
const core = loadCoreModule(coreModule);

function envelope(review: unknown): ParsedMessage['review'] {
  if (typeof review !== 'object' || review === null) return undefined;
  const { apiVersion, request } = review as { apiVersion?: unknown; request?: { uid?: unknown } };
  const uid = typeof request === 'object' && request !== null ? request.uid : undefined;
  return typeof uid === 'string' && typeof apiVersion === 'string' ? { uid, apiVersion } : undefined;
}

function answer(message: DecideMessage): AnsweredMessage {
  const decided = decideBody(Buffer.from(message.body), config, core, (review) =>
    parentPort!.postMessage({ id: message.id, kind: 'parsed', review: envelope(review) } satisfies ParsedMessage),
  );
  return { id: message.id, kind: 'answered', ...decided };
}

parentPort!.on('message', (message: DecideMessage) => {
  parentPort!.postMessage(answer(message));
});
