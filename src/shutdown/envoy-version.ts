import type { EnvoyRelease } from '../drain-contract';

/** Envoy's release, as far as the drain's calls care (which calls each release gets: drain-contract/envoy-releases.ts). */
export type EnvoyVersion = EnvoyRelease;

/** A release component as Envoy writes it: no leading zero, no sign, at most 6 digits (exact, and far beyond any release). */
const COMPONENT = '(0|[1-9][0-9]{0,5})';
const RELEASE = new RegExp(`^${COMPONENT}\\.${COMPONENT}\\.${COMPONENT}(?:-[0-9A-Za-z.-]{1,64})?$`);

/**
 * `/server_info` reports `version` as `<sha>/<x.y.z>/<Clean|Modified>/<RELEASE|DEBUG>/<TLS>`; distributions
 * sometimes append a suffix to the number (`1.31.2-dev`), which is ignored. Strict: exactly one part is a
 * release number, and each component is written as Envoy writes it; anything else is unknown, so an
 * odd version string can never switch on a feature (skip_exit, inboundonly) the Envoy may not have.
 */
export function parseEnvoyVersion(text: string): EnvoyVersion | undefined {
  let found: EnvoyVersion | undefined;
  for (const part of text.split('/')) {
    if (part.length > 100) continue;
    const match = RELEASE.exec(part);
    if (!match) continue;
    if (found) return undefined;
    found = { major: Number(match[1]), minor: Number(match[2]), patch: Number(match[3]) };
  }
  return found;
}

export function formatEnvoyVersion(version: EnvoyVersion | undefined): string {
  return version ? `${version.major}.${version.minor}.${version.patch}` : 'unknown';
}
