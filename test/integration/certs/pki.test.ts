/** The certificates drainguard makes, checked by an independent implementation (the openssl CLI). */
import { execFileSync } from 'node:child_process';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCertificateAuthority, createServingCertificate, serviceDnsNames } from '../../../src/certs/pki';
import { ensureDevCertificates } from '../../../src/certs/dev';
import { temporaryDirectory } from '../server/webhook-test-kit';

const directory = temporaryDirectory();
afterAll(() => directory.remove());
const openssl = (...args: string[]) => execFileSync('openssl', args, { encoding: 'utf8' });

test('a serving certificate for a Service verifies against its CA and names the Service DNS names', () => {
  const now = new Date();
  const ca = createCertificateAuthority('drainguard-ca', { now, validityDays: 365 });
  const serving = createServingCertificate(ca, serviceDnsNames('drainguard', 'drainguard-system'), { now, validityDays: 400 });
  const caFile = join(directory.path, 'ca.pem');
  const leafFile = join(directory.path, 'leaf.pem');
  writeFileSync(caFile, ca.cert);
  writeFileSync(leafFile, serving.cert);

  expect(openssl('verify', '-purpose', 'sslserver', '-CAfile', caFile, leafFile)).toContain(': OK');
  const text = openssl('x509', '-in', leafFile, '-noout', '-text');
  expect(text).toContain('DNS:drainguard, DNS:drainguard.drainguard-system, DNS:drainguard.drainguard-system.svc, DNS:drainguard.drainguard-system.svc.cluster.local');
  expect(text).toContain('Public-Key: (2048 bit)');
  expect(text).toMatch(/CA:FALSE/);
  expect(openssl('x509', '-in', caFile, '-noout', '-text')).toMatch(/CA:TRUE/);
  // Never outlives its issuer.
  expect(new Date(new X509Certificate(serving.cert).validTo).getTime()).toBeLessThanOrEqual(new Date(new X509Certificate(ca.cert).validTo).getTime());
  expect(new X509Certificate(serving.cert).checkPrivateKey(createPrivateKey(serving.key))).toBe(true);
});

test('names are encoded so that Go clients (kube-apiserver, Prometheus) parse the certificates', () => {
  // Self mode names its CA `drainguard-ca@<unix time>`. Go's x509 parser refuses a PrintableString
  // holding a character outside A-Z a-z 0-9 space ' ( ) + , - . / : = ? (such as '@'): the API server
  // could not read the caBundle nor the serving certificate whose issuer is that CA.
  const now = new Date();
  const ca = createCertificateAuthority('drainguard-ca@1700000000', { now, validityDays: 365 });
  const serving = createServingCertificate(ca, serviceDnsNames('drainguard', 'drainguard-system'), { now, validityDays: 30 });
  for (const [name, pem] of [['ca', ca.cert], ['serving', serving.cert]] as const) {
    const file = join(directory.path, `${name}-names.pem`);
    writeFileSync(file, pem);
    const strings = [...openssl('asn1parse', '-in', file).matchAll(/(PRINTABLESTRING|UTF8STRING|IA5STRING|T61STRING)\s*:(.*)$/gm)];
    expect(strings.map((m) => m[2])).toContain('drainguard-ca@1700000000');
    const unparsable = strings.filter(([, type, value]) => type === 'PRINTABLESTRING' && !/^[A-Za-z0-9 '()+,\-./:=?]*$/.test(value!));
    expect(`${name}: ${unparsable.map((m) => m[0]).join('; ')}`).toBe(`${name}: `);
  }
});

test('development certificates are generated once, reused while valid, and replaced when expired', () => {
  const dir = join(directory.path, 'dev');
  const first = ensureDevCertificates(dir);
  expect(first.generated).toBe(true);
  const cert = readFileSync(first.cert, 'utf8');
  expect(ensureDevCertificates(dir).generated).toBe(false);
  expect(readFileSync(first.cert, 'utf8')).toBe(cert);
  expect(openssl('verify', '-CAfile', first.caCert, first.cert)).toContain(': OK');
  expect(openssl('x509', '-in', first.cert, '-noout', '-ext', 'subjectAltName')).toMatch(/DNS:localhost, IP Address:127\.0\.0\.1, IP Address:0:0:0:0:0:0:0:1/);

  const muchLater = new Date(Date.now() + 400 * 24 * 60 * 60 * 1000);
  expect(ensureDevCertificates(dir, muchLater).generated).toBe(true);
  expect(readFileSync(first.cert, 'utf8')).not.toBe(cert);
});
