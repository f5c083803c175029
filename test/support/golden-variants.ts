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
  /**
   * A pod rewritten under the default configuration and admitted again under this one (and the reverse)
   * ends as a fresh admission under the second: true of a delivery mode, which replaces what the other
   * wrote. Not of drain settings: drainguard's own hook from an earlier pass outranks the configuration
   * (docs/configuration.md, "Where a drain setting comes from").
   */
  convergesWhenSwitched: boolean;
}

export const GOLDEN_VARIANTS: readonly GoldenVariant[] = [
  {
    // Drain settings set cluster-wide in drainguard's configuration: shapes where each source of a drain
    // setting shows (a sidecar with no flags at an old and a new release, one whose flags set everything,
    // Envoy Gateway's defaults, a release that cannot be told, a plain Envoy).
    name: 'with-cluster-drain',
    configPath: 'test/fixtures/configs/cluster-drain.yaml',
    convergesWhenSwitched: false,
    fixtures: [
      'bitnami-21.1.5-daemonset-image-digest',
      'bitnami-21.1.5-deployment-drain-flags',
      'contour-v1.10.0-daemonset',
      'contour-v1.30.0-render-daemonset',
      'envoy-gateway-v1.5.3-deployment-default',
      'plain-stable-envoy-chart',
    ],
  },
  {
    // installer.delivery: image-volume. Contour (the admin socket's bootstrap emptyDir, the gateway
    // provisioner), Envoy Gateway (with and without its shutdown-manager sidecar), Bitnami, and a plain
    // Envoy whose ConfigMap bootstrap sends copy mode to drainguard's own emptyDir.
    name: 'image-volume',
    configPath: 'test/fixtures/configs/image-volume.yaml',
    convergesWhenSwitched: true,
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
