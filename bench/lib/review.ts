/**
 * The AdmissionReview every benchmark sends: a Pod CREATE as kube-apiserver writes it (admission.k8s.io/v1,
 * a DaemonSet controller as the user), so every server parses the same bytes.
 */
import type { Pod } from '../../src/mutate';

export function admissionReview(pod: unknown, uid: string) {
  const metadata = (pod as Pod).metadata ?? {};
  const podResource = { group: '', version: 'v1', resource: 'pods' };
  const podKind = { group: '', version: 'v1', kind: 'Pod' };
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: podKind,
      resource: podResource,
      requestKind: podKind,
      requestResource: podResource,
      namespace: metadata.namespace ?? 'default',
      operation: 'CREATE',
      userInfo: { username: 'system:serviceaccount:kube-system:daemon-set-controller', groups: ['system:serviceaccounts'] },
      object: pod,
      oldObject: null,
      dryRun: false,
      options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' },
    },
  };
}

/** The review as the bytes a client sends. */
export function reviewBody(pod: unknown, uid = 'b3c0ffee-0000-4000-8000-000000000001'): string {
  return JSON.stringify(admissionReview(pod, uid));
}
