/** Resource requests: fill what is missing, never overwrite, respect limits, warn on memory headroom. */
import { defaultConfig } from '../../../src/config';
import { validatePod, type ResourceRequirements } from '../../../src/mutate';
import { container, loadPod, mutateOk } from './support';

function contourWithEnvoyResources(resources: ResourceRequirements) {
  const pod = loadPod('contour-main.yaml');
  container(pod, 'envoy').resources = resources;
  return pod;
}

test('limits lower than the default requests: each request becomes its limit, with a warning', () => {
  const pod = contourWithEnvoyResources({ limits: { cpu: '50m', memory: '64Mi' } });
  const { result, after } = mutateOk(pod);
  expect(container(after, 'envoy').resources).toEqual({ limits: { cpu: '50m', memory: '64Mi' }, requests: { cpu: '50m', memory: '64Mi' } });
  expect(result.warnings.filter((w) => w.includes('is below drainguard\'s request'))).toHaveLength(2);
  expect(validatePod(after)).toEqual([]);
});

test('a limit at or above the default request: the request still copies the limit (what the API server defaults), no warning', () => {
  const pod = contourWithEnvoyResources({ limits: { cpu: 2, memory: '1Gi' } });
  const { result, after } = mutateOk(pod);
  expect(container(after, 'envoy').resources?.requests).toEqual({ cpu: 2, memory: '1Gi' });
  expect(result.warnings.some((w) => w.includes('is below'))).toBe(false);
});

test('cpu and memory are filled separately and a user value is never overwritten', () => {
  const pod = contourWithEnvoyResources({ requests: { memory: '2Gi' } });
  const { result, after } = mutateOk(pod);
  expect(container(after, 'envoy').resources?.requests).toEqual({ memory: '2Gi', cpu: defaultConfig().requests.envoy.cpu });
  expect(result.patch).toContainEqual({ op: 'add', path: '/spec/containers/1/resources/requests/cpu', value: '100m' });
});

test('a container with both requests set gets no resource operation', () => {
  const pod = contourWithEnvoyResources({ requests: { cpu: '1', memory: '1Gi' } });
  const { result } = mutateOk(pod);
  expect(result.patch.some((op) => op.path.startsWith('/spec/containers/1/resources'))).toBe(false);
});

test('a memory limit with less headroom than the drain program needs is warned about', () => {
  const pod = contourWithEnvoyResources({ requests: { memory: '500Mi' }, limits: { memory: '512Mi' } });
  const { result } = mutateOk(pod);
  expect(result.warnings.some((w) => w.includes('memory limit 512Mi') && w.includes('16Mi'))).toBe(true);
});

test('enough memory headroom: no warning', () => {
  const pod = contourWithEnvoyResources({ requests: { memory: '256Mi' }, limits: { memory: '512Mi' } });
  const { result } = mutateOk(pod);
  expect(result.warnings.some((w) => w.includes('memory limit'))).toBe(false);
});

test('a kept sidecar (disarm) gets the sidecar requests, limited by its own limits', () => {
  const pod = loadPod('contour-main.yaml');
  container(pod, 'shutdown-manager').resources = { limits: { memory: '16Mi' } };
  const config = defaultConfig();
  config.sidecarMode = 'disarm';
  const { after } = mutateOk(pod, config);
  expect(container(after, 'shutdown-manager').resources?.requests).toEqual({ cpu: '10m', memory: '16Mi' });
});
