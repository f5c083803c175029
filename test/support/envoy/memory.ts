/** The memory budget of the drain program in Envoy's cgroup, as drainguard's defaults state it. */
import { defaultConfig } from '../../../src/config/defaults';

const UNITS: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 };

/** `shutdownProgramMemory` (e.g. `16Mi`) in bytes. */
export function shutdownProgramMemoryBytes(): number {
  const match = /^(\d+)(Ki|Mi|Gi)$/.exec(defaultConfig().shutdownProgramMemory);
  if (!match) throw new Error(`shutdownProgramMemory ${defaultConfig().shutdownProgramMemory}: expected <n>Ki|Mi|Gi`);
  return Number(match[1]) * (UNITS[match[2] as string] as number);
}
