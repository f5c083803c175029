/**
 * A crowd: one source holding as many connections to the server as it can, without sending anything
 * invalid (issue 20): connections that send nothing after the handshake, connections idle after one
 * `/healthz`, or admissions whose declared body arrives one byte a second. Each connection the server
 * closes or refuses is reopened a second later while the crowd runs: with hundreds of members that is
 * hundreds of attempts a second, enough to take any connection the server frees within milliseconds,
 * without the crowd's own TLS work starving the process it shares with the tests' clients. It connects from a second loopback address (all of 127/8 is
 * loopback on Linux), so the server can tell it from the clients on 127.0.0.1. Used by `bench:fuzz` and
 * by the server's integration tests.
 */
import { connect as tcpConnect } from 'node:net';
import { connect, type TLSSocket } from 'node:tls';

export const CROWD_ADDRESS = '127.0.0.2';
const REOPEN_AFTER_MS = 1000;

export interface CrowdTarget {
  port: number;
  ca: string;
  servername: string;
}

export type CrowdKind = 'silent' | 'idle' | 'slow-body';

export interface CrowdMember {
  kind: CrowdKind;
  count: number;
  /** slow-body: the declared Content-Length. */
  declaredBytes?: number;
}

export interface CrowdFigures {
  opened: number;
  /** Connections the server closed (each was reopened while the crowd ran). */
  closedByServer: number;
  /** Statuses the server answered slow bodies with (408, 429), with how often. */
  answers: Record<string, number>;
}

export interface Crowd {
  /** Resolves once every member's first connection finished its handshake or was refused. */
  established: Promise<void>;
  /** Closes every connection and stops reopening them. */
  stop: () => CrowdFigures;
}

/** Starts the crowd; each member keeps its connections open (reopening them) until `stop`. */
export function startCrowd(target: CrowdTarget, members: readonly CrowdMember[], address = CROWD_ADDRESS): Crowd {
  const figures: CrowdFigures = { opened: 0, closedByServer: 0, answers: {} };
  const sockets = new Set<TLSSocket>();
  const tickers = new Set<NodeJS.Timeout>();
  let running = true;
  let pending = members.reduce((sum, member) => sum + member.count, 0);
  let markEstablished!: () => void;
  const established = new Promise<void>((resolve) => (markEstablished = resolve));
  const settledOnce = () => {
    pending -= 1;
    if (pending === 0) markEstablished();
  };

  const open = (member: CrowdMember, first: boolean): void => {
    if (!running) return;
    const tcp = tcpConnect({ host: '127.0.0.1', port: target.port, localAddress: address });
    const socket = connect({ socket: tcp, ca: target.ca, servername: target.servername });
    sockets.add(socket);
    figures.opened += 1;
    let settled = !first;
    const settle = () => {
      if (!settled) settled = true, settledOnce();
    };
    let ticker: NodeJS.Timeout | undefined;
    let text = '';
    socket.once('secureConnect', () => {
      if (member.kind === 'idle') socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
      if (member.kind === 'slow-body') {
        socket.write(`POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${member.declaredBytes}\r\n\r\n{`);
        ticker = setInterval(() => socket.write(' '), 1000);
        tickers.add(ticker);
      }
      settle();
    });
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      for (const match of text.matchAll(/HTTP\/1\.1 (\d{3}) /g)) if (member.kind === 'slow-body') figures.answers[match[1] as string] = (figures.answers[match[1] as string] ?? 0) + 1;
      text = text.slice(-16);
    });
    socket.on('error', () => undefined);
    socket.once('close', () => {
      settle();
      if (ticker) clearInterval(ticker), tickers.delete(ticker);
      sockets.delete(socket);
      if (!running) return;
      figures.closedByServer += 1;
      const reopen = setTimeout(() => {
        tickers.delete(reopen);
        open(member, false);
      }, REOPEN_AFTER_MS);
      tickers.add(reopen);
    });
  };

  for (const member of members) for (let i = 0; i < member.count; i += 1) open(member, true);
  return {
    established,
    stop: () => {
      running = false;
      for (const ticker of tickers) clearTimeout(ticker);
      for (const socket of sockets) socket.destroy();
      return figures;
    },
  };
}

