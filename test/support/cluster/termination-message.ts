/**
 * A container's termination message as the kubelet makes it (pkg/kubelet/kuberuntime
 * `getTerminationMessage`, `convertToKubeContainerStatus`; pkg/kubelet/status `normalizeStatus`): at most
 * the last 4096 bytes of the file at terminationMessagePath (tail.ReadAtMost with
 * MaxContainerTerminationMessageLength); with `FallbackToLogsOnError`, an empty file and a non-zero exit
 * take the end of the container's log instead; the runtime's own message goes first; the status
 * manager keeps the head of 12288 / (number of containers) bytes of it.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/** kubecontainer.MaxContainerTerminationMessageLength. */
export const MAX_TERMINATION_MESSAGE_BYTES = 4096;
/** kubecontainer.MaxContainerTerminationMessageLogLength: what FallbackToLogsOnError takes from the log. */
export const MAX_FALLBACK_LOG_BYTES = 2048;
/** kubecontainer.MaxPodTerminationMessageLogLength: shared by every container of the pod. */
export const MAX_POD_TERMINATION_MESSAGE_BYTES = 12288;

/** The last `max` bytes of a file, as tail.ReadAtMost reads them; '' for a missing file. */
export function readTerminationMessageFile(path: string, max: number = MAX_TERMINATION_MESSAGE_BYTES): string {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw error;
  }
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, max);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    return buffer.toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** The last `max` bytes of a text (invalid UTF-8 becomes U+FFFD, as in JSON). */
export function tailBytes(text: string, max: number): string {
  const bytes = Buffer.from(text, 'utf8');
  return bytes.length <= max ? text : bytes.subarray(bytes.length - max).toString('utf8');
}

/** The first `max` bytes of a text. */
export function headBytes(text: string, max: number): string {
  const bytes = Buffer.from(text, 'utf8');
  return bytes.length <= max ? text : bytes.subarray(0, max).toString('utf8');
}

export interface EndedContainer {
  exitCode: number;
  /** What the termination message file held (its last 4096 bytes are read). */
  fileText: string;
  /** The container's terminationMessagePolicy. */
  policy?: string;
  /** The container's log, for FallbackToLogsOnError. */
  log?: string;
  /** The runtime's own message, which the kubelet puts before the file's text (`<runtime>: <file>`). */
  runtimeMessage?: string;
}

/** The message the pod's status carries for an ended container, '' for none. */
export function terminationMessage(ended: EndedContainer, containersInPod: number): string {
  let text = tailBytes(ended.fileText, MAX_TERMINATION_MESSAGE_BYTES);
  if (text === '' && ended.policy === 'FallbackToLogsOnError' && ended.exitCode !== 0) text = tailBytes(ended.log ?? '', MAX_FALLBACK_LOG_BYTES);
  const joined = ended.runtimeMessage && text ? `${ended.runtimeMessage}: ${text}` : ended.runtimeMessage || text;
  return headBytes(joined, Math.floor(MAX_POD_TERMINATION_MESSAGE_BYTES / Math.max(containersInPod, 1)));
}
