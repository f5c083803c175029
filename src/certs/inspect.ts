/** Reading certificates back, with Node's own X.509 parser (independent of the generator). */
import { X509Certificate, createPrivateKey } from 'node:crypto';

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** Each certificate of a PEM bundle, normalised to end with a newline. */
export function splitPemBundle(bundle: string): string[] {
  return (bundle.match(PEM_CERTIFICATE) ?? []).map((pem) => `${pem}\n`);
}

export function joinPemBundle(certificates: readonly string[]): string {
  return certificates.map((pem) => (pem.endsWith('\n') ? pem : `${pem}\n`)).join('');
}

export function notAfter(certPem: string): Date {
  return new Date(new X509Certificate(certPem).validTo);
}

export interface PairProblem {
  ok: false;
  reason: string;
}

/**
 * Whether `certPem` (first certificate of a chain) and `keyPem` belong together and are usable now.
 * Returns the leaf's expiry on success, a reason on failure; never throws.
 */
export function checkKeyPair(certPem: string, keyPem: string, now: Date): { ok: true; notAfter: Date } | PairProblem {
  try {
    const [leafPem] = splitPemBundle(certPem);
    if (!leafPem) return { ok: false, reason: 'no PEM certificate found' };
    const leaf = new X509Certificate(leafPem);
    const key = createPrivateKey(keyPem);
    if (!leaf.checkPrivateKey(key)) return { ok: false, reason: 'private key does not match the certificate' };
    const expiry = new Date(leaf.validTo);
    if (expiry <= now) return { ok: false, reason: `certificate expired at ${expiry.toISOString()}` };
    if (new Date(leaf.validFrom) > now) return { ok: false, reason: `certificate not valid before ${leaf.validFrom}` };
    return { ok: true, notAfter: expiry };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
}

/** Whether `ca` signed `certPem` and the certificate names every one of `dnsNames`. */
export function issuedFor(certPem: string, caPem: string, dnsNames: readonly string[]): boolean {
  try {
    const leaf = new X509Certificate(certPem);
    const ca = new X509Certificate(caPem);
    return leaf.checkIssued(ca) && leaf.verify(ca.publicKey) && dnsNames.every((name) => leaf.checkHost(name) === name);
  } catch {
    return false;
  }
}
