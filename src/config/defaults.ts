import type { Config, DrainConfig } from './types';
import { DRAIN_DEFAULTS, PROGRAM_NAME } from '../drain-contract';
import { VERSION } from '../version';

/** Where a release publishes the drain program's image (`npm run release` builds it: docs/development.md, "Release"). */
export const DRAIN_IMAGE_REPOSITORY = 'ghcr.io/drainguard/envoy-shutdown';
/** The executable's path in that image: its only file, at the root, so an image volume shows it at `<mountPath>/envoy-shutdown`. */
export const DRAIN_IMAGE_PROGRAM_PATH = `/${PROGRAM_NAME}`;

/**
 * Every default drainguard uses, in one place. docs/configuration.md's table and the chart's
 * values.yaml mirror this object and DRAIN_SETTING_DEFAULTS below; tests keep them in step
 * (test/unit/docs/configuration-table.test.ts, test/integration/chart/values.test.ts).
 */
export function defaultConfig(): Config {
  return {
    envoyContainerName: 'envoy',
    envoyImageRepositories: ['envoyproxy/envoy', 'envoyproxy/envoy-distroless'],
    shutdownManagerContainerName: 'shutdown-manager',
    sidecarMode: 'remove',
    installer: {
      delivery: 'copy',
      containerName: 'drainguard-install',
      image: `${DRAIN_IMAGE_REPOSITORY}:${VERSION}`,
      imagePullPolicy: 'IfNotPresent',
      programPath: DRAIN_IMAGE_PROGRAM_PATH,
      installDirectory: 'drainguard',
      volumeName: 'drainguard',
      mountPath: '/drainguard',
    },
    requests: {
      envoy: { cpu: '100m', memory: '128Mi' },
      installer: { cpu: '10m', memory: '32Mi' },
      sidecar: { cpu: '10m', memory: '32Mi' },
    },
    // envoy-shutdown's peak RSS is ~1.5 MiB against an Envoy with 10,000 listeners and stays under
    // 2 MiB for a 100 MB stats answer (npm run bench, test/e2e/shutdown/hostile-admin.test.ts); its
    // JavaScript heap is capped at 8 MiB (src/shutdown/runtime/host.c), so it cannot pass ~10 MiB. 16Mi keeps a margin.
    shutdownProgramMemory: '16Mi',
    liveness: {
      periodSeconds: 10,
      timeoutSeconds: 5,
      failureThreshold: 6,
      startupFailureThreshold: 30,
      terminationGracePeriodSeconds: 10,
    },
    // Nothing set: the drain settings default below, after the replaced component's (DrainConfig).
    drain: {},
    gracePeriodFloor: {
      enabled: false,
      minimumSeconds: 60,
    },
  };
}

/**
 * drainguard's own drain defaults: what a drain setting is when neither the pod, nor the replaced
 * component at its release, nor the operator's configuration gives it.
 */
export const DRAIN_SETTING_DEFAULTS: Readonly<Required<DrainConfig>> = {
  deadlineMarginSeconds: 10,
  // The drain program's own defaults, so a hook written with defaults means what the program assumes.
  drainDelaySeconds: DRAIN_DEFAULTS.drainDelaySeconds,
  minDrainSeconds: DRAIN_DEFAULTS.minDrainSeconds,
  minConnections: DRAIN_DEFAULTS.minConnections,
  pollIntervalSeconds: DRAIN_DEFAULTS.pollIntervalSeconds,
};
