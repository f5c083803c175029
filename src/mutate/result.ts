/**
 * What `mutate(pod, config)` answers. The webhook, the CLI and the tests only ever switch on `status`.
 * The types it is made of live with the module that produces them and are re-exported here.
 */
import type { PatchOperation } from './patch/builder';
import type { MutationAction, ShutdownTimeline, SkipReason } from './plan';

export type { PatchOperation } from './patch/builder';
export type { AdminAddressSource, DrainSetting, DrainValueOrigin, DrainValueSource, MutationAction, ShutdownTimeline, SkipReason } from './plan';

export type MutationResult =
  | {
      status: 'mutated';
      patch: PatchOperation[];
      warnings: string[];
      actions: MutationAction[];
      timeline: ShutdownTimeline;
    }
  /** Everything drainguard would do is already done (the pod carries the current status): zero operations. */
  | { status: 'unchanged'; patch: []; warnings: string[]; timeline: ShutdownTimeline }
  /**
   * `message` says what drainguard looked for or found, and why it left the pod alone (`--explain`,
   * logs). The patch is empty, except that a pod left whole (`drain-not-installed`) loses a
   * `drainguard.io/protected` label it carries.
   */
  | { status: 'skipped'; reason: SkipReason; message: string; patch: PatchOperation[]; warnings: string[] }
  /** An invalid override annotation: the pod must be denied with this message. */
  | { status: 'denied'; message: string; patch: []; warnings: string[] }
  /**
   * Not a well-formed Pod: a field drainguard reads has the wrong JSON type (`problems` names each
   * one). The API server never sends such a pod; `drainguard inject` may read one from a file.
   */
  | { status: 'invalid'; problems: string[]; patch: []; warnings: string[] };
