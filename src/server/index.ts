export { startWebhook } from './start';
export type { StartOptions, TlsSource, RunningWebhook } from './start';
export { WebhookServer, TLS_CIPHERS } from './webhook-server';
export type { WebhookServerOptions, CertificatePair } from './webhook-server';
export { createWebhookApp } from './app';
export { createAdmissionHandler, isAdmissionRequest, RETRY_AFTER_SECONDS } from './admission-handler';
export { admissionLimits, memoryLimitMiB, workerHeapMb, DEFAULT_LIMITS } from './sizing';
export type { AdmissionLimits } from './sizing';
export { WebhookMetrics, LATENCY_BUCKETS_SECONDS } from './metrics';
