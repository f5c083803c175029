/** Everything decided from the input pod before any change is made. */
import type { Config } from '../config/types';
import { findShutdownManagers } from './detect';
import { drainTiming } from './drain-timing';
import { gracePeriod } from './grace-period';
import { classifyPreStop, describeHandler } from './hooks';
import { findInstallTarget } from './install-target';
import type { Container, Pod } from './k8s';
import type { MutationContext } from './mutations/context';
import type { Overrides } from './overrides';
import { resolveAdminAddress } from './resolve-admin';

export type Analysis = Omit<MutationContext, 'builder' | 'warn'> & { warnings: string[] };

export function analyse(pod: Pod, config: Config, overrides: Overrides, envoyIndex: number): Analysis {
  const envoy = pod.spec.containers[envoyIndex] as Container;
  const warnings: string[] = [];
  const sidecars = findShutdownManagers(pod, config, envoyIndex);
  const grace = gracePeriod(pod, config);
  const timing = drainTiming(grace.effectiveSeconds, overrides, config);
  for (const warning of timing.warnings) warnings.push(warning);
  const { admin, warnings: adminWarnings } = resolveAdminAddress(pod, envoy, sidecars, overrides.adminAddress);
  for (const warning of adminWarnings) warnings.push(warning);

  const preStop = envoy.lifecycle?.preStop;
  const preStopKind = classifyPreStop(preStop, sidecars);
  const installTarget = findInstallTarget(pod, envoy, config);
  const consequence = 'no installer was added and the shutdown-manager sidecar (if any) was neither removed nor disarmed';
  if (preStopKind === 'user' && preStop !== undefined) {
    warnings.push(
      `container ${envoy.name}: its preStop hook (${describeHandler(preStop)}) is not a recognised shutdown-manager hook and was kept: ` +
        `the drain was NOT installed; ${consequence}`,
    );
  } else if (installTarget.kind === 'impossible') {
    warnings.push(`the drain was NOT installed: ${installTarget.reason}; ${consequence}`);
  }
  const installDrain = preStopKind !== 'user' && installTarget.kind !== 'impossible';

  return {
    config,
    overrides,
    envoyPath: ['spec', 'containers', envoyIndex],
    sidecars,
    grace,
    timing,
    admin,
    preStopKind,
    installTarget,
    installDrain,
    warnings,
  };
}
