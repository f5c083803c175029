/**
 * Writing the drain record (../drain-record.ts) to the Envoy container's termination message file, so
 * that the kubelet copies it into the container's terminated state (docs/envoy-shutdown.md, "The drain
 * record").
 *
 * What the kubelet does with the file decides how it is written:
 *   - it creates the file (mode 0666, whatever the umask) and bind-mounts it at terminationMessagePath,
 *     so any user can write it, and it is never created here: no file, no kubelet, no record;
 *   - it reads the last 4096 bytes only, and then keeps the first 12288 / (number of containers) bytes
 *     of the message: the record is encoded within RECORD_BUDGET_BYTES, so both cuts leave it whole;
 *   - a file rewritten in place must not keep the tail of the longer text it replaced, so the new text
 *     is written from the start and the file is then cut to its length. A finished record is always
 *     longer than the started one, so a drain killed between the two steps still leaves a whole record.
 *
 * A write never blocks and never fails the drain: the file is opened non-blocking and written with the
 * log's non-blocking write (a FIFO nobody reads, a full disk, a read-only mount all end as an error the
 * drain logs and goes past).
 */
import { encodeDrainRecord, type DrainRecord } from '../drain-record';
import type { Platform } from './platform/platform';
import { utf8Encode } from './platform/utf8';

/**
 * The kubelet's budget for all termination messages of one pod (MaxPodTerminationMessageLogLength),
 * which it shares evenly between the pod's init, regular and ephemeral containers.
 */
const POD_TERMINATION_MESSAGE_BYTES = 12 * 1024;
/**
 * The most containers (init, regular and ephemeral together) a pod may have for the record to reach
 * the API whole. An Envoy pod has 2-5 (Envoy, shutdown-manager, an init container or two, drainguard's
 * installer) plus whatever `kubectl debug` adds later, which the webhook cannot know at admission.
 */
export const RECORD_WHOLE_UP_TO_CONTAINERS = 12;
/** 1024 bytes: the rest of a record takes under 400, leaving room for about 15 open listeners. */
export const RECORD_BUDGET_BYTES = Math.floor(POD_TERMINATION_MESSAGE_BYTES / RECORD_WHOLE_UP_TO_CONTAINERS);

export type RecordWriteOutcome = { ok: true; bytes: number } | { ok: false; error: string };

/** Where the drain's records go; `write` never throws and never waits. */
export interface RecordSink {
  readonly path: string;
  write(record: DrainRecord): RecordWriteOutcome;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function recordFileSink(platform: Pick<Platform, 'openRecordFile'>, path: string): RecordSink {
  return {
    path,
    write(record) {
      const bytes = utf8Encode(encodeDrainRecord(record, RECORD_BUDGET_BYTES));
      let file: ReturnType<Platform['openRecordFile']>;
      try {
        file = platform.openRecordFile(path);
      } catch (error) {
        return { ok: false, error: messageOf(error) };
      }
      try {
        let written = 0;
        while (written < bytes.length) {
          const n = file.tryWrite(bytes.subarray(written));
          if (n === 0) return { ok: false, error: `${path} cannot take the record now (${written} of ${bytes.length} bytes written)` };
          written += n;
        }
        file.truncate(bytes.length);
        return { ok: true, bytes: bytes.length };
      } catch (error) {
        return { ok: false, error: messageOf(error) };
      } finally {
        try {
          file.close();
        } catch {
          // Nothing to do about a failed close of a file already written (or given up).
        }
      }
    },
  };
}
