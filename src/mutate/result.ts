/**
 * What `mutate(pod, config)` answers, and the types it is made of: each lives with the stage that
 * produces it (the patch stage the answer and its operations, the plan the timeline, the actions and
 * the skip reasons) and is re-exported here, where the adapters import it.
 */
export type { MutationResult, PatchOperation } from './patch';
export type { AdminAddressSource, DrainSetting, DrainValueOrigin, DrainValueSource, MutationAction, ShutdownTimeline, SkipReason } from './plan';
