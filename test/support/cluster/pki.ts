/**
 * The test cluster's certificates, made by Debian's `openssl` as a cluster's installer makes them: one CA
 * that signs the serving certificates (etcd, kube-apiserver) and the client certificates by which each
 * component and user authenticates (kube-apiserver's `--client-ca-file`: the subject's CN is the user,
 * each O a group), and the service-account signing key. EC P-256 keys: fast to make, accepted by every
 * component.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CertificateFiles {
  cert: string;
  key: string;
}

export interface CertificateAuthority extends CertificateFiles {
  /** The CA certificate's PEM, for kubeconfigs and caBundles. */
  pem: string;
}

export interface LeafRequest {
  /** File name stem in the directory: `<name>.crt`, `<name>.key`. */
  name: string;
  /** The user name (client certificates) or a descriptive name (serving ones). */
  commonName: string;
  /** Groups of a client certificate's user. */
  organizations?: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
  usage: 'server' | 'client' | 'server-and-client';
}

function openssl(args: string[], input?: string): string {
  return execFileSync('openssl', args, { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A distinguished name for `-subj`: `/`, `+` and `=` in values escaped as openssl reads them. */
function subject(commonName: string, organizations: readonly string[] = []): string {
  const escape = (value: string) => value.replace(/[\\/+=]/g, (c) => `\\${c}`);
  return organizations.map((o) => `/O=${escape(o)}`).join('') + `/CN=${escape(commonName)}`;
}

export function createCertificateAuthority(dir: string, commonName: string): CertificateAuthority {
  const files = { cert: join(dir, 'ca.crt'), key: join(dir, 'ca.key') };
  openssl([
    'req', '-x509', ...EC_KEY, '-keyout', files.key, '-out', files.cert, '-days', '3650', '-subj', subject(commonName),
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
  ]);
  return { ...files, pem: readFileSync(files.cert, 'utf8') };
}

export function issueCertificate(ca: CertificateAuthority, dir: string, request: LeafRequest): CertificateFiles {
  const files = { cert: join(dir, `${request.name}.crt`), key: join(dir, `${request.name}.key`) };
  const extendedUsage = { server: 'serverAuth', client: 'clientAuth', 'server-and-client': 'serverAuth,clientAuth' }[request.usage];
  const altNames = [...(request.dnsNames ?? []).map((n) => `DNS:${n}`), ...(request.ipAddresses ?? []).map((ip) => `IP:${ip}`)];
  const csr = openssl([
    'req', '-new', ...EC_KEY, '-keyout', files.key, '-subj', subject(request.commonName, request.organizations),
    '-addext', 'basicConstraints=critical,CA:FALSE', '-addext', 'keyUsage=critical,digitalSignature,keyEncipherment',
    '-addext', `extendedKeyUsage=${extendedUsage}`,
    ...(altNames.length > 0 ? ['-addext', `subjectAltName=${altNames.join(',')}`] : []),
  ]);
  // A random serial rather than -CAcreateserial's file beside the CA: suites issue certificates of the
  // shared cluster's CA at the same time.
  const serial = `0x${randomBytes(16).toString('hex')}`;
  openssl(['x509', '-req', '-CA', ca.cert, '-CAkey', ca.key, '-set_serial', serial, '-days', '365', '-copy_extensions', 'copyall', '-out', files.cert], csr);
  return files;
}

/** The key pair service-account tokens are signed with (kube-apiserver verifies, kube-controller-manager signs too). */
export function createServiceAccountKey(dir: string): { privateKey: string; publicKey: string } {
  const privateKey = join(dir, 'sa.key');
  const publicKey = join(dir, 'sa.pub');
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', privateKey]);
  openssl(['pkey', '-in', privateKey, '-pubout', '-out', publicKey]);
  return { privateKey, publicKey };
}
