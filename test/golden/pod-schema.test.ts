/**
 * The Pod schema check every golden (and any other suite) relies on: it must accept real pods and
 * reject exactly what the API server would refuse or silently drop.
 */
import { assertValidPod, podSchemaProblems } from '../support/pod-schema';

const pod = () => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { generateName: 'envoy-', namespace: 'projectcontour', labels: { app: 'envoy' }, creationTimestamp: null },
  spec: {
    containers: [
      {
        name: 'envoy',
        image: 'docker.io/envoyproxy/envoy:v1.31.0',
        args: ['-c', '/config/envoy.json'],
        ports: [{ containerPort: 8080, name: 'http', protocol: 'TCP' }],
        resources: { requests: { cpu: '100m', memory: 128974848 } },
        livenessProbe: { httpGet: { path: '/ready', port: 'metrics' }, periodSeconds: 10, terminationGracePeriodSeconds: 10 },
        lifecycle: { preStop: { exec: { command: ['/config/drainguard/envoy-shutdown', 'drain'] } } },
        env: null,
      },
    ],
    affinity: { podAffinity: null },
    volumes: [{ name: 'envoy-config', emptyDir: {} }],
  },
});

describe('the Kubernetes Pod schema check', () => {
  it('accepts a valid pod, with nulls, numeric quantities and named ports as the API server decodes them', () => {
    expect(podSchemaProblems(pod())).toEqual([]);
    expect(() => assertValidPod(pod())).not.toThrow();
  });

  it('accepts an image volume (KEP-4639), and refuses a field its source does not have', () => {
    const mounted = pod();
    (mounted.spec.volumes as unknown[]).push({ name: 'drainguard', image: { reference: 'ghcr.io/drainguard/envoy-shutdown:0.1.0', pullPolicy: 'IfNotPresent' } });
    expect(podSchemaProblems(mounted)).toEqual([]);
    const misspelt = pod();
    (misspelt.spec.volumes as unknown[]).push({ name: 'drainguard', image: { ref: 'ghcr.io/drainguard/envoy-shutdown:0.1.0' } });
    expect(podSchemaProblems(misspelt)).toEqual(['spec.volumes[1].image.ref: unknown field']);
  });

  it('rejects a wrongly typed field, naming it', () => {
    const bad = pod();
    (bad.spec.containers[0] as Record<string, unknown>).args = ['-c', 5];
    (bad.spec.containers[0]!.livenessProbe as Record<string, unknown>).periodSeconds = '10';
    expect(podSchemaProblems(bad)).toEqual([
      'spec.containers[0].args[1]: must be string',
      'spec.containers[0].livenessProbe.periodSeconds: must be integer',
    ]);
  });

  it('rejects an int32 field out of range', () => {
    const bad = pod();
    bad.spec.containers[0]!.ports[0]!.containerPort = 2 ** 31;
    expect(podSchemaProblems(bad)).toEqual(['spec.containers[0].ports[0].containerPort: must be <= 2147483647']);
  });

  it('rejects an unknown field anywhere, also one holding null', () => {
    const bad = pod();
    (bad.spec.containers[0]!.lifecycle.preStop as Record<string, unknown>).timeoutSeconds = 30;
    (bad.metadata as Record<string, unknown>).annotation = null;
    expect(podSchemaProblems(bad)).toEqual([
      'metadata.annotation: unknown field',
      'spec.containers[0].lifecycle.preStop.timeoutSeconds: unknown field',
    ]);
    expect(() => assertValidPod(bad, 'the patched pod')).toThrow(/the patched pod does not validate.*\n.*metadata\.annotation: unknown field/);
  });

  it('rejects a missing required field', () => {
    const bad = pod();
    delete (bad.spec.volumes[0] as Record<string, unknown>).name;
    expect(podSchemaProblems(bad)).toEqual(["spec.volumes[0]: must have required property 'name'"]);
  });
});
