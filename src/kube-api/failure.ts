/**
 * What a Kubernetes API request that did not succeed became: the one error of the lean client
 * (./client.ts) and of everything built on it. Pure (no I/O), so the reporter's core and its unit tests
 * use it without loading the client.
 */

/** A request the API server refused or did not answer. */
export class ApiFailure extends Error {
  /** The type of each cause the answer's Status gave (`details.causes[].reason` on the wire), in order. */
  readonly causeTypes: readonly string[];

  /** `status`: the HTTP status, or undefined when no answer came. */
  constructor(
    message: string,
    readonly status: number | undefined,
    options?: { cause?: unknown; causeTypes?: readonly string[] },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ApiFailure';
    this.causeTypes = options?.causeTypes ?? [];
  }

  /**
   * The API server refused to create an object because its namespace is being deleted (a 403 whose
   * Status names the cause NamespaceTerminating, as client-go's `HasStatusCause` reads it): it will
   * take no new object there again, so asking again only waits for the namespace to be gone.
   */
  get namespaceTerminating(): boolean {
    return this.status === 403 && this.causeTypes.includes(NAMESPACE_TERMINATING_CAUSE);
  }

  /** The request may have taken effect (no answer, a timeout, a 5xx): a later 409 could be this process's own create. */
  get maybeApplied(): boolean {
    return this.status === undefined || this.status >= 500;
  }
}

/** k8s.io/api core/v1 `NamespaceTerminatingCause`: the cause kube-apiserver's NamespaceLifecycle admission gives. */
export const NAMESPACE_TERMINATING_CAUSE = 'NamespaceTerminating';

/** What drainguard reads of a Kubernetes Status body: its message ('' when none) and its causes' types. */
export function readStatus(text: string): { message: string; causeTypes: string[] } {
  let status: { message?: unknown; details?: { causes?: unknown } } | null;
  try {
    status = JSON.parse(text) as typeof status;
  } catch {
    return { message: '', causeTypes: [] };
  }
  const message = typeof status?.message === 'string' ? status.message : '';
  const causes = status?.details?.causes;
  // A cause's type (Go's StatusCause.Type) goes on the wire as `reason`.
  const causeTypes = Array.isArray(causes) ? causes.flatMap((cause: { reason?: unknown } | null) => (typeof cause?.reason === 'string' ? [cause.reason] : [])) : [];
  return { message, causeTypes };
}

/** An answer other than the ones the caller expects, as the failure of `what` (`create event ns/name`). */
export function answerFailure(what: string, answer: { status: number; text: string }): ApiFailure {
  const { message, causeTypes } = readStatus(answer.text);
  return new ApiFailure(`${what}: HTTP ${answer.status}${message !== '' ? ` (${message})` : ''}`, answer.status, { causeTypes });
}

/** A 2xx status. */
export const succeeded = (status: number) => status >= 200 && status < 300;
