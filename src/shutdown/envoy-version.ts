/** Envoy's release, as far as the drain's feature gates care. */
export interface EnvoyVersion {
  major: number;
  minor: number;
  patch: number;
}

/**
 * `/server_info` reports `version` as `<sha>/<x.y.z>/<Clean|Modified>/<RELEASE|DEBUG>/<TLS>`; distributions
 * sometimes append a suffix to the number (`1.31.2-dev`), which is ignored.
 */
export function parseEnvoyVersion(text: string): EnvoyVersion | undefined {
  for (const part of text.split('/')) {
    const match = /^(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$/.exec(part);
    if (match) return { major: Number(match[1]), minor: Number(match[2]), patch: Number(match[3]) };
  }
  return undefined;
}

export function isAtLeast(version: EnvoyVersion | undefined, major: number, minor: number): boolean {
  if (!version) return false;
  return version.major > major || (version.major === major && version.minor >= minor);
}

export function formatEnvoyVersion(version: EnvoyVersion | undefined): string {
  return version ? `${version.major}.${version.minor}.${version.patch}` : 'unknown';
}

/** `drain_listeners?skip_exit` keeps listeners after the drain timer (Envoy ≥ 1.28). */
export const supportsSkipExit = (v: EnvoyVersion | undefined): boolean => isAtLeast(v, 1, 28);
/** `drain_listeners?graceful&inboundonly` drains only inbound listeners gracefully (Envoy ≥ 1.34). */
export const supportsDirectionalGracefulDrain = (v: EnvoyVersion | undefined): boolean => isAtLeast(v, 1, 34);
