import type { Config } from './types';
import { VERSION } from '../version';

/**
 * Every default drainguard uses, in one place. README "Configuration" and the chart's values.yaml
 * mirror this object; a test keeps the three in step.
 */
export function defaultConfig(): Config {
  return {
    envoyContainerName: 'envoy',
    envoyImageRepositories: ['envoyproxy/envoy', 'envoyproxy/envoy-distroless'],
    shutdownManagerContainerName: 'shutdown-manager',
    sidecarMode: 'remove',
    installer: {
      containerName: 'drainguard-install',
      image: `ghcr.io/drainguard/drainguard:${VERSION}`,
      imagePullPolicy: 'IfNotPresent',
      programPath: '/opt/drainguard/envoy-shutdown/envoy-shutdown',
      installDirectory: 'drainguard',
      fallbackVolumeName: 'drainguard',
      fallbackMountPath: '/drainguard',
    },
    requests: {
      envoy: { cpu: '100m', memory: '128Mi' },
      installer: { cpu: '10m', memory: '32Mi' },
      sidecar: { cpu: '10m', memory: '32Mi' },
    },
    shutdownProgramMemory: '64Mi',
    liveness: {
      periodSeconds: 10,
      timeoutSeconds: 5,
      marginSeconds: 30,
      terminationGracePeriodSeconds: 10,
    },
    drain: {
      deadlineMarginSeconds: 10,
      drainDelaySeconds: 0,
      minDrainSeconds: 5,
      minConnections: 0,
      pollIntervalSeconds: 1,
    },
    gracePeriodFloor: {
      enabled: false,
      minimumSeconds: 60,
    },
  };
}
