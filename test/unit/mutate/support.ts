/** Shared helpers for the mutate tests: fixtures, and applying a patch with an independent RFC 6902 library. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { defaultConfig, type Config } from '../../../src/config';
import { mutate, type Container, type MutationResult, type Pod } from '../../../src/mutate';
import { applyIndependently } from '../../support/independent-patch';

export const FIXTURES = join(__dirname, '../../fixtures/pods');

export function loadPod(name: string): Pod {
  return parse(readFileSync(join(FIXTURES, name), 'utf8')) as Pod;
}

export { applyIndependently };

export type Mutated = Extract<MutationResult, { status: 'mutated' }>;

/** mutate() that must mutate; returns the result and the patched pod. */
export function mutateOk(pod: Pod, config: Config = defaultConfig()): { result: Mutated; after: Pod } {
  const result = mutate(pod, config);
  if (result.status !== 'mutated') throw new Error(`expected mutated, got ${result.status}: ${JSON.stringify(result)}`);
  return { result, after: applyIndependently(pod, result.patch) };
}

export function container(pod: Pod, name: string): Container {
  const found = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].find((c) => c.name === name);
  if (found === undefined) throw new Error(`no container ${name}`);
  return found;
}

export function hasContainer(pod: Pod, name: string): boolean {
  return [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].some((c) => c.name === name);
}

/** The preStop exec command of Envoy, as an argument map (`--flag value`). */
export function drainArgs(envoy: Container): { program: string; subcommand: string; flags: Map<string, string[]> } {
  const command = envoy.lifecycle?.preStop?.exec?.command;
  if (command === undefined) throw new Error('envoy has no exec preStop');
  const flags = new Map<string, string[]>();
  for (let i = 2; i < command.length; i += 2) {
    const flag = command[i] as string;
    flags.set(flag, [...(flags.get(flag) ?? []), command[i + 1] as string]);
  }
  return { program: command[0] as string, subcommand: command[1] as string, flags };
}

export function seconds(value: string | undefined): number {
  if (value === undefined || !/^\d+s$/.test(value)) throw new Error(`not a duration: ${String(value)}`);
  return Number(value.slice(0, -1));
}

export function withAnnotations(pod: Pod, annotations: Record<string, string>): Pod {
  const copy = JSON.parse(JSON.stringify(pod)) as Pod;
  copy.metadata = { ...(copy.metadata ?? {}), annotations: { ...(copy.metadata?.annotations ?? {}), ...annotations } };
  return copy;
}

export function configWith(change: (config: Config) => void): Config {
  const config = defaultConfig();
  change(config);
  return config;
}
