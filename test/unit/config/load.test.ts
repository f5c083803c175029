import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, defaultConfig, loadConfigFile, parseConfig } from '../../../src/config';

describe('parseConfig', () => {
  test('an empty file gives the defaults', () => {
    expect(parseConfig('', 'empty.yaml')).toEqual(defaultConfig());
    expect(parseConfig('# only a comment\n', 'c.yaml')).toEqual(defaultConfig());
  });

  test('a partial file is deep-merged over the defaults', () => {
    const config = parseConfig(
      ['sidecarMode: disarm', 'installer:', '  image: registry.example.com/drainguard:1.2.3', 'requests:', '  envoy:', '    memory: 256Mi', 'gracePeriodFloor:', '  enabled: true'].join('\n'),
      'partial.yaml',
    );
    const expected = defaultConfig();
    expected.sidecarMode = 'disarm';
    expected.installer.image = 'registry.example.com/drainguard:1.2.3';
    expected.requests.envoy.memory = '256Mi';
    expected.gracePeriodFloor.enabled = true;
    expect(config).toEqual(expected);
  });

  test('a drain setting is present exactly when the file sets it (its default is applied later, below other sources)', () => {
    expect(parseConfig('', 'empty.yaml').drain).toEqual({});
    expect(parseConfig('drain:\n  minDrainSeconds: 20\n', 'd.yaml').drain).toEqual({ minDrainSeconds: 20 });
    // The value of drainguard's own default, written out, is still set by the operator.
    expect(parseConfig('drain:\n  drainDelaySeconds: 0\n', 'd.yaml').drain).toEqual({ drainDelaySeconds: 0 });
    expect(parseConfig('drain: {}\n', 'd.yaml').drain).toEqual({});
  });

  test('installer.delivery: image-volume, and a drain image of your own whose program is elsewhere in it', () => {
    const config = parseConfig('installer:\n  delivery: image-volume\n  programPath: /opt/drain/envoy-shutdown', 'm.yaml');
    expect(config.installer).toMatchObject({ delivery: 'image-volume', programPath: '/opt/drain/envoy-shutdown' });
    expect(defaultConfig().installer.delivery).toBe('copy');
  });

  test('lists replace the default list', () => {
    expect(parseConfig('envoyImageRepositories: [example/envoy]', 'l.yaml').envoyImageRepositories).toEqual(['example/envoy']);
  });

  test('an empty section means no overrides in it', () => {
    expect(parseConfig('installer:\n', 's.yaml')).toEqual(defaultConfig());
  });

  test.each([
    ['sidecarMod: disarm', 'bad.yaml: sidecarMod: unknown setting'],
    ['installer:\n  imagePullPolcy: Always', 'bad.yaml: installer.imagePullPolcy: unknown setting'],
    ['drain:\n  minDrainSeconds: "5"', 'bad.yaml: drain.minDrainSeconds: must be a whole number'],
    ['drain:\n  pollIntervalSeconds: 0', 'bad.yaml: drain.pollIntervalSeconds: must be a whole number from 1'],
    ['liveness:\n  periodSeconds: 2.5', 'bad.yaml: liveness.periodSeconds'],
    ['sidecarMode: delete', 'bad.yaml: sidecarMode: must be one of "remove", "disarm"'],
    ['requests:\n  envoy:\n    cpu: lots', 'bad.yaml: requests.envoy.cpu: must be a Kubernetes quantity'],
    ['requests: []', 'bad.yaml: requests: must be a mapping'],
    ['installer:\n  mountPath: relative/path', 'bad.yaml: installer.mountPath: must be an absolute path'],
    ['installer:\n  programPath: /opt/../bin/sh', 'bad.yaml: installer.programPath'],
    ['installer:\n  installDirectory: a/b', 'bad.yaml: installer.installDirectory'],
    ['installer:\n  programPath: /opt/drain', 'bad.yaml: installer.programPath: must be an absolute path whose last part is envoy-shutdown'],
    ['installer:\n  delivery: image', 'bad.yaml: installer.delivery: must be one of "copy", "image-volume"'],
    ['envoyContainerName: Envoy', 'bad.yaml: envoyContainerName: must be a DNS label'],
    ['gracePeriodFloor:\n  enabled: "yes"', 'bad.yaml: gracePeriodFloor.enabled: must be true or false'],
    ['envoyImageRepositories: []', 'bad.yaml: envoyImageRepositories'],
  ])('%j is rejected naming the file and key path', (yaml, message) => {
    expect(() => parseConfig(yaml, 'bad.yaml')).toThrow(ConfigError);
    expect(() => parseConfig(yaml, 'bad.yaml')).toThrow(message);
  });

  test('every problem is reported at once', () => {
    expect(() => parseConfig('a: 1\nb: 2', 'two.yaml')).toThrow(/two\.yaml: a: unknown setting[\s\S]*two\.yaml: b: unknown setting/);
  });

  test('invalid YAML and a non-mapping document are errors naming the file', () => {
    expect(() => parseConfig('a: [1', 'broken.yaml')).toThrow(/^broken\.yaml: invalid YAML/);
    expect(() => parseConfig('- 1', 'list.yaml')).toThrow('list.yaml: the config must be a YAML mapping');
    expect(() => parseConfig('a: 1\n---\nb: 2', 'multi.yaml')).toThrow(/multi\.yaml/);
  });

  test('the defaults are not shared between calls', () => {
    const first = parseConfig('', 'a.yaml');
    first.requests.envoy.cpu = '9';
    expect(parseConfig('', 'b.yaml').requests.envoy.cpu).toBe(defaultConfig().requests.envoy.cpu);
  });
});

describe('loadConfigFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'drainguard-config-'));

  test('reads and parses a file', () => {
    const path = join(dir, 'config.yaml');
    writeFileSync(path, 'drain:\n  drainDelaySeconds: 5\n');
    expect(loadConfigFile(path).drain.drainDelaySeconds).toBe(5);
  });

  test('errors name the path', () => {
    const path = join(dir, 'bad.yaml');
    writeFileSync(path, 'nope: 1\n');
    expect(() => loadConfigFile(path)).toThrow(`${path}: nope: unknown setting`);
    expect(() => loadConfigFile(join(dir, 'missing.yaml'))).toThrow(/missing\.yaml: cannot read the config file/);
  });
});
