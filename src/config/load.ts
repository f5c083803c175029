/**
 * The optional YAML config file (`--config FILE`): any subset of `Config`, deep-merged over
 * `defaultConfig()`. Strict, because a typo must not silently fall back to a default: an unknown key
 * or a wrong type is an error naming the file and the key path.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { isValidQuantity } from '../k8s/quantity';
import { isDnsLabel } from '../k8s/validate';
import { PROGRAM_NAME } from '../drain-contract';
import { defaultConfig } from './defaults';
import { DRAIN_SETTING_RANGES, type Range } from './ranges';
import type { Config } from './types';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Checks one setting; returns what is wrong with it, or undefined. */
type Check = (value: unknown) => string | undefined;

/** Mirrors `Config` key by key (the compiler keeps the two in step); leaves are checks. */
type Schema<T> = { [K in keyof T]-?: T[K] extends unknown[] ? Check : T[K] extends object ? Schema<T[K]> : Check };

const text: Check = (v) => (typeof v === 'string' && v.trim() !== '' ? undefined : 'must be a non-empty string');
const dnsLabel: Check = (v) => (typeof v === 'string' && isDnsLabel(v) ? undefined : 'must be a DNS label (lower-case letters, digits, "-", at most 63)');
const absolutePath: Check = (v) =>
  typeof v === 'string' && /^\/[A-Za-z0-9._/-]*[A-Za-z0-9._-]$/.test(v) && !v.split('/').includes('..')
    ? undefined
    : 'must be an absolute path other than "/" (letters, digits, ".", "_", "-", "/"; no "..")';
/** The drain program's path in its image: the webhook recognises its own hook by the program's name. */
const programPath: Check = (v) =>
  absolutePath(v) === undefined && (v as string).endsWith(`/${PROGRAM_NAME}`) ? undefined : `must be an absolute path whose last part is ${PROGRAM_NAME}`;
const pathSegment: Check = (v) =>
  typeof v === 'string' && /^[A-Za-z0-9._-]+$/.test(v) && v !== '.' && v !== '..' ? undefined : 'must be a single directory name (letters, digits, ".", "_", "-")';
const quantity: Check = (v) =>
  (typeof v === 'string' || typeof v === 'number') && isValidQuantity(v) ? undefined : 'must be a Kubernetes quantity such as "100m" or "128Mi"';
const boolean: Check = (v) => (typeof v === 'boolean' ? undefined : 'must be true or false');
const integer = (min: number, max: number): Check => (v) =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max ? undefined : `must be a whole number from ${min} to ${max}`;
const inRange = ({ min, max }: Range): Check => integer(min, max);
const oneOf = (...values: string[]): Check => (v) =>
  typeof v === 'string' && values.includes(v) ? undefined : `must be one of ${values.map((x) => JSON.stringify(x)).join(', ')}`;
const repositories: Check = (v) =>
  Array.isArray(v) && v.length > 0 && v.every((r) => typeof r === 'string' && /^[a-z0-9][a-z0-9._/-]*$/.test(r))
    ? undefined
    : 'must be a non-empty list of image repositories such as "envoyproxy/envoy"';

const requests: Schema<Config['requests']['envoy']> = { cpu: quantity, memory: quantity };
const HOUR = 3600;
/** Probe thresholds: an hour of failures at the shortest period is plenty, and far inside int32. */
const MAX_PROBE_FAILURES = 3600;

const SCHEMA: Schema<Config> = {
  envoyContainerName: dnsLabel,
  envoyImageRepositories: repositories,
  shutdownManagerContainerName: dnsLabel,
  sidecarMode: oneOf('remove', 'disarm'),
  installer: {
    delivery: oneOf('copy', 'image-volume'),
    containerName: dnsLabel,
    image: text,
    imagePullPolicy: oneOf('Always', 'IfNotPresent', 'Never'),
    programPath,
    installDirectory: pathSegment,
    volumeName: dnsLabel,
    mountPath: absolutePath,
  },
  requests: { envoy: requests, installer: requests, sidecar: requests },
  shutdownProgramMemory: quantity,
  liveness: {
    periodSeconds: integer(1, HOUR),
    timeoutSeconds: integer(1, HOUR),
    failureThreshold: integer(1, MAX_PROBE_FAILURES),
    startupFailureThreshold: integer(1, MAX_PROBE_FAILURES),
    terminationGracePeriodSeconds: integer(1, HOUR),
  },
  drain: {
    deadlineMarginSeconds: integer(0, HOUR),
    drainDelaySeconds: inRange(DRAIN_SETTING_RANGES.drainDelaySeconds),
    minDrainSeconds: inRange(DRAIN_SETTING_RANGES.minDrainSeconds),
    minConnections: inRange(DRAIN_SETTING_RANGES.minConnections),
    pollIntervalSeconds: inRange(DRAIN_SETTING_RANGES.pollIntervalSeconds),
  },
  gracePeriodFloor: { enabled: boolean, minimumSeconds: integer(1, 24 * HOUR) },
};

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Merges `input` over `defaults` following `schema`; problems are collected as "path: what". */
function mergeSection(schema: object, defaults: Record<string, unknown>, input: Record<string, unknown>, path: string, problems: string[]): void {
  for (const [key, value] of Object.entries(input)) {
    const keyPath = path === '' ? key : `${path}.${key}`;
    const rule = (schema as Record<string, unknown>)[key];
    if (rule === undefined) {
      problems.push(`${keyPath}: unknown setting (known here: ${Object.keys(schema).join(', ')})`);
    } else if (typeof rule === 'function') {
      const problem = (rule as Check)(value);
      if (problem === undefined) defaults[key] = value;
      else problems.push(`${keyPath}: ${problem} (got ${JSON.stringify(value)})`);
    } else if (value === null) {
      // `installer:` with nothing under it: no overrides in that section.
    } else if (!isMapping(value)) {
      problems.push(`${keyPath}: must be a mapping (got ${JSON.stringify(value)})`);
    } else {
      mergeSection(rule as object, defaults[key] as Record<string, unknown>, value, keyPath, problems);
    }
  }
}

export function parseConfig(yamlText: string, sourceName: string): Config {
  let document: unknown;
  try {
    document = parseYaml(yamlText);
  } catch (error) {
    throw new ConfigError(`${sourceName}: invalid YAML: ${(error as Error).message}`);
  }
  const config = defaultConfig();
  if (document === null || document === undefined) return config;
  if (!isMapping(document)) throw new ConfigError(`${sourceName}: the config must be a YAML mapping of settings`);
  const problems: string[] = [];
  mergeSection(SCHEMA, config as unknown as Record<string, unknown>, document, '', problems);
  if (problems.length > 0) throw new ConfigError(problems.map((problem) => `${sourceName}: ${problem}`).join('\n'));
  return config;
}

export function loadConfigFile(path: string): Config {
  let yamlText: string;
  try {
    yamlText = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`${path}: cannot read the config file: ${(error as Error).message}`);
  }
  return parseConfig(yamlText, path);
}
