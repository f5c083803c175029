/**
 * The benchmark baselines: HTTPS servers on the same TLS setup as `drainguard serve`. `express` (the
 * same HTTP stack as drainguard, so the ratio isolates drainguard's own work) and `node` (bare
 * node:https, the floor) only parse the AdmissionReview and answer a fixed "allowed" review.
 * `decision` is the express baseline answering with drainguard's pure decision (mutate and the patch
 * verification the spec requires) and nothing else: no logs, no metrics, no error mapping. It is the
 * ceiling for any HTTP adapter around this decision, which splits drainguard's distance from the
 * baseline into the decision's own cost and the server's.
 *
 *   node baseline-server.js --flavour express|node|decision --port N --tls-cert FILE --tls-key FILE
 * Prints `listening <port>` on stdout once it accepts connections.
 */
import { readFileSync } from 'node:fs';
import { createServer, type ServerOptions } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express from 'express';
import { decideAdmission } from '../src/admission';
import { defaultConfig } from '../src/config';

function flag(name: string): string {
  const index = process.argv.indexOf(`--${name}`);
  const value = index >= 0 ? process.argv[index + 1] : undefined;
  if (value === undefined) throw new Error(`baseline-server: --${name} is required`);
  return value;
}

function allowedReview(body: unknown): string {
  const review = body as { apiVersion?: unknown; request?: { uid?: unknown } };
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

function expressHandler(answer: (review: unknown) => string): express.Express {
  const app = express();
  // As drainguard's app does: no per-response ETag hash of the body, no X-Powered-By header.
  app.disable('x-powered-by');
  app.disable('etag');
  app.post('/mutate', express.json({ limit: '3mb' }), (req, res) => {
    res.type('application/json').send(answer(req.body));
  });
  return app;
}

function handler(flavour: string) {
  switch (flavour) {
    case 'node':
      return nodeHandler;
    case 'express':
      return expressHandler(allowedReview);
    case 'decision': {
      const config = defaultConfig();
      return expressHandler((review) => JSON.stringify(decideAdmission(review, config).body));
    }
    default:
      throw new Error(`baseline-server: unknown --flavour ${flavour}; use express, node or decision`);
  }
}

const server = createServer(tls, handler(flag('flavour')));
server.listen(Number(flag('port')), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
