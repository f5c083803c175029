/**
 * Certificate authority and serving certificates. node-forge builds the X.509 structures (subject,
 * SANs, extensions); the RSA work is Node's native crypto: key generation (~0.1 s for RSA-2048) and the
 * signature, which forge's pure-JavaScript RSA makes ten times slower. Time is a parameter: renewal is
 * tested by moving the clock, not by waiting.
 */
import { constants, createPrivateKey, generateKeyPairSync, privateEncrypt, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import forge from 'node-forge';

export interface KeyPairPem {
  /** PEM certificate. */
  cert: string;
  /** PEM private key (PKCS#8). */
  key: string;
}

export interface ValidityOptions {
  now: Date;
  validityDays: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;
/** Backdating tolerates clocks that run behind ours (API server, other replicas, a laptop). */
const BACKDATE_MS = 60 * 60 * 1000;

function newSerial(): string {
  // Positive (leading bit clear), 16 bytes: unique without coordination between replicas.
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f;
  return bytes.toString('hex');
}

/** DER prefix of a PKCS#1 v1.5 DigestInfo for SHA-256; the 32-byte digest follows. */
const SHA256_DIGEST_INFO = Buffer.from('3031300d060960864801650304020105000420', 'hex');

/** A signer forge's `certificate.sign` accepts, doing RSASSA-PKCS1-v1_5 natively. */
function nativeSigner(keyPem: string): forge.pki.rsa.PrivateKey {
  const key = createPrivateKey(keyPem);
  const sign = (md: forge.md.MessageDigest) => {
    const digestInfo = Buffer.concat([SHA256_DIGEST_INFO, Buffer.from(md.digest().getBytes(), 'binary')]);
    return privateEncrypt({ key, padding: constants.RSA_PKCS1_PADDING }, digestInfo).toString('binary');
  };
  return { sign } as unknown as forge.pki.rsa.PrivateKey;
}

function baseCertificate(commonName: string, { now, validityDays }: ValidityOptions) {
  const keys = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicExponent: 0x10001,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(keys.publicKey);
  cert.serialNumber = newSerial();
  cert.validity.notBefore = new Date(now.getTime() - BACKDATE_MS);
  cert.validity.notAfter = new Date(now.getTime() + validityDays * DAY_MS);
  // UTF8String, as openssl and Go write names: node-forge's default PrintableString cannot hold '@' (self
  // mode's CA is `drainguard-ca@<time>`), and Go clients such as kube-apiserver refuse to parse one that does.
  // (@types/node-forge calls the field a Class; forge reads it as the value's ASN.1 type.)
  cert.setSubject([{ name: 'commonName', value: commonName, valueTagClass: forge.asn1.Type.UTF8 as unknown as forge.asn1.Class }]);
  return { cert, keys };
}

/**
 * PEM with LF line ends, as Node writes keys and as a bundle read back is joined (inspect.ts): forge
 * writes CRLF, and a self-mode replica that adopted the Secret published the same CA with other bytes,
 * patching the webhook configuration on every start.
 */
function certificatePem(cert: forge.pki.Certificate): string {
  return forge.pki.certificateToPem(cert).replace(/\r\n/g, '\n');
}

export function createCertificateAuthority(commonName: string, validity: ValidityOptions): KeyPairPem {
  const { cert, keys } = baseCertificate(commonName, validity);
  cert.setIssuer(cert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true, pathLenConstraint: 0 },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(nativeSigner(keys.privateKey), forge.md.sha256.create());
  return { cert: certificatePem(cert), key: keys.privateKey };
}

/** A server certificate for `names` (DNS names or IP addresses), signed by `ca`. The first name is the CN. */
export function createServingCertificate(ca: KeyPairPem, names: string[], validity: ValidityOptions): KeyPairPem {
  if (names.length === 0) throw new Error('a serving certificate needs at least one name');
  const caCert = forge.pki.certificateFromPem(ca.cert);
  const { cert, keys } = baseCertificate(names[0]!, validity);
  // Never outlive the issuer: a chain with an expired CA fails verification regardless of the leaf.
  if (cert.validity.notAfter > caCert.validity.notAfter) cert.validity.notAfter = caCert.validity.notAfter;
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: names.map((name) => (isIP(name) ? { type: 7, ip: name } : { type: 2, value: name })),
    },
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(nativeSigner(ca.key), forge.md.sha256.create());
  return { cert: certificatePem(cert), key: keys.privateKey };
}

/** The DNS names kube-apiserver may use to reach a Service (it uses `service.ns.svc`). */
export function serviceDnsNames(service: string, namespace: string): string[] {
  return [service, `${service}.${namespace}`, `${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`];
}
