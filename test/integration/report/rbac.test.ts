/**
 * Least privilege, measured: every request the reporter makes, through a day's worth of cases (a
 * DaemonSet and a Deployment, a relist, a lost answer), is allowed by the ClusterRole the chart gives
 * its ServiceAccount, and every rule of that ClusterRole is used. Requests to the API double carry
 * the RBAC attributes kube-apiserver authorizes them by.
 */
import { findOne, renderChart, reporterObjects, type K8sObject } from '../../support/helm';
import { KubeApiDouble } from '../../support/kube-api-double';
import { KubeletSimulator } from '../../support/kube/kubelet';
import { drainedExit, envoyWorkload, finishedRecord, rollPod, runPod, startReporters } from './scenario';

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

test('every request is allowed by the chart\'s ClusterRole, and every rule is used', async () => {
  const rules = (findOne(reporterObjects(renderChart()), 'ClusterRole') as K8sObject & { rules: Rule[] }).rules;
  const double = await KubeApiDouble.start();
  const kubelet = new KubeletSimulator(double);
  const reporters = await startReporters(double, 2);
  try {
    const daemonSet = envoyWorkload(double, { namespace: 'projectcontour', name: 'envoy' });
    const deployment = envoyWorkload(double, { namespace: 'gateway', name: 'envoy-gw', kind: 'Deployment' });
    const cut = double.cutAfterApplying('POST', /\/events$/);
    rollPod(kubelet, runPod(kubelet, daemonSet), drainedExit(finishedRecord('drained')));
    await cut;
    const survivor = runPod(kubelet, deployment);
    double.endWatches();
    await reporters.caughtUp(rollPod(kubelet, survivor, drainedExit(finishedRecord('drained'))).metadata.resourceVersion!);

    const used = new Set<string>();
    for (const request of double.requests) {
      const rbac = request.rbac!;
      const rule = rules.find((r) => r.apiGroups.includes(rbac.group) && r.resources.includes(rbac.resource) && r.verbs.includes(rbac.verb));
      expect(`${rbac.verb} ${rbac.resource}.${rbac.group}: ${rule ? 'allowed' : 'refused'}`).toBe(`${rbac.verb} ${rbac.resource}.${rbac.group}: allowed`);
      used.add(`${rbac.verb} ${rbac.resource}`);
    }
    const granted = rules.flatMap((rule) => rule.resources.flatMap((resource) => rule.verbs.map((verb) => `${verb} ${resource}`)));
    expect([...used].sort()).toEqual(granted.sort());
    // Pods are only ever listed and watched with the protected label's selector: never every pod.
    const podReads = double.requests.filter((request) => request.rbac?.resource === 'pods');
    expect(podReads.every((request) => new URLSearchParams(request.query).get('labelSelector') === 'drainguard.io/protected=true')).toBe(true);
  } finally {
    await reporters.stop();
    await double.close();
  }
});
