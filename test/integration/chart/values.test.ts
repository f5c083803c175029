/** The chart's defaults stay equal to the core's: values.yaml `config` is defaultConfig(). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { DRAIN_IMAGE_REPOSITORY, defaultConfig, DRAIN_SETTING_DEFAULTS } from '../../../src/config/defaults';
import { CHART_DIR, REPO_ROOT } from '../../support/helm';

const values = parse(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')) as {
  config: { installer: { image: string } };
  drainImage: { repository: string; tag: string; digest: string };
};
const chart = parse(readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as { appVersion: string; version: string };
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };

test('values.yaml config equals defaultConfig(), except the installer image', () => {
  const expected = defaultConfig();
  // The chart fills the installer image from drainImage (tested in render.test.ts): the same
  // repository as the core's default, and no digest in the repository (a release writes it in).
  expect(values.config.installer.image).toBe('');
  expect(values.drainImage).toEqual({ repository: DRAIN_IMAGE_REPOSITORY, tag: '', digest: '' });
  expect({ ...values.config, installer: { ...values.config.installer, image: expected.installer.image } }).toEqual(expected);
});

test('values.yaml sets no drain setting, and the defaults its comment shows are drainguard\'s', () => {
  // Unset is what lets a replaced component's release default apply (docs/configuration.md).
  expect((values.config as { drain?: unknown }).drain).toEqual({});
  const text = readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8');
  const shown = Object.fromEntries([...text.matchAll(/^ {2}# {3}(\w+): (\d+) /gm)].map((match) => [match[1], Number(match[2])]));
  expect(shown).toEqual(DRAIN_SETTING_DEFAULTS);
});

test('appVersion is the package version, so the default image is the one built from this tree', () => {
  expect(chart.appVersion).toBe(pkg.version);
});

test('values.schema.json describes every key of defaultConfig() (no default can be a typo to the schema)', () => {
  const schema = JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8')) as SchemaNode;
  interface SchemaNode {
    properties?: Record<string, SchemaNode>;
    additionalProperties?: boolean | SchemaNode;
  }
  const missing: string[] = [];
  const walk = (value: unknown, node: SchemaNode | undefined, path: string): void => {
    if (node === undefined) {
      missing.push(path);
      return;
    }
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      expect(`${path}: additionalProperties ${String(node.additionalProperties)}`).toBe(`${path}: additionalProperties false`);
      for (const [k, v] of Object.entries(value)) walk(v, node.properties?.[k], `${path}.${k}`);
    }
  };
  walk({ ...defaultConfig(), drain: DRAIN_SETTING_DEFAULTS }, schema.properties?.config, 'config');
  expect(missing).toEqual([]);
});
