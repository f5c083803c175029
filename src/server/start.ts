/**
 * Wires a WebhookServer to its certificate source: files on disk (watched) or the self-managed Secret
 * (reconciled periodically). `drainguard serve` and the tests both start the webhook through here.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/types';
import { CertificateFileWatcher, readCertificateFiles } from '../certs/watch-files';
import type { SelfManagedCertificates, ServingMaterial } from '../certs/self-managed';
import { notAfter, splitPemBundle } from '../certs/inspect';
import { certificateApiClient, kubernetesCaBundlePublisher, kubernetesSecretStore, type KubeConnectionOptions } from '../certs/kube';
import { WebhookServer, type WebhookServerOptions } from './webhook-server';

export type TlsSource =
  | { mode: 'files'; certPath: string; keyPath: string; debounceMs?: number }
  | {
      mode: 'self';
      namespace: string;
      secretName: string;
      webhookConfigName: string;
      serviceName: string;
      kube: KubeConnectionOptions;
      /** How long the CA and serving certificate are valid (default 365 days). */
      validityMs?: number;
      /** How long before they expire they are renewed (default 30 days). */
      renewBeforeMs?: number;
      /**
       * How often to re-read the Secret (adopt another replica's renewal) and renew when due: a quarter
       * of renewBeforeMs, at most a minute (a renewal window is never missed).
       */
      checkIntervalMs?: number;
      now?: () => Date;
    };

export interface StartOptions {
  host: string;
  port: number;
  config: Config;
  logger: Logger;
  shutdownDelayMs: number;
  tls: TlsSource;
  /** Server limits and timeouts (defaults in ./sizing and ./webhook-server). */
  server?: Pick<WebhookServerOptions, 'limits' | 'handshakeTimeoutMs' | 'decisionTimeoutMs' | 'coreModule'>;
}

export interface RunningWebhook {
  server: WebhookServer;
  /** Self mode: the reconciler (tests drive renewal through it). */
  certificates?: SelfManagedCertificates;
  /** Self mode: one check of the Secret now, as the periodic one does (tests drive the loop with it). */
  checkCertificates?: () => Promise<void>;
  /** Resolves once the first certificate is being served. */
  certificateLoaded: Promise<void>;
  /** Graceful: the full shutdown sequence. */
  shutdown(): Promise<void>;
  /** Immediate (tests, failed starts). */
  close(): Promise<void>;
}

export async function startWebhook(options: StartOptions): Promise<RunningWebhook> {
  const { logger, tls } = options;
  const base = {
    host: options.host,
    port: options.port,
    config: options.config,
    logger,
    shutdownDelayMs: options.shutdownDelayMs,
    ...options.server,
  };

  if (tls.mode === 'files') {
    // Unreadable files at start are a deployment error: fail loudly rather than run never-ready.
    const initial = readCertificateFiles(tls);
    const server = await WebhookServer.start({ ...base, certificate: initial });
    const watcher = new CertificateFileWatcher(
      {
        ...tls,
        onChange: (pair) => server.setCertificate(pair),
        onError: (message) => logger.error({ certPath: tls.certPath, keyPath: tls.keyPath }, message),
      },
      initial,
    );
    watcher.start();
    return { server, certificateLoaded: Promise.resolve(), ...stopSourceFirst(() => watcher.stop(), server) };
  }

  // Only self mode makes certificates: node-forge, which that takes, is not loaded otherwise.
  const { SelfManagedCertificates } = require('../certs/self-managed') as typeof import('../certs/self-managed');
  // One client for the Secret and the caBundle: the kubeconfig read once, one pool of connections.
  const kube = { client: await certificateApiClient(tls.kube) };
  const certificates = new SelfManagedCertificates({
    namespace: tls.namespace,
    serviceName: tls.serviceName,
    store: await kubernetesSecretStore(kube, { namespace: tls.namespace, name: tls.secretName }),
    publisher: await kubernetesCaBundlePublisher(kube, tls.webhookConfigName),
    ...(tls.validityMs !== undefined ? { validityMs: tls.validityMs } : {}),
    ...(tls.renewBeforeMs !== undefined ? { renewBeforeMs: tls.renewBeforeMs } : {}),
    ...(tls.now ? { now: tls.now } : {}),
  });
  const server = await WebhookServer.start({ ...base, ...(tls.now ? { now: tls.now } : {}) });
  const interval = tls.checkIntervalMs ?? Math.min(MAX_CHECK_INTERVAL_MS, certificates.renewBeforeMs / 4);
  const loop = new ReconcileLoop(certificates, server, logger, interval, tls.now ?? (() => new Date()));
  const certificateLoaded = loop.start();
  const checkCertificates = async () => {
    await loop.check();
  };
  return { server, certificates, checkCertificates, certificateLoaded, ...stopSourceFirst(() => loop.stop(), server) };
}

