/**
 * The drain settings a user gave the upstream shutdown-manager, carried over into drainguard's drain
 * (docs/pod-changes.md, "Drain settings"), and its component's defaults where the pod gives no flag.
 * Each flag of the replaced commands either maps to a drain setting, names the admin address (admin.ts),
 * or has no drainguard equivalent and is reported.
 *
 * A flag whose loss changes nothing (the file handshake's and the sidecar server's) is listed for
 * `--explain` only; a flag drainguard cannot keep is a warning. A default that differs between the
 * releases the pod may run is not guessed: it is reported as undetermined.
 */
import type { Config, SidecarMode } from '../../config/types';
import type { Overrides } from '../parse';
import type { CarriedSetting, CarriedValue, ComponentRelease, ShutdownCommandFacts, UndeterminedDefault } from '../facts';

/** A flag that goes with the sidecar and whose loss changes nothing: `--explain` lists it. */
export interface DroppedFlag {
  container: string;
  flag: string;
  reason: string;
}

export interface CarriedSettings {
  /** The settings carried over: flags first, then defaults for what no flag gives. */
  values: Partial<Record<CarriedSetting, CarriedValue>>;
  /** Conversions, conflicts and flags drainguard cannot keep: every one reported. */
  warnings: string[];
  /** Flags whose loss changes nothing. */
  dropped: DroppedFlag[];
  /** Defaults that cannot be told, for settings no flag gives. */
  undetermined: UndeterminedDefault[];
  /** The replaced components whose defaults were read, and their releases. */
  releases: ComponentRelease[];
}

/**
 * The commands whose flags stop applying when the drain goes in: every preStop (Envoy's own, the
 * sidecar's), and in remove mode the sidecar's command line too. A disarmed sidecar keeps running its
 * command line, so those flags still apply there.
 */
function replacedCommands(commands: readonly ShutdownCommandFacts[], mode: SidecarMode): ShutdownCommandFacts[] {
  return commands.filter((command) => command.place === 'preStop' || mode === 'remove');
}

function flagValues(replaced: readonly ShutdownCommandFacts[], values: CarriedSettings['values'], warnings: string[]): DroppedFlag[] {
  // Made for the first flag that needs them: most replaced commands carry no such flag, or none at all.
  let unknown: Set<string> | undefined;
  let noEffect: Map<string, DroppedFlag> | undefined;
  for (const command of replaced) {
    const countsFromStart = command.program === 'envoy-gateway';
    for (const flag of command.flags) {
      const { meaning } = flag;
      // Each flag once per container, even when the sidecar's command line and its preStop both carry it.
      if (meaning.kind === 'unknown') {
        (unknown ??= new Set()).add(`container ${command.containerName}: sidecar flag ${flag.text} dropped: not a flag drainguard knows, so it cannot keep what it did`);
      } else if (meaning.kind === 'no-effect') {
        (noEffect ??= new Map()).set(`${command.containerName} ${flag.text}`, { container: command.containerName, flag: flag.text, reason: meaning.reason });
      } else if (meaning.kind === 'unreadable-setting') warnings.push(`${flag.text} of ${command.where}: ${meaning.problem}; ignored`);
      else if (meaning.kind === 'setting') {
        const from = `${flag.text} of ${command.where}`;
        const earlier = values[meaning.setting];
        if (earlier !== undefined) {
          if (earlier.value !== meaning.value) warnings.push(`${from} disagrees with ${earlier.from}; the first is used`);
          continue;
        }
        if (meaning.adjustments.length > 0) warnings.push(`${from}: ${meaning.adjustments.join(', ')}`);
        values[meaning.setting] = { value: meaning.value, from, adjustments: meaning.adjustments, origin: 'sidecar-flag', countsFromStart };
      }
    }
  }
  // One warning per flag: a list in one warning would lose its end to the API server's 256-character cut.
  if (unknown !== undefined) for (const warning of unknown) warnings.push(warning);
  return noEffect === undefined ? [] : Array.from(noEffect.values());
}

