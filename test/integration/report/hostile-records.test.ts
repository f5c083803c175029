/**
 * Hostile termination messages through the whole path (the kubelet's reading, the watch, the
 * reporter, /metrics): counted as unreadable, reported with a warning Event, never a crash, and
 * never a new label value however many different ones pods write.
 */
import { KubeApiDouble } from '../../support/kube-api-double';
import { KubeletSimulator } from '../../support/kube/kubelet';
import { series, total } from '../../support/metrics-text';
import { drainedExit, envoyWorkload, events, finishedRecord, rollPod, runPod, scrape, startReporters } from './scenario';

test('not JSON, 4 KiB of garbage, a forged reason, huge numbers, 20 forged listener names: unreadable, one series, the reporter goes on', async () => {
  const double = await KubeApiDouble.start();
  const kubelet = new KubeletSimulator(double);
  const reporters = await startReporters(double, 2);
  try {
    const daemonSet = envoyWorkload(double, { namespace: 'projectcontour', name: 'envoy' });
    const record = finishedRecord('drained');
    const hostile = [
      'not JSON',
      Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 131 + 7) % 256)).toString('latin1'),
      record.replace('"reason":"drained"', '"reason":"pwned"'),
      record.replace('"connectionsAtStart":312', '"connectionsAtStart":1e300'),
      record.replace('"durationMs":14000', '"durationMs":-1'),
      ...Array.from({ length: 20 }, (_, i) => record.replace('"openListeners":[]', `"openListeners":[{"name":"x\\"${i}","connections":1}]`)),
    ];
    for (const message of hostile) rollPod(kubelet, runPod(kubelet, daemonSet), drainedExit(message));
    // And the reporter still reports a good one afterwards.
    const last = rollPod(kubelet, runPod(kubelet, daemonSet), drainedExit(record));
    await reporters.caughtUp(last.metadata.resourceVersion!);

    const scrapes = await Promise.all(reporters.replicas.map((replica) => scrape(replica.port)));
    expect(total(scrapes, 'drainguard_drain_records_unreadable_total')).toBe(hostile.length);
    expect(total(scrapes, 'drainguard_drains_total')).toBe(1);
    for (const name of ['drainguard_drain_records_unreadable_total', 'drainguard_drains_total']) {
      expect(series(scrapes, name).every((labels) => /^namespace=projectcontour,(reason=drained,)?workload=daemonset\/envoy$/.test(labels))).toBe(true);
    }
    const warnings = events(double).filter((event) => event.involvedObject.kind === 'Pod' && event.reason === 'DrainRecordUnreadable');
    expect(warnings).toHaveLength(hostile.length);
    // The Event quotes only the reader's own words for the problem, never the message.
    expect(warnings.every((event) => !event.message.includes('pwned') && !event.message.includes('x\\"'))).toBe(true);
  } finally {
    await reporters.stop();
    await double.close();
  }
});
