/**
 * The AdmissionReview envelope benchmarks and tests send: a Pod review as kube-apiserver writes it (a
 * DaemonSet controller as the user), so every server parses the same bytes: one envelope, not two.
 */
import type { Pod } from '../../../src/mutate';

export interface ReviewOptions {
  uid?: string;
  /** `admission.k8s.io/v1` by default; the fuzz run also sends `v1beta1`. */
  apiVersion?: string;
  /** `CREATE` by default. */
  operation?: string;
  dryRun?: boolean;
}

export const DEFAULT_REVIEW_UID = 'b3c0ffee-0000-4000-8000-000000000001';

export function admissionReview(pod: unknown, options: ReviewOptions = {}) {
  const metadata = (pod as Pod).metadata ?? {};
  const podResource = { group: '', version: 'v1', resource: 'pods' };
  const podKind = { group: '', version: 'v1', kind: 'Pod' };
  return {
    apiVersion: options.apiVersion ?? 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: options.uid ?? DEFAULT_REVIEW_UID,
      kind: podKind,
      resource: podResource,
      requestKind: podKind,
      requestResource: podResource,
      namespace: metadata.namespace ?? 'default',
      operation: options.operation ?? 'CREATE',
      userInfo: { username: 'system:serviceaccount:kube-system:daemon-set-controller', groups: ['system:serviceaccounts'] },
      object: pod,
      oldObject: null,
      dryRun: options.dryRun ?? false,
      options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' },
    },
  };
}

/** The review as the bytes a client sends. */
export function reviewBody(pod: unknown, uid = DEFAULT_REVIEW_UID): string {
  return JSON.stringify(admissionReview(pod, { uid }));
}
