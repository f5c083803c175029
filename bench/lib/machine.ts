import { cpus, totalmem, release, platform } from 'node:os';

/** Where a benchmark ran: results are only comparable on like machines. */
export interface MachineInfo {
  date: string;
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
}

export function describeMachine(now: Date = new Date()): MachineInfo {
  const cpuList = cpus();
  return {
    date: now.toISOString(),
    cpuModel: cpuList[0]?.model.trim() ?? 'unknown',
    cores: cpuList.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${platform()} ${release()}`,
    node: process.version,
  };
}
