/**
 * The benchmark baseline: an HTTPS server on the same TLS setup as `drainguard serve` that only parses
 * the AdmissionReview and answers a fixed "allowed" review. Two flavours: `express` (the same HTTP stack
 * as drainguard, so the ratio isolates drainguard's own work) and `node` (bare node:https, the floor).
 *
 *   node baseline-server.js --flavour express|node --port N --tls-cert FILE --tls-key FILE
 * Prints `listening <port>` on stdout once it accepts connections.
 */
import { readFileSync } from 'node:fs';
import { createServer, type ServerOptions } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express from 'express';

function flag(name: string): string {
  const index = process.argv.indexOf(`--${name}`);
  const value = index >= 0 ? process.argv[index + 1] : undefined;
  if (value === undefined) throw new Error(`baseline-server: --${name} is required`);
  return value;
}

function allowedReview(review: { apiVersion?: unknown; request?: { uid?: unknown } }): string {
  return JSON.stringify({
    apiVersion: review.apiVersion,
    kind: 'AdmissionReview',
    response: { uid: review.request?.uid, allowed: true },
  });
}

const tls: ServerOptions = {
  cert: readFileSync(flag('tls-cert')),
  key: readFileSync(flag('tls-key')),
  minVersion: 'TLSv1.2',
};

function nodeHandler(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = allowedReview(JSON.parse(Buffer.concat(chunks).toString('utf8')));
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
}

function expressHandler(): express.Express {
  const app = express();
  app.post('/mutate', express.json({ limit: '3mb' }), (req, res) => {
    res.type('application/json').send(allowedReview(req.body));
  });
  return app;
}

const server = createServer(tls, flag('flavour') === 'node' ? nodeHandler : expressHandler());
server.listen(Number(flag('port')), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
