/**
 * The server's memory while a benchmark runs: resident and anonymous memory from /proc, sampled, with
 * the kernel's high-water mark (VmHWM) making the resident peak exact between samples.
 */
import { readFileSync } from 'node:fs';

export interface MemoryFigures {
  /** Peak resident set (VmHWM), MiB. */
  peakRssMiB: number;
  /** Largest anonymous resident memory seen in a sample (RssAnon: heap, buffers; no mapped files), MiB. */
  peakAnonMiB: number;
  samples: number;
}

function statusField(status: string, name: string): number {
  return Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) / 1024;
}

export function watchMemory(pid: number, intervalMs = 20): { stop: () => MemoryFigures } {
  let peakRssMiB = 0;
  let peakAnonMiB = 0;
  let samples = 0;
  const sample = () => {
    let status: string;
    try {
      status = readFileSync(`/proc/${pid}/status`, 'utf8');
    } catch {
      return;
    }
    const hwm = statusField(status, 'VmHWM');
    const anon = statusField(status, 'RssAnon');
    if (Number.isNaN(hwm)) return;
    samples += 1;
    peakRssMiB = Math.max(peakRssMiB, hwm);
    peakAnonMiB = Math.max(peakAnonMiB, anon);
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      const round = (value: number) => Math.round(value * 10) / 10;
      return { peakRssMiB: round(peakRssMiB), peakAnonMiB: round(peakAnonMiB), samples };
    },
  };
}
