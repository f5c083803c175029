/**
 * The reference servers of the HTTPS benchmark, on the same TLS setup as `drainguard serve`:
 *
 * - `express`: drainguard's HTTP stack (express, ETag and X-Powered-By off as in drainguard) that only
 *   parses the AdmissionReview and answers a fixed "allowed": the floor any admission server pays.
 * - `decision`: the same server answering with drainguard's pure decision (`decideAdmission`: mutate and
 *   the patch verification), batched as drainguard batches small reviews, and nothing else: no logs, no
 *   metrics, no error mapping. It is the ceiling
 *   for any HTTP server around this decision. It times each decision itself (process.hrtime around the
 *   call, in the server, caches as cold as real traffic leaves them) and hands the samples out on
 *   `GET /bench/decision-micros`, emptying its buffer, so the benchmark reads them between runs.
 *
 *   node baseline-server.js --flavour express|decision --port N --tls-cert FILE --tls-key FILE
 * Prints `listening <port>` on stdout once it accepts connections.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import express from 'express';
import { decideAdmission } from '../src/admission';
import { defaultConfig } from '../src/config';
import { DecisionBatch, DEFAULT_BATCH_BUDGET_MS } from '../src/server/decision-batch';

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

function expressServer(answer: (review: unknown) => string | Promise<string>): express.Express {
  const app = express();
  // As drainguard's app does: no per-response ETag hash of the body, no X-Powered-By header.
  app.disable('x-powered-by');
  app.disable('etag');
  app.post('/mutate', express.json({ limit: '3mb' }), (req, res, next) => {
    const text = answer(req.body);
    // The fixed answer is sent in the same turn, as before: no promise hop added to the baseline.
    if (typeof text === 'string') res.type('application/json').send(text);
    else text.then((decided) => res.type('application/json').send(decided), next);
  });
  return app;
}

/** Decision times in µs since the last read; a full buffer keeps the first samples (reads come every few seconds). */
class DecisionTimes {
  private samples = new Float64Array(1 << 20);
  private count = 0;

  record(micros: number): void {
    if (this.count < this.samples.length) this.samples[this.count++] = micros;
  }

  drain(): number[] {
    const taken = Array.from(this.samples.subarray(0, this.count), (micros) => Math.round(micros * 100) / 100);
    this.count = 0;
    return taken;
  }
}

function app(flavour: string): express.Express {
  switch (flavour) {
    case 'express':
      return expressServer(allowedReview);
    case 'decision': {
      const config = defaultConfig();
      const times = new DecisionTimes();
      // Batched as drainguard batches small reviews (src/server/decision-batch.ts): the ceiling for a
      // server around this decision is the one that pays the cold caches once per batch.
      const batch = new DecisionBatch<unknown, string>({
        budgetMs: DEFAULT_BATCH_BUDGET_MS,
        decideOne: (review) => {
          const started = process.hrtime.bigint();
          const decision = decideAdmission(review, config);
          times.record(Number(process.hrtime.bigint() - started) / 1000);
          return JSON.stringify(decision.body);
        },
      });
      const server = expressServer((review) => batch.decide(review));
      server.get('/bench/decision-micros', (_req, res) => {
        res.type('application/json').send(JSON.stringify(times.drain()));
      });
      return server;
    }
    default:
      throw new Error(`baseline-server: unknown --flavour ${flavour}; use express or decision`);
  }
}

const server = createServer(
  { cert: readFileSync(flag('tls-cert')), key: readFileSync(flag('tls-key')), minVersion: 'TLSv1.2' },
  app(flag('flavour')),
);
server.listen(Number(flag('port')), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
