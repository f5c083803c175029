/**
 * What a replaced upstream shutdown component would have done where the pod gives it no flag: its
 * compiled-in default at the release it runs, as read in its source (docs/upstream-shapes.md, sections
 * 1-2, "Defaults by release"). drainguard keeps the effective behaviour of what it replaces, so a flag
 * the pod does not show still means that release's default, never drainguard's own default; only a
 * setting the operator set in drainguard's configuration outranks it (src/mutate/plan/timing.ts).
 *
 * The release is read from the component's image tag (`ghcr.io/projectcontour/contour:v1.30.0`,
 * Bitnami's `1.32.1-debian-12-r0`) or, where the tag does not tell (`latest`, a digest, a private tag),
 * from flags that only some releases render. A default that differs between the releases the pod may
 * run is not guessed: the configured setting applies, else drainguard's default with a warning naming
 * the annotation to set.
 */
import type { Container, Pod } from '../../k8s';
import type { EnvoyArgs } from './envoy-args';
import { imageName } from './identity';
import type { ShutdownCommand } from './upstream-commands';
import type { CarriedSetting, ShutdownSubcommand, UpstreamProgram } from './upstream-flags';
import { isProgram } from './words';

/** A drain setting carried over from the replaced component: its flag's value, or its default at its release. */
export interface CarriedValue {
  value: number;
  /** `--check-delay=5s of \`contour envoy shutdown\` (container shutdown-manager, preStop)`, or the default's description. */
  from: string;
  /** What had to change for drainguard to carry it (rounded, clamped), empty when nothing did. */
  adjustments: string[];
  origin: 'sidecar-flag' | 'component-default';
  /**
   * A minimum drain the component counts from the start of its drain (Envoy Gateway), where
   * drainguard counts it from the failed health check, after the drain delay.
   */
  countsFromStart: boolean;
}

/** A release number: `[major, minor, patch]`. */
export type Version = readonly [number, number, number];

/** The releases the pod may run, `from` included, `until` excluded (open when undefined), and how that is known. */
export interface ReleaseRange {
  from: Version;
  until?: Version;
  /** `image tag v1.30.0 of container shutdown-manager`. */
  how: string;
}

interface Era {
  from: Version;
  value: number;
}

interface DefaultRule {
  setting: CarriedSetting;
  /** The flag whose default this is; undefined for behaviour no flag changes (Envoy Gateway polls every second). */
  flag?: string;
  /** Ascending; a release before the first era was not read, so its default is unknown. */
  eras: readonly Era[];
  /** Said instead of the eras' history. */
  note?: string;
}

interface Component {
  /** For messages: `Contour`, `Envoy Gateway`. */
  name: string;
  /** Image repository names (the last path segment) whose tag is this component's release. */
  images: readonly string[];
  /** The newest release whose source was read: `main` images are taken as newer than it. */
  checkedUpTo: Version;
  /** Whether a `main` image tag is the development branch after `checkedUpTo`. */
  mainIsNewest: boolean;
  rules: Readonly<Partial<Record<ShutdownSubcommand, readonly DefaultRule[]>>>;
}

const V = (major: number, minor: number, patch: number): Version => [major, minor, patch];

/**
 * Read at every release tag of each repository (docs/upstream-shapes.md lists them): Contour's
 * `cmd/contour/shutdownmanager.go` (kingpin defaults and `newShutdownContext`), Envoy Gateway's
 * `internal/cmd/envoy.go` and `internal/cmd/envoy/shutdown_manager.go`; and the newest stored sources
 * after the last release read: Contour main and release-1.33 after v1.33.6 changed none of them, Envoy
 * Gateway main after v1.9.0 none of the defaults (docs/upstream-shapes.md, "Envoy Gateway main after v1.9").
 */
