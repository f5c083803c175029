/**
 * What a Kubernetes API request that did not succeed became: the one error of the lean client
 * (./client.ts) and of everything built on it. Pure (no I/O), so the reporter's core and its unit tests
 * use it without loading the client.
 */

/** A request the API server refused or did not answer. */
export class ApiFailure extends Error {
  /** `status`: the HTTP status, or undefined when no answer came. */
  constructor(
    message: string,
    readonly status: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ApiFailure';
  }

  /** The request may have taken effect (no answer, a timeout, a 5xx): a later 409 could be this process's own create. */
  get maybeApplied(): boolean {
    return this.status === undefined || this.status >= 500;
  }
}

/** The `message` of a Kubernetes Status body, or '' when the text is not one. */
export function statusMessage(text: string): string {
  try {
    const message = (JSON.parse(text) as { message?: unknown } | null)?.message;
    return typeof message === 'string' ? message : '';
  } catch {
    return '';
  }
}

/** An answer other than the ones the caller expects, as the failure of `what` (`create event ns/name`). */
export function answerFailure(what: string, answer: { status: number; text: string }): ApiFailure {
  const message = statusMessage(answer.text);
  return new ApiFailure(`${what}: HTTP ${answer.status}${message !== '' ? ` (${message})` : ''}`, answer.status);
}

/** A 2xx status. */
export const succeeded = (status: number) => status >= 200 && status < 300;