/**
 * Both ways of stopping: the certificate source (watcher or reconcile loop) stops first, so it never
 * hands a certificate to a server that is going away.
 */
function stopSourceFirst(stopSource: () => void, server: WebhookServer): Pick<RunningWebhook, 'shutdown' | 'close'> {
  return {
    shutdown: async () => {
      stopSource();
      await server.shutdown();
    },
    close: async () => {
      stopSource();
      await server.close();
    },
  };
}

const MAX_CHECK_INTERVAL_MS = 60_000;

/**
 * Reconciles at start (retrying with backoff until it works), then every interval.
 *
 * A new certificate (this replica's renewal, or another's it adopts) is served from the check after the
 * one that saw it published, not at once: kube-apiserver learns of a new caBundle through its watch of
 * the webhook configuration, a moment after the patch is accepted, and until then it verifies the
 * webhook with the bundle it had, which holds only the old CA. The certificate served meanwhile is
 * still valid and its CA still in the bundle. A replica serving nothing yet, or a certificate the new
 * bundle no longer trusts or that expired, switches at once.
 */
class ReconcileLoop {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private serving: ServingMaterial | undefined;
  /** A certificate published at the last check, served from this one. */
  private pending = '';

  constructor(
    private readonly certificates: SelfManagedCertificates,
    private readonly server: WebhookServer,
    private readonly logger: Logger,
    private readonly intervalMs: number,
    private readonly now: () => Date,
  ) {}

  start(): Promise<void> {
    return new Promise((resolve) => {
      const attempt = async (failures: number): Promise<void> => {
        if (this.stopped) return;
        const ok = await this.reconcileOnce();
        if (ok) {
          resolve();
          this.schedule(this.intervalMs, () => this.periodic());
        } else {
          this.schedule(Math.min(1000 * 2 ** failures, 30_000), () => attempt(failures + 1));
        }
      };
      void attempt(0);
    });
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** One check now (a test's; the periodic ones go on). */
  async check(): Promise<void> {
    if (!(await this.reconcileOnce())) throw new Error('the certificate check failed (see the log)');
  }

  private async periodic(): Promise<void> {
    await this.reconcileOnce();
    this.schedule(this.intervalMs, () => this.periodic());
  }

  private schedule(delayMs: number, run: () => Promise<void>): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void run(), delayMs);
    this.timer.unref();
  }

  private async reconcileOnce(): Promise<boolean> {
    try {
      const material = await this.certificates.reconcile();
      if (material.action !== 'adopted') this.logger.info({ action: material.action }, 'self-managed certificate updated');
      if (material.serving.cert !== this.serving?.serving.cert) {
        if (this.pending === material.serving.cert || !this.stillTrusted(material.caBundle)) this.serve(material);
        else {
          this.pending = material.serving.cert;
          this.logger.info('new self-managed certificate published; serving it from the next check');
        }
      }
      return true;
    } catch (error) {
      this.logger.error({ err: error }, 'self-managed certificate reconcile failed; will retry');
      return false;
    }
  }

  /** Whether the certificate being served is valid and its CA in `caBundle`: then it may stay a while. */
  private stillTrusted(caBundle: string): boolean {
    const current = this.serving;
    if (current === undefined) return false;
    return notAfter(current.serving.cert) > this.now() && splitPemBundle(caBundle).some((pem) => pem.trim() === current.ca.trim());
  }

  private serve(material: ServingMaterial): void {
    const refused = this.server.setCertificate(material.serving);
    if (refused) throw new Error(`certificate from the Secret refused: ${refused}`);
    const first = this.serving === undefined;
    this.serving = material;
    this.pending = '';
    this.server.metrics.setCaCertificateExpiry(notAfter(material.ca));
    if (!first) this.logger.info({ notAfter: notAfter(material.serving.cert).toISOString() }, 'serving the new self-managed certificate');
  }
}
