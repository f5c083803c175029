/**
 * One certificate for every server a benchmark starts, made with drainguard's own PKI code: the servers
 * compared differ only in what they do with a request, never in key size or TLS setup.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCertificateAuthority, createServingCertificate } from '../../src/certs';

export interface BenchCertificates {
  /** PEM of the CA, which clients trust (as kube-apiserver trusts `caBundle`). */
  ca: string;
  certPath: string;
  keyPath: string;
  /** The name the certificate is issued for; clients verify against it. */
  servername: string;
  remove(): void;
}

export function createBenchCertificates(): BenchCertificates {
  const directory = mkdtempSync(join(tmpdir(), 'drainguard-bench-'));
  const validity = { now: new Date(), validityDays: 2 };
  const ca = createCertificateAuthority('drainguard bench CA', validity);
  const serving = createServingCertificate(ca, ['drainguard.bench.svc', '127.0.0.1'], validity);
  const certPath = join(directory, 'tls.crt');
  const keyPath = join(directory, 'tls.key');
  writeFileSync(certPath, serving.cert);
  writeFileSync(keyPath, serving.key, { mode: 0o600 });
  return {
    ca: ca.cert,
    certPath,
    keyPath,
    servername: 'drainguard.bench.svc',
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
}
