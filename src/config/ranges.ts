/**
 * The values drainguard accepts for each drain setting, whoever gives it: the configuration file, a
 * `drainguard.io/*` annotation, or a sidecar flag carried over into the drain.
 */
import { MAX_MIN_CONNECTIONS } from '../drain-contract';

export interface Range {
  min: number;
  max: number;
}

export const DRAIN_SETTING_RANGES = {
  drainDelaySeconds: { min: 0, max: 3600 },
  minDrainSeconds: { min: 0, max: 3600 },
  pollIntervalSeconds: { min: 1, max: 60 },
  minConnections: { min: 0, max: MAX_MIN_CONNECTIONS },
} as const satisfies Record<string, Range>;
