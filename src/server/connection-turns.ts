/**
 * Admissions pipelined on one connection take their turns: each waits for the one before it on the same
 * connection to be answered before it asks for an admission slot. Answers on a connection go out in
 * request order anyway, so nothing is lost by it, and one connection never holds more than one slot or
 * one place in the waiting line however many requests it pipelines. While more than
 * `MAX_PIPELINED_ADMISSIONS` wait on a connection, the server stops reading it (TCP holds the client
 * back), so a pipeline cannot make the server hold more than that many requests of one connection.
 */
import type { Socket } from 'node:net';

export const MAX_PIPELINED_ADMISSIONS = 8;

interface Line {
  /** Settles when the last admission queued on this connection is answered. */
  tail: Promise<void>;
  waiting: number;
}

export interface Turn {
  /** Resolves when every earlier admission on the connection has been answered. */
  ready: Promise<void>;
  /** Call once this admission is answered (or failed). */
  done(): void;
}

const lines = new WeakMap<Socket, Line>();

export function takeTurn(socket: Socket): Turn {
  const line = lines.get(socket) ?? { tail: Promise.resolve(), waiting: 0 };
  lines.set(socket, line);
  const ready = line.tail;
  let finish!: () => void;
  line.tail = new Promise<void>((resolve) => (finish = resolve));
  line.waiting += 1;
  if (line.waiting > MAX_PIPELINED_ADMISSIONS) socket.pause();
  let finished = false;
  return {
    ready,
    done: () => {
      if (finished) return;
      finished = true;
      line.waiting -= 1;
      if (line.waiting <= MAX_PIPELINED_ADMISSIONS && socket.isPaused() && !socket.destroyed) socket.resume();
      finish();
    },
  };
}
