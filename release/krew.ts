/**
 * The krew plugin manifest, `drainguard.yaml` (krew's "Writing Krew plugin manifests" and the checks of
 * its pkg/index/validation): apiVersion krew.googlecontainertools.github.com/v1alpha2, kind Plugin, the
 * name equal to the file name, a `v`-prefixed semantic version, and per platform a selector on `os` and
 * `arch` only, the archive's `uri` and lower-case hex `sha256`, the `files` to take from the archive and
 * the `bin` krew links as `kubectl-drainguard` on the user's PATH.
 */
import { stringify } from 'yaml';

export const KREW_PLUGIN_NAME = 'drainguard';
export const KREW_API_VERSION = 'krew.googlecontainertools.github.com/v1alpha2';

export interface KrewPlatformArchive {
  arch: string;
  uri: string;
  sha256: string;
  /** Files in the archive, at its top level; the first is the executable. */
  files: readonly string[];
}

export function krewManifest(options: { version: string; homepage: string; archives: readonly KrewPlatformArchive[] }): string {
  const manifest = {
    apiVersion: KREW_API_VERSION,
    kind: 'Plugin',
    metadata: { name: KREW_PLUGIN_NAME },
    spec: {
      version: `v${options.version}`,
      homepage: options.homepage,
      shortDescription: 'Check and preview safe Envoy shutdowns',
      description:
        'drainguard makes Envoy ingress pods (Contour, Envoy Gateway, Bitnami, plain Envoy) drain their\n' +
        'connections before they stop. This plugin checks a cluster, read-only: which Envoy pods are\n' +
        'protected and whether the drainguard webhook is healthy (`kubectl drainguard check -A`), and shows\n' +
        'offline what the webhook would change in your manifests (`kubectl drainguard inject -f FILE --diff`).\n',
      caveats:
        '`kubectl drainguard check` reads the cluster of your kube context; the webhook itself is installed\n' +
        `with Helm (${options.homepage}#install).\n`,
      platforms: options.archives.map((archive) => ({
        selector: { matchLabels: { os: 'linux', arch: archive.arch } },
        uri: archive.uri,
        sha256: archive.sha256,
        files: archive.files.map((file) => ({ from: file, to: '.' })),
        bin: archive.files[0],
      })),
    },
  };
  return stringify(manifest, { lineWidth: 0 });
}
