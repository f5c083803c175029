/** What every mutation step receives. Steps write only through `builder` and `warn`. */
import type { Config } from '../../config/types';
import type { SidecarRef } from '../detect';
import type { DrainTiming } from '../drain-timing';
import type { GracePeriod } from '../grace-period';
import type { InstallTarget } from '../install-target';
import type { Container } from '../k8s';
import type { Overrides } from '../overrides';
import type { PatchBuilder } from '../patch-builder';
import type { PreStopKind } from '../hooks';
import type { ResolvedAdmin } from '../resolve-admin';
import type { PathSegment } from '../json-pointer';

export interface MutationContext {
  readonly builder: PatchBuilder;
  readonly config: Config;
  readonly overrides: Overrides;
  readonly envoyPath: readonly PathSegment[];
  readonly sidecars: readonly SidecarRef[];
  readonly grace: GracePeriod;
  readonly timing: DrainTiming;
  readonly admin: ResolvedAdmin;
  readonly preStopKind: PreStopKind;
  readonly installTarget: InstallTarget;
  /** The drain hook goes in: the preStop is replaceable and the program has somewhere to live. */
  readonly installDrain: boolean;
  warn(message: string): void;
}

/** Envoy as it is now in the draft (earlier steps' changes included). */
export function currentEnvoy(context: MutationContext): Container {
  return context.builder.read(context.envoyPath) as Container;
}
