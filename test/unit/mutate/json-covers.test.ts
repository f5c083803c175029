/**
 * jsonCovers (src/json.ts): how drainguard recognises what it wrote once kube-apiserver stored it.
 */
import { jsonCovers } from '../../../src/json';

test('fields the API server defaults inside an object are allowed; a changed or missing value is not', () => {
  const written = { name: 'drainguard-install', command: ['install', '--to', '/config'], resources: { requests: { cpu: '10m' } } };
  expect(jsonCovers({ ...written, terminationMessagePath: '/dev/termination-log' }, written)).toBe(true);
  expect(jsonCovers({ ...written, command: ['install', '--to', '/other'] }, written)).toBe(false);
  expect(jsonCovers({ ...written, resources: {} }, written)).toBe(false);
  expect(jsonCovers({ name: 'drainguard-install' }, written)).toBe(false);
});

test('a list of named items is matched by name, extra items allowed; any other list element by element at the same length', () => {
  const mounts = [{ name: 'config', mountPath: '/config' }];
  expect(jsonCovers([{ name: 'kube-api-access-x7k2q', mountPath: '/var/run/secrets' }, { name: 'config', mountPath: '/config', readOnly: false }], mounts)).toBe(true);
  expect(jsonCovers([{ name: 'config', mountPath: '/elsewhere' }], mounts)).toBe(false);
  expect(jsonCovers([], mounts)).toBe(false);
  expect(jsonCovers(['install', '--to', '/config', '--extra'], ['install', '--to', '/config'])).toBe(false);
  expect(jsonCovers(['--to', 'install', '/config'], ['install', '--to', '/config'])).toBe(false);
  expect(jsonCovers([{ port: 80, protocol: 'TCP' }], [{ port: 80 }])).toBe(true);
});

test('types must agree: an object is not a list, a string is not a number', () => {
  expect(jsonCovers([], {})).toBe(false);
  expect(jsonCovers({}, [])).toBe(false);
  expect(jsonCovers('8002', 8002)).toBe(false);
  expect(jsonCovers(null, {})).toBe(false);
  expect(jsonCovers({ a: undefined }, { a: undefined })).toBe(true);
});
