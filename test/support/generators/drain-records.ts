/**
 * Drain records as `envoy-shutdown drain` writes them into Envoy's termination message (the encoded
 * JSON of src/drain-record.ts), for the tests that play a drain's outcome without running one. Times
 * are relative to now: the drain started 20 s ago.
 */
import { encodeDrainRecord, type DrainReason, type FinishedRecord, type StartedRecord } from '../../../src/drain-record';

const STARTED_AT = () => new Date(Date.now() - 20_000).toISOString();

/** A finished record as `envoy-shutdown drain` writes it. */
export function finishedRecord(reason: DrainReason, fields: Partial<FinishedRecord> = {}): string {
  const record: FinishedRecord = {
    state: 'finished',
    version: '0.1.0',
    startedAt: STARTED_AT(),
    deadlineMs: 290_000,
    reason,
    durationMs: 14_000,
    connectionsAtStart: 312,
    connectionsAtEnd: 0,
    openListeners: [],
    openListenersOmitted: 0,
    healthcheckFailedAtMs: 0,
    envoyVersion: '1.31.2',
    ...(reason === 'signal' ? { signal: 'SIGTERM' } : {}),
    ...fields,
  };
  return encodeDrainRecord(record);
}

/** The record a drain leaves when it is killed before it finishes. */
export function startedRecord(fields: Partial<StartedRecord> = {}): string {
  return encodeDrainRecord({ state: 'started', version: '0.1.0', startedAt: STARTED_AT(), deadlineMs: 290_000, ...fields });
}
