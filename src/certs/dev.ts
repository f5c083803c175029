/**
 * `drainguard serve --dev`: a development CA and a certificate for localhost, generated once into a
 * directory (`certs/`, ignored by git) and reused while valid, so curl can verify with `--cacert`.
 */
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createCertificateAuthority, createServingCertificate } from './pki';
import { checkKeyPair } from './inspect';

export const DEV_CERTIFICATE_NAMES = ['localhost', '127.0.0.1', '::1'];

export interface DevCertificatePaths {
  caCert: string;
  cert: string;
  key: string;
  /** Whether this call generated them (false: reused). */
  generated: boolean;
}

export function ensureDevCertificates(directory: string, now: Date = new Date()): DevCertificatePaths {
  const paths = { caCert: join(directory, 'ca.crt'), cert: join(directory, 'tls.crt'), key: join(directory, 'tls.key') };
  const reusable =
    existsSync(paths.cert) &&
    existsSync(paths.key) &&
    existsSync(paths.caCert) &&
    checkKeyPair(readFileSync(paths.cert, 'utf8'), readFileSync(paths.key, 'utf8'), now).ok;
  if (reusable) return { ...paths, generated: false };

  mkdirSync(directory, { recursive: true });
  const validity = { now, validityDays: 365 };
  const ca = createCertificateAuthority('drainguard development CA', validity);
  const serving = createServingCertificate(ca, DEV_CERTIFICATE_NAMES, validity);
  // The CA key is not written: nothing else should ever be signed with a development CA.
  writeFileSync(paths.caCert, ca.cert);
  writeFileSync(paths.key, serving.key, { mode: 0o600 });
  writeFileSync(paths.cert, serving.cert);
  return { ...paths, generated: true };
}
