/**
 * Envoy's admin API as the drain sees it: one HTTP/1.1 call per fresh connection (http1.ts), its body
 * streamed into a BodyReader. Nothing is left open between polls, and an admin server that dies
 * mid-drain is noticed on the next call instead of hiding behind a pooled socket.
 */
import type { AdminAddress } from '../drain-contract';
import { HttpCallError, httpRequest, type BodyReader, type HttpAnswer, type HttpFailureKind } from './http1';
import type { Platform } from './platform/platform';

/**
 * Why a call got no usable HTTP answer. The distinction drives the drain: `unreachable` (refused,
 * socket file gone, connection reset or closed before any answer) means Envoy is gone and the hook
 * must return at once; `timeout` and `failed` (an answer that could not be read, any other error) mean
 * something is there, so the drain carries on, bounded by its deadline.
 */
export type AdminFailureKind = HttpFailureKind;
export { HttpCallError as AdminCallError };

export type AdminResponse<T> = HttpAnswer<T>;

export interface AdminClient {
  /** `reader` consumes the body as it arrives; a new reader is needed for every call. */
  call<T>(method: 'GET' | 'POST', path: string, timeoutMs: number, reader: BodyReader<T>): Promise<AdminResponse<T>>;
}

export function createAdminClient(platform: Pick<Platform, 'connect' | 'setTimer' | 'clearTimer'>, address: AdminAddress): AdminClient {
  return {
    call: (method, path, timeoutMs, reader) => httpRequest(platform, address, method, path, timeoutMs, reader),
  };
}