// Loops rather than `some` with a closure: these run for every default of every replaced command.
function hasNamed(releases: readonly ComponentRelease[], name: string): boolean {
  for (const release of releases) if (release.name === name) return true;
  return false;
}

function hasSetting(undetermined: readonly UndeterminedDefault[], setting: CarriedSetting): boolean {
  for (const one of undetermined) if (one.setting === setting) return true;
  return false;
}

/** The settings the replaced commands give: their flags, then their components' defaults at their releases. */
export function carriedSettings(commands: readonly ShutdownCommandFacts[], mode: SidecarMode): CarriedSettings {
  const replaced = replacedCommands(commands, mode);
  // The flags' settings first; a default only fills a setting no flag gave (nor an earlier default).
  const values: CarriedSettings['values'] = {};
  const warnings: string[] = [];
  const dropped = flagValues(replaced, values, warnings);
  const undetermined: UndeterminedDefault[] = [];
  const releases: ComponentRelease[] = [];
  for (const { component } of replaced) {
    if (component === undefined) continue;
    if (!hasNamed(releases, component.release.name)) releases.push(component.release);
    for (const entry of component.defaults) {
      // A flag given but unreadable is ignored (with a warning): the default stands for it.
      if (values[entry.setting] !== undefined) continue;
      const reading = entry.read();
      if ('value' in reading) values[entry.setting] = reading.value;
      else if (!hasSetting(undetermined, entry.setting)) undetermined.push(reading.undetermined);
    }
  }
  return { values, warnings, dropped, undetermined, releases };
}

/**
 * What applies instead of a component default that cannot be told, and the annotation that sets it:
 * first in the warning, which the API server cuts after 256 characters.
 */
const FALLBACKS: Readonly<Record<CarriedSetting, string>> = {
  drainDelaySeconds: "the drain delay is drainguard's drain.drainDelaySeconds (set drainguard.io/drain-delay to choose)",
  minDrainSeconds: "the minimum drain is drainguard's drain.minDrainSeconds (set drainguard.io/min-drain to choose)",
  minConnections: "the connection threshold is drainguard's drain.minConnections (set drainguard.io/min-connections to choose)",
  pollIntervalSeconds: "the poll interval is drainguard's drain.pollIntervalSeconds",
  drainTimeoutSeconds: 'the drain deadline follows the grace period alone',
  readyTimeoutSeconds: 'the drain deadline follows the grace period alone',
};

function undeterminedWarning(undetermined: UndeterminedDefault): string {
  return (
    `container ${undetermined.container}: ${FALLBACKS[undetermined.setting]}: the default of ${undetermined.what} ` +
    `(${undetermined.history}) depends on the release, and ${undetermined.why}`
  );
}

/**
 * Whether a setting is decided before any component default: by its annotation, by drainguard's
 * earlier hook, or by the operator's configuration.
 */
function decidedAhead(setting: CarriedSetting, overrides: Overrides, previousHook: boolean, config: Config): boolean {
  if (previousHook) return true;
  if (setting === 'drainDelaySeconds') return overrides.drainDelaySeconds !== undefined || config.drain.drainDelaySeconds !== undefined;
  if (setting === 'minDrainSeconds') return overrides.minDrainSeconds !== undefined || config.drain.minDrainSeconds !== undefined;
  if (setting === 'minConnections') return overrides.minConnections !== undefined || config.drain.minConnections !== undefined;
  if (setting === 'pollIntervalSeconds') return config.drain.pollIntervalSeconds !== undefined;
  return false;
}

/**
 * The warnings for the defaults that cannot be told, of settings nothing decides ahead of them (their
 * annotation, drainguard's earlier hook, or the operator's configuration).
 */
export function undeterminedWarnings(carried: CarriedSettings, overrides: Overrides, previousHook: boolean, config: Config): string[] {
  return carried.undetermined.filter((undetermined) => !decidedAhead(undetermined.setting, overrides, previousHook, config)).map(undeterminedWarning);
}
