/**
 * The chart's values.schema.json and the core's config loader must accept exactly the same drainguard
 * settings: a value the schema lets through but the loader refuses passes `helm install` and then
 * crash-loops the webhook on start.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv from 'ajv';
import { stringify } from 'yaml';
import { parseConfig } from '../../../src/config';
import { CHART_DIR } from '../../support/helm';

const schema = JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8')) as { properties: { config: object } };
const schemaAccepts = new Ajv({ allErrors: true, strict: false }).compile(schema.properties.config);

function loaderAccepts(config: object): boolean {
  try {
    parseConfig(stringify(config), 'values.yaml');
    return true;
  } catch {
    return false;
  }
}

/** Every numeric setting, with values on and around the loader's bounds and a fraction. */
const NUMERIC_SETTINGS: { section: string; key: string; min: number; max: number }[] = [
  { section: 'liveness', key: 'periodSeconds', min: 1, max: 3600 },
  { section: 'liveness', key: 'timeoutSeconds', min: 1, max: 3600 },
  { section: 'liveness', key: 'failureThreshold', min: 1, max: 3600 },
  { section: 'liveness', key: 'startupFailureThreshold', min: 1, max: 3600 },
  { section: 'liveness', key: 'terminationGracePeriodSeconds', min: 1, max: 3600 },
  { section: 'drain', key: 'deadlineMarginSeconds', min: 0, max: 3600 },
  { section: 'drain', key: 'drainDelaySeconds', min: 0, max: 3600 },
  { section: 'drain', key: 'minDrainSeconds', min: 0, max: 3600 },
  { section: 'drain', key: 'minConnections', min: 0, max: 1_000_000 },
  { section: 'drain', key: 'pollIntervalSeconds', min: 1, max: 60 },
  { section: 'gracePeriodFloor', key: 'minimumSeconds', min: 1, max: 86_400 },
];

const cases = NUMERIC_SETTINGS.flatMap(({ section, key, min, max }) =>
  [min - 1, min, min + 0.5, max, max + 1, '5'].map((value) => ({ path: `${section}.${key}`, config: { [section]: { [key]: value } }, value })),
);

test.each(cases)('schema and loader agree on $path = $value', ({ config }) => {
  expect(schemaAccepts(config)).toBe(loaderAccepts(config));
});

test('the bounds in this table are the loader\'s: its minimum and maximum are accepted, one beyond is not', () => {
  for (const { section, key, min, max } of NUMERIC_SETTINGS) {
    expect(loaderAccepts({ [section]: { [key]: min } })).toBe(true);
    expect(loaderAccepts({ [section]: { [key]: max } })).toBe(true);
    expect(loaderAccepts({ [section]: { [key]: min - 1 } })).toBe(false);
    expect(loaderAccepts({ [section]: { [key]: max + 1 } })).toBe(false);
  }
});

test.each([
  ['sidecarMode', { sidecarMode: 'delete' }],
  ['requests.envoy.cpu', { requests: { envoy: { cpu: 'lots' } } }],
  ['an unknown key', { drain: { minDrainSecond: 5 } }],
  ['the retired liveness.marginSeconds', { liveness: { marginSeconds: 30 } }],
  ['installer.imagePullPolicy', { installer: { imagePullPolicy: 'Sometimes' } }],
])('both refuse a bad %s', (_label, config) => {
  expect(loaderAccepts(config)).toBe(false);
  expect(schemaAccepts(config)).toBe(false);
});
