/**
 * bench/results.json: one file, one section per command (`bench`, `load`, `fuzz`), so each command
 * rewrites only its own figures. Every section records when it ran and how busy the machine was:
 * figures from a loaded machine are not comparable with figures from an idle one.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { loadavg } from 'node:os';
import { describeMachine, type MachineInfo } from './machine';
import { repoPath } from '../../test/support/repo';

export type SectionName = 'bench' | 'load' | 'fuzz' | 'versus' | 'lean';

export interface LoadAverage {
  /** 1, 5 and 15 minute load averages (runnable processes; this machine has `cores` cores). */
  oneMinute: number;
  fiveMinutes: number;
  fifteenMinutes: number;
}

export interface SectionEnvelope<T> {
  date: string;
  machine: MachineInfo;
  loadAverageAtStart: LoadAverage;
  loadAverageAtEnd: LoadAverage;
  command: string;
  figures: T;
}

export function currentLoad(): LoadAverage {
  const [one = NaN, five = NaN, fifteen = NaN] = loadavg().map((value) => Math.round(value * 100) / 100);
  return { oneMinute: one, fiveMinutes: five, fifteenMinutes: fifteen };
}

/** Where results go: bench/results.json for real runs, .tmp/ for `--quick` smoke runs. */
export function resultsPath(quick: boolean): string {
  return quick ? repoPath('.tmp', 'bench-results.quick.json') : repoPath('bench', 'results.json');
}

export function readResults(path: string): Partial<Record<SectionName, SectionEnvelope<unknown>>> {
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Partial<Record<SectionName, SectionEnvelope<unknown>>>) : {};
}

/** Starts timing a section; `finish` stores it, leaving the other sections as they were. */
export function beginSection(name: SectionName, command: string, quick: boolean) {
  const started = new Date();
  const loadAverageAtStart = currentLoad();
  progress(`load average at start: ${loadAverageAtStart.oneMinute} (1 min)`);
  if (loadAverageAtStart.oneMinute >= 1) {
    progress('warning: the machine is busy; timings will not be comparable with an idle run (see loadAverageAtStart in the results)');
  }
  return {
    loadAverageAtStart,
    finish<T>(figures: T): { path: string; envelope: SectionEnvelope<T> } {
      const envelope: SectionEnvelope<T> = {
        date: started.toISOString(),
        machine: describeMachine(started),
        loadAverageAtStart,
        loadAverageAtEnd: currentLoad(),
        command: quick ? `${command} -- --quick` : command,
        figures,
      };
      const path = resultsPath(quick);
      const results = { ...readResults(path), [name]: envelope };
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, `${JSON.stringify(results, null, 2)}\n`);
      return { path, envelope };
    },
  };
}

/** Progress goes to stderr so stdout carries only the report. */
export function progress(line: string): void {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}
