/** drainguard's HTTPS server as the integration tests start it, in this process. */
import type { DevCertificatePaths } from '../../../src/certs/dev';
import { readCertificateFiles } from '../../../src/certs/watch-files';
import { defaultConfig } from '../../../src/config';
import { WebhookServer, type WebhookServerOptions } from '../../../src/server/webhook-server';
import { silentLogger } from './webhook-test-kit';

/**
 * On 127.0.0.1 and a free port, with the development certificate in `certificates`, the default
 * configuration, a silent logger and no shutdown delay; `options` override any of them.
 */
export function startTestServer(certificates: DevCertificatePaths, options: Partial<WebhookServerOptions> = {}): Promise<WebhookServer> {
  return WebhookServer.start({
    host: '127.0.0.1',
    port: 0,
    config: defaultConfig(),
    logger: silentLogger(),
    certificate: readCertificateFiles({ certPath: certificates.cert, keyPath: certificates.key }),
    shutdownDelayMs: 0,
    ...options,
  });
}
