/**
 * The I/O of a drain and nothing else, as its own process for bench/report-floor.ts: the pod watch on
 * one TLS connection, and for each pod the watch delivers as deleted two Event creates, one after the
 * other, on a second kept-alive TLS connection, as the reporter sends them. No logic, no metrics, no
 * logging, fixed Event bodies of the reporter's size; the watch split into lines, and with `parse`
 * each event JSON.parse'd too (and dropped). What it costs is a floor for any Node process that reports these drains.
 *
 * It reads the stub's chunked watch without a decoder: the stub writes each event as one line in one
 * chunk, so a line that starts with `{` is a whole event. Never run against another server.
 *
 * argv[2]: JSON `{ port, token, ca, parse }`. Prints `started` once both connections are open.
 */
import { connect } from 'node:tls';

interface FloorClientSettings {
  port: number;
  token: string;
  ca: string;
  parse: boolean;
}

/** An Event body of the reporter's size (about 1 KB; the reporter's pod and workload Events are 1,003–1,017 bytes). */
function eventBody(name: string, kind: string): string {
  const now = new Date().toISOString();
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name, namespace: 'ns-0', annotations: { 'drainguard.io/reported-by': 'bench-reporter/000000000000' } },
    involvedObject: { apiVersion: 'v1', kind, namespace: 'ns-0', name: 'envoy', uid: '00000000-0000-0000-0000-000000000000', fieldPath: 'spec.containers{envoy}' },
    reason: 'EnvoyDrained',
    message: 'x'.repeat(560),
    type: 'Normal',
    source: { component: 'drainguard-reporter' },
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  });
}

function main(settings: FloorClientSettings): void {
  const open = () => connect({ host: '127.0.0.1', port: settings.port, ca: settings.ca });
  const auth = `Authorization: Bearer ${settings.token}\r\n`;
  const watch = open();
  watch.write(`GET /api/v1/pods?watch=true&labelSelector=drainguard.io%2Fprotected%3Dtrue&resourceVersion=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}\r\n`);
  const events = open();
  let created = 0;
  /** Drains whose creates wait for the one under way. */
  let waiting = 0;
  /** 0: idle; 1: the pod's Event sent; 2: the workload's. */
  let stage = 0;
  let answer = '';
  const create = (kind: string) => {
    const body = eventBody(`floor-${created++}`, kind);
    events.write(`POST /api/v1/namespaces/ns-0/events HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  };
  const drain = () => {
    stage = 1;
    create('Pod');
  };
  events.on('data', (chunk: Buffer) => {
    answer += chunk.toString('latin1');
    const headEnd = answer.indexOf('\r\n\r\n');
    if (headEnd === -1) return;
    const length = /\r\ncontent-length: *(\d+)/i.exec(answer.slice(0, headEnd));
    if (!length) throw new Error('the stub answered an Event create without a Content-Length');
    if (answer.length < headEnd + 4 + Number(length[1])) return;
    answer = '';
    if (stage === 1) {
      stage = 2;
      create('DaemonSet');
    } else if (waiting > 0) {
      waiting--;
      drain();
    } else stage = 0;
  });
  let partial = '';
  watch.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.startsWith('{')) continue;
      if (settings.parse) JSON.parse(line);
      if (!line.startsWith('{"type":"DELETED"')) continue;
      if (stage === 0) drain();
      else waiting++;
    }
  });
  for (const socket of [watch, events]) socket.on('error', (error) => {
    process.stderr.write(`report-floor-client: ${error.message}\n`);
    process.exit(1);
  });
  let connected = 0;
  for (const socket of [watch, events]) socket.once('secureConnect', () => {
    if (++connected === 2) process.stdout.write('started\n');
  });
}

main(JSON.parse(process.argv[2] ?? '{}') as FloorClientSettings);
