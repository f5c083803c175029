/**
 * The certificate files are replaced the way the kubelet updates a Secret volume (a new
 * timestamped directory, then an atomic rename of the `..data` symlink) while a load generator runs with
 * frequent reconnects: no request fails, and new connections get the new certificate.
 */
import { X509Certificate } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import autocannon from 'autocannon';
import { defaultConfig } from '../../../src/config';
import { createCertificateAuthority, createServingCertificate, type KeyPairPem } from '../../../src/certs/pki';
import { startWebhook, type RunningWebhook } from '../../../src/server/start';
import { admissionReview, eventually, fixturePods, httpsRequest, temporaryDirectory } from './webhook-test-kit';

const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;
const NAMES = ['localhost', '127.0.0.1'];
const issue = (label: string): { ca: KeyPairPem; serving: KeyPairPem } => {
  const validity = { now: new Date(), validityDays: 30 };
  const ca = createCertificateAuthority(label, validity);
  return { ca, serving: createServingCertificate(ca, NAMES, validity) };
};

/** A directory laid out like a mounted Secret: tls.crt -> ..data/tls.crt, ..data -> ..<version>. */
class SecretVolume {
  private version = 0;
  private current = '';
  constructor(readonly path: string) {}
  get certPath() {
    return join(this.path, 'tls.crt');
  }
  get keyPath() {
    return join(this.path, 'tls.key');
  }

  publish(files: { cert: string; key: string }): void {
    const next = `..2026_11_29_${String(++this.version).padStart(2, '0')}`;
    mkdirSync(join(this.path, next));
    writeFileSync(join(this.path, next, 'tls.crt'), files.cert);
    writeFileSync(join(this.path, next, 'tls.key'), files.key);
    symlinkSync(next, join(this.path, '..data_tmp'));
    renameSync(join(this.path, '..data_tmp'), join(this.path, '..data'));
    if (this.version === 1) {
      symlinkSync('..data/tls.crt', this.certPath);
      symlinkSync('..data/tls.key', this.keyPath);
    } else {
      rmSync(join(this.path, this.current), { recursive: true });
    }
    this.current = next;
  }
}

const logLines: string[] = [];
const logger = pino(
  { level: 'info' },
  new Writable({
    write(chunk, _encoding, done) {
      logLines.push(String(chunk));
      done();
    },
  }),
);

const first = issue('first CA');
const second = issue('second CA');
const directory = temporaryDirectory();
const volume = new SecretVolume(directory.path);
let webhook: RunningWebhook;
let port: number;

beforeAll(async () => {
  volume.publish(first.serving);
  webhook = await startWebhook({
    host: '127.0.0.1',
    port: 0,
    config: defaultConfig(),
    logger,
    shutdownDelayMs: 0,
    tls: { mode: 'files', certPath: volume.certPath, keyPath: volume.keyPath, debounceMs: 50 },
  });
  port = webhook.server.address().port;
});
afterAll(async () => {
  await webhook.close();
  directory.remove();
});

const servedBy = async (ca: string) => {
  const result = await httpsRequest({ port, method: 'GET', path: '/readyz', ca, servername: 'localhost' });
  return result.status === 200 ? result.peerCertificate : undefined;
};

test('swapping the Secret volume under load: zero failed requests, new certificate served after', async () => {
  expect(await servedBy(first.ca.cert)).toBeDefined();
  const body = JSON.stringify(admissionReview(fixturePods()[0]!.pod));
  // The load runs in this process beside the server, so its length is set by what it must show, not
  // by a fixed count: BEFORE responses, then the swap, then AFTER more once the new certificate is
  // served (each with new handshakes, reconnectRate), then it stops. A fixed 1800 took over 30 s on a
  // loaded machine; AMOUNT only bounds a run whose swap is never seen.
  const BEFORE = 200;
  const AFTER = 200;
  const AMOUNT = 1800;
  const load = autocannon({
    url: `https://127.0.0.1:${port}/mutate`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    connections: 4,
    amount: AMOUNT,
    // New TLS handshakes throughout the run, so some happen while the certificate is being swapped.
    reconnectRate: 3,
    timeout: 10,
  });
  let responses = 0;
  let responsesWhenNewCertificateSeen = Infinity;
  let swapped: Promise<string> | undefined;
  load.on('response', () => {
    responses += 1;
    if (responses === responsesWhenNewCertificateSeen + AFTER) load.stop();
    if (responses !== BEFORE) return;
    volume.publish(second.serving);
    swapped = eventually('the new certificate to be served', () => servedBy(second.ca.cert)).then((pem) => {
      responsesWhenNewCertificateSeen = responses;
      return pem;
    });
  });
  const result = await load;
  expect(swapped).toBeDefined();
  const newCertificate = await swapped!;

  // autocannon abandons the request in flight when it reconnects and does not count it; every counted one succeeded.
  expect(responses).toBeGreaterThanOrEqual(responsesWhenNewCertificateSeen + AFTER);
  expect(result.requests.total).toBeGreaterThanOrEqual(BEFORE + AFTER);
  expect(result['2xx']).toBe(result.requests.total);
  expect(result.errors).toBe(0);
  expect(result.timeouts).toBe(0);
  expect(result.non2xx).toBe(0);
  expect(fingerprint(newCertificate)).toBe(fingerprint(second.serving.cert));
  await expect(servedBy(first.ca.cert)).rejects.toThrow(/self-signed|unable to verify|certificate/i);
});

