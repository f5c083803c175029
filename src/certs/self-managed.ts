/**
 * `--tls-mode self`: drainguard is its own certificate authority. The CA, the serving certificate and the
 * CA bundle live in one Secret that every replica converges on:
 *
 * - create-if-absent: a replica that loses the create race (409) re-reads and adopts the winner's keys;
 * - every change is a replace carrying the resourceVersion it was based on; a 409 means re-read and decide
 *   again, so concurrent renewals end with a single new CA;
 * - renewal happens `renewBeforeMs` ahead of expiry with a fresh CA; the bundle keeps every older CA
 *   until it expires, so the API server trusts certificates still served by replicas that have not yet
 *   picked up the new Secret; a Secret issued afresh because the old one is gone or unusable keeps the
 *   CAs this replica last published, for the same reason;
 * - the bundle is written to the Secret first, then to the webhook configuration, and only then does the
 *   server switch certificates.
 */
import { createCertificateAuthority, createServingCertificate, serviceDnsNames, type KeyPairPem } from './pki';
import { checkKeyPair, issuedFor, joinPemBundle, notAfter, splitPemBundle } from './inspect';
import { SECRET_KEYS, type CaBundlePublisher, type SecretStore } from './kube';
import { DEFAULT_RENEW_BEFORE_MS, DEFAULT_VALIDITY_MS } from './lifetimes';

export { SECRET_KEYS } from './kube';

export interface SelfManagedOptions {
  namespace: string;
  serviceName: string;
  store: SecretStore;
  publisher: CaBundlePublisher;
  /** How long the CA and the serving certificate are valid (default 365 days). */
  validityMs?: number;
  /** How long before either expires both are issued anew (default 30 days). */
  renewBeforeMs?: number;
  /** Injectable clock: renewal is tested by moving time, not by waiting. */
  now?: () => Date;
}

export interface ServingMaterial {
  serving: KeyPairPem;
  /** The CA certificate (PEM) that signed `serving`. */
  ca: string;
  caBundle: string;
  /** What this reconcile did: tells logs (and tests) who created or renewed. */
  action: 'created' | 'renewed' | 'adopted' | 'pruned';
}

const DAY_MS = 24 * 60 * 60 * 1000;
const MAX_ATTEMPTS = 8;

interface SecretState {
  ca: KeyPairPem;
  serving: KeyPairPem;
  bundle: string[];
}

export class SelfManagedCertificates {
  private readonly validityMs: number;
  readonly renewBeforeMs: number;
  private readonly now: () => Date;
  readonly dnsNames: string[];
  /** The CA bundle this replica last published: kept when the Secret has to be issued afresh. */
  private published: string[] = [];

  constructor(private readonly options: SelfManagedOptions) {
    this.validityMs = options.validityMs ?? DEFAULT_VALIDITY_MS;
    this.renewBeforeMs = options.renewBeforeMs ?? DEFAULT_RENEW_BEFORE_MS;
    if (this.renewBeforeMs >= this.validityMs) throw new Error('the renewal must come before the certificates expire (renewBeforeMs < validityMs)');
    this.now = options.now ?? (() => new Date());
    this.dnsNames = serviceDnsNames(options.serviceName, options.namespace);
  }

  /** Brings the Secret and the webhook's caBundle to a usable state and returns what to serve. Idempotent. */
  async reconcile(): Promise<ServingMaterial> {
    const { store, publisher } = this.options;
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const now = this.now();
      const stored = await store.read();
      const state = stored ? this.usableState(stored.data, now) : undefined;

      let material: ServingMaterial;
      if (stored && state && !this.dueForRenewal(state, now)) {
        const bundle = unexpired(state.bundle, now);
        material = { serving: state.serving, ca: state.ca.cert, caBundle: joinPemBundle(bundle), action: 'adopted' };
        if (bundle.length !== state.bundle.length) {
          const outcome = await store.replace(toSecretData({ ...state, bundle }), stored.resourceVersion);
          if (outcome === 'conflict') continue;
          material.action = 'pruned';
        }
      } else {
        const fresh = this.issue(now);
        // Keep every CA that may still be in use until it expires: the Secret's previous generations, and
        // the CAs this replica published (the Secret may be gone, deleted to force a new CA: the replicas
        // still serve certificates of the old one until they pick up the new).
        const previous = unexpired([...(stored ? splitPemBundle(stored.data[SECRET_KEYS.bundle] ?? '') : []), ...this.published], now);
        const bundle = [fresh.ca.cert];
        for (const pem of previous) if (!bundle.some((kept) => samePem(kept, pem))) bundle.push(pem);
        const data = toSecretData({ ...fresh, bundle });
        const outcome = stored ? await store.replace(data, stored.resourceVersion) : await store.create(data);
        if (outcome === 'conflict') continue;
        material = { serving: fresh.serving, ca: fresh.ca.cert, caBundle: joinPemBundle(bundle), action: stored ? 'renewed' : 'created' };
      }
      await publisher.publish(material.caBundle);
      this.published = splitPemBundle(material.caBundle);
      return material;
    }
    throw new Error(`Secret ${this.options.namespace}: still conflicting after ${MAX_ATTEMPTS} attempts`);
  }

  /** The Secret's content if it is complete, consistent and names this Service; otherwise undefined. */
  private usableState(data: Record<string, string>, now: Date): SecretState | undefined {
    const ca = { cert: data[SECRET_KEYS.ca] ?? '', key: data[SECRET_KEYS.caKey] ?? '' };
    const serving = { cert: data[SECRET_KEYS.cert] ?? '', key: data[SECRET_KEYS.key] ?? '' };
    const bundle = splitPemBundle(data[SECRET_KEYS.bundle] ?? '');
    const usable =
      checkKeyPair(ca.cert, ca.key, now).ok &&
      checkKeyPair(serving.cert, serving.key, now).ok &&
      issuedFor(serving.cert, ca.cert, this.dnsNames) &&
      bundle.some((pem) => samePem(pem, ca.cert));
    return usable ? { ca, serving, bundle } : undefined;
  }

  private dueForRenewal(state: SecretState, now: Date): boolean {
    const renewAt = (pem: string) => notAfter(pem).getTime() - this.renewBeforeMs;
    return now.getTime() >= Math.min(renewAt(state.serving.cert), renewAt(state.ca.cert));
  }

  private issue(now: Date): { ca: KeyPairPem; serving: KeyPairPem } {
    const validity = { now, validityDays: this.validityMs / DAY_MS };
    const ca = createCertificateAuthority(`drainguard-ca@${Math.floor(now.getTime() / 1000)}`, validity);
    return { ca, serving: createServingCertificate(ca, this.dnsNames, validity) };
  }
}

function toSecretData(state: SecretState): Record<string, string> {
  return {
    [SECRET_KEYS.cert]: state.serving.cert,
    [SECRET_KEYS.key]: state.serving.key,
    [SECRET_KEYS.ca]: state.ca.cert,
    [SECRET_KEYS.caKey]: state.ca.key,
    [SECRET_KEYS.bundle]: joinPemBundle(state.bundle),
  };
}

function unexpired(bundle: readonly string[], now: Date): string[] {
  return bundle.filter((pem) => {
    try {
      return notAfter(pem) > now;
    } catch {
      return false;
    }
  });
}

function samePem(a: string, b: string): boolean {
  return a.trim() === b.trim();
}
