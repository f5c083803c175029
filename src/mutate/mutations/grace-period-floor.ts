/** Step 8 (opt-in): raise terminationGracePeriodSeconds to the configured floor so a drain has room. */
import type { MutationContext } from './context';

export function applyGracePeriodFloor(context: MutationContext): void {
  if (!context.grace.raise) return;
  context.builder.set(['spec', 'terminationGracePeriodSeconds'], context.grace.effectiveSeconds);
}
