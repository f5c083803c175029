/**
 * docs/configuration.md's table of settings is the configuration's: one row per setting of
 * defaultConfig() (the drain settings' defaults from DRAIN_SETTING_DEFAULTS, which the file leaves
 * unset), in the order of the type, each with its default as the table writes it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultConfig, DRAIN_SETTING_DEFAULTS } from '../../../src/config';
import { VERSION } from '../../../src/version';
import { tableBody } from '../../support/held-blocks';
import { REPO_ROOT } from '../../support/repo';

/** `cpu: 100m, memory: 128Mi` for a map of scalars, `[a, b]` for a list, the value itself otherwise. */
function written(value: unknown): string {
  if (Array.isArray(value)) return `[${value.join(', ')}]`;
  if (typeof value === 'object' && value !== null) return Object.entries(value).map(([key, inner]) => `${key}: ${String(inner)}`).join(', ');
  return String(value).replace(VERSION, '<version>');
}

const isMap = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * [setting, default] of every setting: a top-level map is a section (`installer.*`), and a map of
 * scalars inside one is a single setting (`requests.envoy`: `cpu: 100m, memory: 128Mi`).
 */
function settings(section: Record<string, unknown>, prefix = ''): [string, string][] {
  return Object.entries(section).flatMap(([key, value]): [string, string][] => {
    const isSetting = !isMap(value) || (prefix !== '' && Object.values(value).every((inner) => !isMap(inner)));
    return isSetting ? [[`${prefix}${key}`, written(value)]] : settings(value as Record<string, unknown>, `${prefix}${key}.`);
  });
}

test('docs/configuration.md lists every setting with its default, as the code has it', () => {
  const text = readFileSync(join(REPO_ROOT, 'docs/configuration.md'), 'utf8').split('\n');
  const start = text.findIndex((line) => line.startsWith('| Setting | Default |'));
  expect(start).toBeGreaterThan(0);
  const table = text.slice(start, text.findIndex((line, at) => at > start && !line.startsWith('|')));
  const documented = tableBody(table).map(([setting, value]) => [setting, value]);
  expect(documented).toEqual(settings({ ...defaultConfig(), drain: DRAIN_SETTING_DEFAULTS } as unknown as Record<string, unknown>));
});
