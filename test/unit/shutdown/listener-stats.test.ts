import { countConnections, listenerOfGauge } from '../../../src/shutdown/listener-stats';

const body = (stats: object[]) => JSON.stringify({ stats });

describe('listener gauges', () => {
  test('listener segment of a gauge name', () => {
    expect(listenerOfGauge('listener.0.0.0.0_8080.downstream_cx_active')).toBe('0.0.0.0_8080');
    expect(listenerOfGauge('listener.[::]_8443.downstream_cx_active')).toBe('[::]_8443');
    expect(listenerOfGauge('listener.envoy-gateway-listener.downstream_cx_active')).toBe('envoy-gateway-listener');
    expect(listenerOfGauge('listener.0.0.0.0_8080.worker_12.downstream_cx_active')).toBeUndefined();
    expect(listenerOfGauge('listener.admin.main_thread.downstream_cx_active')).toBeUndefined();
    expect(listenerOfGauge('listener.0.0.0.0_8080.downstream_cx_total')).toBeUndefined();
    expect(listenerOfGauge('server.total_connections')).toBeUndefined();
  });

  test('sums listeners once, without admin, per-handler duplicates, internal or excluded listeners', () => {
    const count = countConnections(
      body([
        { name: 'control_plane.identifier', value: '' },
        { name: 'listener.0.0.0.0_8080.downstream_cx_active', value: 3 },
        { name: 'listener.0.0.0.0_8080.worker_0.downstream_cx_active', value: 2 },
        { name: 'listener.0.0.0.0_8080.worker_1.downstream_cx_active', value: 1 },
        { name: 'listener.[::]_8443.downstream_cx_active', value: 4 },
        { name: 'listener.0.0.0.0_8002.downstream_cx_active', value: 6 },
        { name: 'listener.[::]_8002.downstream_cx_active', value: 6 },
        { name: 'listener.envoy_internal_tunnel.downstream_cx_active', value: 9 },
        { name: 'listener.admin.downstream_cx_active', value: 1 },
        { name: 'listener.admin.main_thread.downstream_cx_active', value: 1 },
        { name: 'server.total_connections', value: 99 },
        { histograms: { supported_quantiles: [], computed_quantiles: [] } },
      ]),
      [/_8002$/],
    );
    expect(count.total).toBe(7);
    expect(count.listeners.map((l) => [l.listener, l.role])).toEqual([
      ['0.0.0.0_8080', 'counted'],
      ['[::]_8443', 'counted'],
      ['0.0.0.0_8002', 'excluded'],
      ['[::]_8002', 'excluded'],
      ['envoy_internal_tunnel', 'internal'],
      ['admin', 'admin'],
    ]);
  });

  test('no listener gauge at all is unknown, not zero', () => {
    expect(countConnections('{"stats":[]}', []).total).toBeNull();
    expect(countConnections(body([{ name: 'listener.admin.downstream_cx_active', value: 1 }]), []).total).toBeNull();
  });

  test('only excluded listeners visible is a known zero', () => {
    expect(countConnections(body([{ name: 'listener.0.0.0.0_8002.downstream_cx_active', value: 2 }]), [/_8002$/]).total).toBe(0);
  });

  test('malformed bodies throw', () => {
    expect(() => countConnections('not json', [])).toThrow();
    expect(() => countConnections('{"nostats":1}', [])).toThrow(/stats/);
  });
});