test('files mode exports the serving certificate expiry and no CA expiry: the CA the API server trusts is not the server\'s to know', async () => {
  // Whichever pair the swap above left in use.
  const metrics = (await httpsRequest({ port, method: 'GET', path: '/metrics' })).text;
  expect(metrics).toMatch(/^drainguard_certificate_expiry_timestamp_seconds \d{10}/m);
  expect(metrics).not.toMatch(/^drainguard_ca_certificate_expiry_timestamp_seconds /m);
});

test('a mismatched pair is refused and the current certificate stays in use', async () => {
  const before = await eventually('the second certificate', () => servedBy(second.ca.cert));
  volume.publish({ cert: first.serving.cert, key: second.serving.key });
  await eventually('the refusal to be logged', async () =>
    logLines.find((line) => line.includes('new certificate files refused') && line.includes('does not match')),
  );
  expect(await servedBy(second.ca.cert)).toBe(before);
  const ready = await httpsRequest({ port, method: 'GET', path: '/readyz', ca: second.ca.cert, servername: 'localhost' });
  expect(ready.status).toBe(200);
});

describe('a certificate directory deleted and created again', () => {
  const parent = temporaryDirectory();
  const certDirectory = join(parent.path, 'tls');
  const files = { cert: join(certDirectory, 'tls.crt'), key: join(certDirectory, 'tls.key') };
  const write = (pair: KeyPairPem) => {
    mkdirSync(certDirectory, { recursive: true });
    writeFileSync(files.cert, pair.cert);
    writeFileSync(files.key, pair.key);
  };
  const third = issue('third CA');
  const fourth = issue('fourth CA');
  let recreated: RunningWebhook;

  beforeAll(async () => {
    write(first.serving);
    // The poll stays at its default (60 s): only the watcher can notice the swap within the test.
    recreated = await startWebhook({
      host: '127.0.0.1',
      port: 0,
      config: defaultConfig(),
      logger,
      shutdownDelayMs: 0,
      tls: { mode: 'files', certPath: files.cert, keyPath: files.key, debounceMs: 50 },
    });
  });
  afterAll(async () => {
    await recreated.close();
    parent.remove();
  });

  const loadedLines = () => logLines.filter((line) => line.includes('serving certificate loaded')).length;
  const servedHere = async (ca: string) => {
    const result = await httpsRequest({ port: recreated.server.address().port, method: 'GET', path: '/readyz', ca, servername: 'localhost' });
    return result.peerCertificate;
  };

  test('a pair written into the new directory is picked up by the watcher, and so are later changes in it', async () => {
    expect(fingerprint(await servedHere(first.ca.cert))).toBe(fingerprint(first.serving.cert));
    rmSync(certDirectory, { recursive: true });
    const before = loadedLines();
    write(third.serving);
    await eventually('the new pair to be loaded', async () => (loadedLines() > before ? true : undefined));
    expect(fingerprint(await servedHere(third.ca.cert))).toBe(fingerprint(third.serving.cert));

    const again = loadedLines();
    write(fourth.serving);
    await eventually('the next pair to be loaded', async () => (loadedLines() > again ? true : undefined));
    expect(fingerprint(await servedHere(fourth.ca.cert))).toBe(fingerprint(fourth.serving.cert));
  });
});
