/**
 * Wires a WebhookServer to its certificate source: files on disk (watched) or the self-managed Secret
 * (reconciled periodically). `drainguard serve` and the tests both start the webhook through here.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/types';
import { CertificateFileWatcher, readCertificateFiles } from '../certs/watch-files';
import type { SelfManagedCertificates } from '../certs/self-managed';
import { notAfter } from '../certs/inspect';
import { kubernetesCaBundlePublisher, kubernetesSecretStore, type KubeConnectionOptions } from '../certs/kube';
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
      validityDays?: number;
      renewBeforeDays?: number;
      /** How often to re-read the Secret (adopt another replica's renewal) and renew when due. */
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
  const certificates = new SelfManagedCertificates({
    namespace: tls.namespace,
    serviceName: tls.serviceName,
    store: await kubernetesSecretStore(tls.kube, { namespace: tls.namespace, name: tls.secretName }),
    publisher: await kubernetesCaBundlePublisher(tls.kube, tls.webhookConfigName),
    ...(tls.validityDays !== undefined ? { validityDays: tls.validityDays } : {}),
    ...(tls.renewBeforeDays !== undefined ? { renewBeforeDays: tls.renewBeforeDays } : {}),
    ...(tls.now ? { now: tls.now } : {}),
  });
  const server = await WebhookServer.start({ ...base, ...(tls.now ? { now: tls.now } : {}) });
  const loop = new ReconcileLoop(certificates, server, logger, tls.checkIntervalMs ?? 60_000);
  const certificateLoaded = loop.start();
  return { server, certificates, certificateLoaded, ...stopSourceFirst(() => loop.stop(), server) };
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

/** Reconciles at start (retrying with backoff until it works), then every interval. */
class ReconcileLoop {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private serving = '';

  constructor(
    private readonly certificates: SelfManagedCertificates,
    private readonly server: WebhookServer,
    private readonly logger: Logger,
    private readonly intervalMs: number,
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
      if (material.serving.cert !== this.serving) {
        const refused = this.server.setCertificate(material.serving);
        if (refused) throw new Error(`certificate from the Secret refused: ${refused}`);
        this.serving = material.serving.cert;
        this.server.metrics.setCaCertificateExpiry(notAfter(material.ca));
      }
      if (material.action !== 'adopted') this.logger.info({ action: material.action }, 'self-managed certificate updated');
      return true;
    } catch (error) {
      this.logger.error({ err: error }, 'self-managed certificate reconcile failed; will retry');
      return false;
    }
  }
}