const COMPONENTS: Readonly<Record<UpstreamProgram, Component>> = {
  contour: {
    name: 'Contour',
    images: ['contour'],
    checkedUpTo: V(1, 33, 6),
    mainIsNewest: true,
    rules: {
      shutdown: [
        { setting: 'drainDelaySeconds', flag: 'drain-delay', eras: [{ from: V(1, 10, 0), value: 0 }] },
        { setting: 'minDrainSeconds', flag: 'check-delay', eras: [{ from: V(1, 10, 0), value: 60 }, { from: V(1, 22, 0), value: 0 }] },
        { setting: 'pollIntervalSeconds', flag: 'check-interval', eras: [{ from: V(1, 10, 0), value: 5 }] },
        { setting: 'minConnections', flag: 'min-open-connections', eras: [{ from: V(1, 10, 0), value: 0 }] },
      ],
    },
  },
  'envoy-gateway': {
    name: 'Envoy Gateway',
    images: ['gateway', 'gateway-dev'],
    checkedUpTo: V(1, 9, 0),
    // The dev image's `latest` is the default in every release's source, replaced by the release tag
    // when it is built: in testdata and dev builds it says nothing about the release.
    mainIsNewest: false,
    rules: {
      shutdown: [
        { setting: 'drainTimeoutSeconds', flag: 'drain-timeout', eras: [{ from: V(1, 0, 0), value: 600 }, { from: V(1, 2, 0), value: 60 }] },
        { setting: 'minDrainSeconds', flag: 'min-drain-duration', eras: [{ from: V(1, 0, 0), value: 5 }, { from: V(1, 2, 0), value: 10 }] },
        { setting: 'minConnections', flag: 'exit-at-connections', eras: [{ from: V(1, 0, 0), value: 0 }] },
        // --health-check-failure-delay (from v1.9) defaults to 0s; before it there is no delay at all. The
        // EnvoyProxy field behind it, shutdown.healthCheckFailureDelay in v1.9, is readinessFailureDelay on
        // main (release note 9210); the flag keeps its name (internal/cmd/envoy.go at 01d70312).
        {
          setting: 'drainDelaySeconds',
          flag: 'health-check-failure-delay',
          eras: [{ from: V(1, 0, 0), value: 0 }],
          note: 'no delay in any release; the flag, set by the EnvoyProxy field readinessFailureDelay (healthCheckFailureDelay in v1.9), exists from v1.9.0',
        },
        // `time.Sleep(1 * time.Second)` between two polls, in every release.
        { setting: 'pollIntervalSeconds', eras: [{ from: V(1, 0, 0), value: 1 }], note: 'not a flag: it polls every second in every release' },
      ],
      'shutdown-manager': [{ setting: 'readyTimeoutSeconds', flag: 'ready-timeout', eras: [{ from: V(1, 0, 0), value: 610 }] }],
    },
  },
};

export function formatVersion(version: Version): string {
  // Not `version.join('.')`: a join goes through the runtime; the same text from the three numbers costs
  // a fifth of it, and the plan formats versions into its texts on every Contour pod.
  return `v${version[0]}.${version[1]}.${version[2]}`;
}

