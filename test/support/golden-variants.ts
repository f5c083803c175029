/**
 * The configurations the golden corpus also runs under (test/golden/golden.test.ts), each on some
 * fixtures of test/fixtures/upstream, with goldens NAME.VARIANT.*. Here, not in the golden suite, so
 * that other suites (a real API server's) can admit the same pods under the same configurations.
 */
import { join } from 'node:path';
import { loadConfigFile, type Config } from '../../src/config';
import { REPO_ROOT } from './repo';

/** A configuration the corpus also runs under, on the fixtures named. */
export interface GoldenVariant {
  name: string;
  /** The configuration file, relative to the repository (the CLI's working directory). */
  configPath: string;
  fixtures: readonly string[];
}

export const GOLDEN_VARIANTS: readonly GoldenVariant[] = [
  {
    // installer.delivery: image-volume. Contour (the admin socket's bootstrap emptyDir, the gateway
    // provisioner), Envoy Gateway (with and without its shutdown-manager sidecar), Bitnami, and a plain
    // Envoy whose ConfigMap bootstrap sends copy mode to drainguard's own emptyDir.
    name: 'image-volume',
    configPath: 'test/fixtures/config/image-volume.yaml',
    fixtures: [
      'bitnami-21.1.5-daemonset-default',
      'contour-provisioner-main-daemonset',
      'contour-v1.30.0-render-daemonset',
      'envoy-gateway-main-deployment-shutdown-manager',
      'envoy-gateway-v1.5.3-deployment-default',
      'plain-stable-envoy-chart',
    ],
  },
];

/** The variant's configuration, read from its file as `drainguard serve --config` and `inject --config` read it. */
export function variantConfig(variant: GoldenVariant): Config {
  return loadConfigFile(join(REPO_ROOT, variant.configPath));
}
