export { startWebhook } from './start';
export type { StartOptions, TlsSource, RunningWebhook } from './start';
export { WebhookServer } from './webhook-server';
export type { WebhookServerOptions, CertificatePair } from './webhook-server';
export { createWebhookApp, DEFAULT_BODY_LIMIT_BYTES } from './app';
export { WebhookMetrics, LATENCY_BUCKETS_SECONDS } from './metrics';