function compare(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

const RELEASE_TAG = /^v?(\d{1,4})\.(\d{1,4})\.(\d{1,6})(?![\d.])/;

/** The tag of an image reference, without registry or digest; undefined when it has none. */
function imageTag(image: string): string | undefined {
  // Up to the first `@` (the digest), found in place rather than by splitting the reference.
  const at = image.indexOf('@');
  const withoutDigest = at === -1 ? image : image.slice(0, at);
  const colon = withoutDigest.lastIndexOf(':');
  return colon > withoutDigest.lastIndexOf('/') ? withoutDigest.slice(colon + 1) : undefined;
}

/** The release an image tag names: `v1.30.0`, Bitnami's `1.32.1-debian-12-r0`. */
export function tagRelease(image: string): Version | undefined {
  const match = RELEASE_TAG.exec(imageTag(image) ?? '');
  return match ? V(Number(match[1]), Number(match[2]), Number(match[3])) : undefined;
}

/** Whether one of `words` runs `program`. */
function namesProgram(words: readonly unknown[] | undefined, program: UpstreamProgram): boolean {
  if (words === undefined) return false;
  for (const word of words) if (typeof word === 'string' && isProgram(word, program)) return true;
  return false;
}

/** The containers of `list` that run `program`, into `firsts` when named `first`, else into `others`. */
function sortRunning(list: readonly Container[], program: UpstreamProgram, first: string, firsts: Container[], others: Container[]): void {
  for (const container of list) {
    if (namesProgram(container.command, program) || namesProgram(container.args, program)) (container.name === first ? firsts : others).push(container);
  }
}

/** The containers that run the component's program, `first` (the replaced command's) before the others. */
function containersRunning(pod: Pod, program: UpstreamProgram, first: string): Container[] {
  // Loops rather than spreads of command + args and of the two lists, and no closure per call: this
  // runs for every replaced command, and the intermediate arrays were most of its cost.
  const firsts: Container[] = [];
  const others: Container[] = [];
  sortRunning(pod.spec.containers, program, first, firsts, others);
  if (pod.spec.initContainers !== undefined) sortRunning(pod.spec.initContainers, program, first, firsts, others);
  return firsts.length === 0 ? others : firsts.concat(others);
}

/** Envoy Gateway's releases as the flags it renders show them (proxy_args.go, resource.go at each tag). */
function envoyGatewayRangeFromFlags(envoyArgs: EnvoyArgs, commands: readonly ShutdownCommand[]): ReleaseRange | undefined {
  const drainTimeout = commands.some((c) => c.program === 'envoy-gateway' && c.flags.some((f) => f.name === 'drain-timeout'));
  if (drainTimeout) return undefined;
  const drainTime = envoyArgs.drainTimeSeconds !== undefined;
  return drainTime
    ? { from: V(1, 2, 0), how: "Envoy has --drain-time-s and the shutdown-manager no --drain-timeout, which Envoy Gateway renders from v1.2.0 on" }
    : { from: V(1, 0, 0), until: V(1, 2, 0), how: 'Envoy has no --drain-time-s and the shutdown-manager no --drain-timeout: Envoy Gateway v1.0 to v1.1 by default' };
}

/** Which releases of `command`'s program the pod runs, or why that cannot be told. */
function componentRelease(pod: Pod, envoyArgs: EnvoyArgs, command: ShutdownCommand, commands: readonly ShutdownCommand[]): { range: ReleaseRange } | { unknown: string } {
  const { program } = command;
  const component = COMPONENTS[program];
  // Image → the containers that run it without a release tag; made for the first such image (a
  // release tag usually answers first).
  let seen: Map<string, string[]> | undefined;
  for (const container of containersRunning(pod, program, command.containerName)) {
    const image = container.image;
    if (image === undefined || !component.images.includes(imageName(image) ?? '')) continue;
    const version = tagRelease(image);
    if (version !== undefined) return { range: { from: version, until: V(version[0], version[1], version[2] + 1), how: `the image tag of container ${container.name}` } };
    if (component.mainIsNewest && imageTag(image) === 'main') {
      return { range: { from: component.checkedUpTo, how: `image tag main of container ${container.name}: the development branch, after ${formatVersion(component.checkedUpTo)}` } };
    }
    seen ??= new Map();
    const names = seen.get(image);
    if (names === undefined) seen.set(image, [container.name]);
    else names.push(container.name);
  }
  if (program === 'envoy-gateway') {
    const range = envoyGatewayRangeFromFlags(envoyArgs, commands);
    if (range !== undefined) return { range };
  }
  const described = seen === undefined ? [] : [...seen].map(([image, names]) => `${image} (container${names.length > 1 ? 's' : ''} ${names.join(', ')})`);
  const images =
    described.length === 0
      ? `no ${component.name} image with a release tag`
      : `the image${described.length > 1 ? 's' : ''} ${described.join(', ')} ${described.length > 1 ? 'have' : 'has'} no release tag`;
  return { unknown: images };
}

/** The value of `rule` over `range`, when every release in it has the same one. */
function valueOver(rule: DefaultRule, range: ReleaseRange): number | undefined {
  if (compare(range.from, rule.eras[0]!.from) < 0) return undefined;
  let value: number | undefined;
  // Indexed: an `entries()` iterator allocates a pair per era, and this runs per default per pod.
  for (let index = 0; index < rule.eras.length; index += 1) {
    const era = rule.eras[index] as Era;
    const next = rule.eras[index + 1];
    const overlaps = (next === undefined || compare(range.from, next.from) < 0) && (range.until === undefined || compare(era.from, range.until) < 0);
    if (!overlaps) continue;
    if (value !== undefined && value !== era.value) return undefined;
    value = era.value;
  }
  return value;
}

/**
 * Each rule's history, written once: the rules are the constant table above and the text depends on
 * nothing else (the unit is the rule's setting's), so the cache changes no answer; it spares every
 * Contour pod formatting the same versions into the same text.
 */
const HISTORIES = new WeakMap<DefaultRule, string>();

/** `60s from v1.10.0, 0s from v1.22.0`: a rule's history, for messages. */
function history(rule: DefaultRule): string {
  let text = HISTORIES.get(rule);
  if (text === undefined) {
    text = writeHistory(rule, UNITS[rule.setting]);
    HISTORIES.set(rule, text);
  }
  return text;
}

function writeHistory(rule: DefaultRule, unit: string): string {
  if (rule.note !== undefined) return rule.note;
  if (rule.eras.length === 1) return `the same in every release from ${formatVersion(rule.eras[0]!.from)}`;
  return rule.eras.map((era) => `${era.value}${unit} from ${formatVersion(era.from)}`).join(', ');
}

/** `v1.30.0`, `v1.2.0 or later`, `v1.0.0 up to before v1.2.0`. */
export function describeRange(range: ReleaseRange): string {
  const [major, minor, patch] = range.from;
  if (range.until === undefined) return `${formatVersion(range.from)} or later`;
  if (compare(range.until, V(major, minor, patch + 1)) === 0) return formatVersion(range.from);
  return `${formatVersion(range.from)} up to before ${formatVersion(range.until)}`;
}

const UNITS: Readonly<Record<CarriedSetting, string>> = {
  drainDelaySeconds: 's',
  minDrainSeconds: 's',
  pollIntervalSeconds: 's',
  minConnections: '',
  drainTimeoutSeconds: 's',
  readyTimeoutSeconds: 's',
};

function commandWords(program: UpstreamProgram, subcommand: ShutdownSubcommand): string {
  return `${program} envoy ${subcommand}`;
}

/** A default that differs between the releases the pod may run, so that it cannot be kept. */
export interface UndeterminedDefault {
  setting: CarriedSetting;
  container: string;
  /** `` `contour envoy shutdown --check-delay` `` */
  what: string;
  /** `60s from v1.10.0, 0s from v1.22.0` */
  history: string;
  /** `its release cannot be told: the image … has no release tag`, after "depends on the release, and" */
  why: string;
}

/** A replaced component and the release drainguard read its defaults for (`--explain`). */
export interface ComponentRelease {
  /** `Contour`, `Envoy Gateway`. */
  name: string;
  /** `v1.30.0`, `v1.2.0 or later`, `release unknown`. */
  release: string;
  /** How the release was told, or why it cannot be. */
  how: string;
}

/**
 * One default of a replaced command's component, at its release: its value, or why it cannot be told.
 * `read` works it out when the plan asks: a setting a flag or an earlier command already gives needs
 * no default, and the default's text (its release and history) costs more than the rest of the reading.
 */
export interface ComponentDefault {
  readonly setting: CarriedSetting;
  read(): { value: CarriedValue } | { undetermined: UndeterminedDefault };
}

/** The replaced component a shutdown command belongs to: its release, and its defaults there in the rules' order. */
export interface CommandComponent {
  release: ComponentRelease;
  defaults: ComponentDefault[];
}

/**
 * The component of each command in `commands` whose component has defaults for its subcommand: each
 * program's release is read once, from its first such command, and holds for all of them.
 */
export function readComponents(pod: Pod, envoyArgs: EnvoyArgs, commands: readonly ShutdownCommand[]): (CommandComponent | undefined)[] {
  const releases = new Map<UpstreamProgram, { reading: ReturnType<typeof componentRelease>; release: ComponentRelease }>();
  return commands.map((command) => {
    const component = COMPONENTS[command.program];
    const rules = component.rules[command.subcommand] ?? [];
    if (rules.length === 0) return undefined;
    let known = releases.get(command.program);
    if (known === undefined) {
      const reading = componentRelease(pod, envoyArgs, command, commands);
      const release =
        'range' in reading
          ? { name: component.name, release: describeRange(reading.range), how: reading.range.how }
          : { name: component.name, release: 'release unknown', how: reading.unknown };
      known = { reading, release };
      releases.set(command.program, known);
    }
    const release = known.reading;
    const releaseDescribed = known.release.release;
    const words = commandWords(command.program, command.subcommand);
    const defaults = rules.map((rule): ComponentDefault => ({
      setting: rule.setting,
      read: () => {
        const what = rule.flag === undefined ? `\`${words}\`` : `\`${words} --${rule.flag}\``;
        // A release that cannot be told may be any release read: a default they all share still holds.
        const range: ReleaseRange = 'range' in release ? release.range : { from: rule.eras[0]!.from, how: release.unknown };
        const value = valueOver(rule, range);
        if (value === undefined) {
          const why = 'range' in release ? `the pod may run releases on either side (${release.range.how})` : `its release cannot be told: ${release.unknown}`;
          return { undetermined: { setting: rule.setting, container: command.containerName, what, history: history(rule), why } };
        }
        // With a range it is `range` itself, already described once for the command's release above.
        const releaseText = 'range' in release ? releaseDescribed : '(any release)';
        return {
          value: {
            value,
            from: `${component.name} ${releaseText} default of ${what} (${history(rule)})`,
            adjustments: [],
            origin: 'component-default',
            countsFromStart: command.program === 'envoy-gateway',
          },
        };
      },
    }));
    return { release: known.release, defaults };
  });
}
