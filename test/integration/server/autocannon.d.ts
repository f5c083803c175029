/** The part of autocannon's programmatic API the webhook load tests use (the package ships no types). */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    amount?: number;
    reconnectRate?: number;
    timeout?: number;
    servername?: string;
    tlsOptions?: Record<string, unknown>;
  }

  interface Result {
    requests: { total: number };
    errors: number;
    timeouts: number;
    non2xx: number;
    '2xx': number;
    resets: number;
  }

  interface Instance extends EventEmitter, PromiseLike<Result> {
    stop(): void;
  }

  function autocannon(options: Options): Instance;
  export = autocannon;
}
