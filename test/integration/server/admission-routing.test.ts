/**
 * The HTTPS server hands admissions to the admission handler without express. It must take exactly
 * the requests express's `app.post('/mutate')` would have matched, so no request path changes place:
 * checked against a real express app over a real socket, for generated request targets.
 */
import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import fc from 'fast-check';
import { isAdmissionRequest } from '../../../src/server/admission-handler';

let server: Server;
let port: number;

beforeAll(async () => {
  const app = express();
  app.post('/mutate', (_req, res) => void res.send('admission'));
  app.use((_req, res) => void res.send('elsewhere'));
  server = createServer(app).listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function routedByExpress(method: string, path: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve(text === 'admission'));
    });
    req.on('error', reject);
    req.end();
  });
}

const segment = fc.constantFrom('mutate', 'Mutate', 'MUTATE', 'mutatex', 'mutat', 'validate', '', '%6Dutate', 'mutate.json');
const target = fc
  .record({
    leading: fc.constantFrom('/', '//'),
    first: segment,
    rest: fc.array(segment, { maxLength: 2 }),
    trailing: fc.constantFrom('', '/', '//'),
    query: fc.constantFrom('', '?timeout=10s', '?', '?a=/mutate', '#x'),
  })
  .map(({ leading, first, rest, trailing, query }) => `${leading}${[first, ...rest].join('/')}${trailing}${query}`);

test('a request is an admission exactly when express routes it to POST /mutate', async () => {
  await fc.assert(
    fc.asyncProperty(target, fc.constantFrom('POST', 'GET', 'PUT'), async (path, method) => {
      const expected = await routedByExpress(method, path);
      expect({ method, path, admission: isAdmissionRequest({ method, url: path } as IncomingMessage) }).toEqual({ method, path, admission: expected });
    }),
    { numRuns: 300 },
  );
});
