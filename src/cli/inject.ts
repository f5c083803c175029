import { readFileSync } from 'node:fs';
import { isScalar, type Document } from 'yaml';
import { ConfigError } from '../config/load';
import type { Config } from '../config/types';
import type { Pod } from '../k8s';
import { PatchVerificationError } from '../mutate';
import type { MutationResult } from '../mutate/result';
import { describeLocation, type InjectedStream, type NoTemplateOutcome, type WorkloadReport, summarize } from './inject-results';
import { formatFlagHelp, parseFlags, type FlagSpecs } from './args';
import { unifiedDiffOfParts } from './diff';
import {
  DrainguardBugError,
  EXIT_BUG,
  EXIT_BUG_MEANING,
  EXIT_FAILURE,
  EXIT_FINDINGS,
  EXIT_OK,
  EXIT_USAGE,
  formatExitCodes,
  InputError,
  UsageError,
  type ExitCodeTable,
} from './errors';
import { explanationJson, formatExplanation } from './explain';
import { plain, type Paint } from './terminal';
import { findWorkloads, type Workload } from './pod-templates';
import { parseYamlStream } from './yaml-stream';
import { podViewOf } from './yaml-patch';
import { DocumentPatcher } from './yaml-splice';

/**
 * `drainguard inject`: the offline adapter over the core. It finds every pod template in the input,
 * asks `mutate` for the patch the webhook would send for that pod, and applies it to the template.
 * Documents it does not change are written back verbatim, so injecting its own output changes nothing.
 */

export type MutateFunction = (pod: Pod, config: Config) => MutationResult;

export const STDIN_NAME = '-';
const STDIN_LABEL = '<stdin>';

export function injectStream(source: string, text: string, mutate: MutateFunction, config: Config): InjectedStream {
  const result: InjectedStream = { source, documents: [], output: '', workloads: [], passedThrough: 0, rejections: [] };
  for (const streamDocument of parseYamlStream(text, source)) {
    const { number, source: documentText, document } = streamDocument;
    const workloads = findWorkloads(document);
    if (workloads.length === 0) {
      if (!isEmptyDocument(document)) result.passedThrough++;
      result.documents.push({ before: documentText, after: documentText });
      result.output += documentText;
      continue;
    }
    let changed = false;
    const patcher = new DocumentPatcher(streamDocument);
    for (const workload of workloads) {
      const location = { source, document: number, item: workload.item, kind: workload.kind, name: workload.name };
      const outcome = mutateWorkload(workload, document, patcher, mutate, config, location);
      if (outcome.status === 'denied') {
        result.rejections.push(`${describeLocation(location)}: denied: ${outcome.message}`);
        continue;
      }
      if (outcome.status === 'invalid') {
        result.rejections.push(`${describeLocation(location)}: not a valid pod template: ${outcome.problems.join('; ')}`);
        continue;
      }
      result.workloads.push({ ...location, outcome });
      changed ||= outcome.patch.length > 0;
    }
    // Only a document drainguard edited changes, and only where the patches change something.
    const after = changed ? printPatched(patcher, `${source}: document ${number}`) : documentText;
    result.documents.push({ before: documentText, after });
    result.output += after;
  }
  return result;
}

/** `---` with nothing after it but comments, as when files that start with `---` are concatenated. */
function isEmptyDocument(document: Document.Parsed): boolean {
  const { contents } = document;
  return contents === null || (isScalar(contents) && contents.value === null && contents.source === '');
}

function printPatched(patcher: DocumentPatcher, where: string): string {
  try {
    return patcher.print().text;
  } catch (error) {
    throw new DrainguardBugError(`${where}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

function mutateWorkload(
  workload: Workload,
  document: Document.Parsed,
  patcher: DocumentPatcher,
  mutate: MutateFunction,
  config: Config,
  location: Omit<WorkloadReport, 'outcome'>,
): MutationResult | NoTemplateOutcome {
  const { template } = workload;
  if (workload.aliased) {
    throw new InputError(
      `${describeLocation(location)}: its pod template is a YAML alias; inject edits templates in place, which would also edit the anchor: expand the alias first`,
    );
  }
  if (!template) return { status: 'skipped', reason: 'no-pod-template', message: 'the workload has no pod template', patch: [], warnings: [] };
  try {
    const outcome = mutate(podViewOf(document, template), config);
    if (outcome.patch.length > 0) patcher.apply(template, outcome.patch);
    return outcome;
  } catch (error) {
    if (error instanceof InputError) throw new InputError(`${describeLocation(location)}: ${error.message}`);
    // mutate answers every user mistake with a result (skipped, denied); anything thrown is ours.
    let reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    if (error instanceof PatchVerificationError && error.violations.length > 0) reason += ` (${error.violations.join('; ')})`;
    throw new DrainguardBugError(`${describeLocation(location)}: ${reason}`, { cause: error });
  }
}

/**
 * Concatenates several injected streams into one YAML stream: each must start a new document, and a
 * stream that starts with directives needs the previous one closed with `...`.
 */
export function joinStreams(texts: readonly string[]): string {
  let joined = '';
  for (const text of texts) {
    if (text === '') continue;
    if (joined !== '') {
      if (!joined.endsWith('\n')) joined += '\n';
      if (firstSignificantLine(text).startsWith('%')) joined += '...\n';
      else if (!/^---(\s|$)/.test(firstSignificantLine(text))) joined += '---\n';
    }
    joined += text;
  }
  return joined;
}

function firstSignificantLine(text: string): string {
  return text.split('\n').find((line) => line.trim() !== '' && !line.trimStart().startsWith('#')) ?? '';
}

/** Reads a file, or stdin for `-`; unreadable input is the user's to fix. */
export function readSourceFile(name: string): string {
  try {
    return readFileSync(name === STDIN_NAME ? 0 : name, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const label = name === STDIN_NAME ? STDIN_LABEL : name;
    if (code === 'ENOENT') throw new InputError(`${label}: no such file`);
    if (code === 'EISDIR') throw new InputError(`${label}: is a directory, not a YAML file`);
    if (code === 'EACCES') throw new InputError(`${label}: permission denied`);
    throw new InputError(`${label}: cannot read: ${error instanceof Error ? error.message : String(error)}`);
  }
}

export const INJECT_FLAGS = {
  filename: { type: 'string', short: 'f', multiple: true, valueName: 'FILE', description: "YAML to inject ('-' for stdin); may be repeated" },
  config: { type: 'string', valueName: 'FILE', description: 'drainguard configuration file (YAML); defaults otherwise' },
  diff: { type: 'boolean', description: 'print a unified diff of input and output instead of the YAML' },
  explain: { type: 'boolean', description: "print each workload's shutdown timeline and warnings instead of the YAML" },
  output: {
    type: 'string',
    short: 'o',
    valueName: 'FORMAT',
    values: ['yaml', 'json'],
    description: 'yaml (default) or json: the manifests (a List when there are several), or with --explain the explanation',
  },
  help: { type: 'boolean', short: 'h', description: 'show this help' },
} as const satisfies FlagSpecs;

export const INJECT_EXIT_CODES: ExitCodeTable = [
  [EXIT_OK, 'success; with --diff, no differences'],
  [EXIT_FINDINGS, '--diff only: the output differs from the input'],
  [EXIT_USAGE, 'usage error: unknown flag, missing -f, a stray argument'],
  [EXIT_FAILURE, 'unreadable or invalid input (YAML, a denied override annotation, a pod template, --config); nothing written'],
  [EXIT_BUG, EXIT_BUG_MEANING],
];

export const INJECT_USAGE = `Usage: drainguard inject -f FILE [-f FILE ...] [--config FILE] [--diff | --explain] [-o yaml|json]

Rewrites the Envoy pods and pod templates (Pod, Deployment, DaemonSet, StatefulSet, ReplicaSet, Job,
CronJob, also inside a List) in multi-document YAML exactly as the drainguard webhook would mutate the
pods, and writes the YAML to stdout. Every other document passes through byte for byte; running inject
on its own output changes nothing. Warnings and a summary go to stderr.

Flags:
${formatFlagHelp(INJECT_FLAGS)}

Examples:
  drainguard inject -f envoy.yaml | kubectl apply -f -
  kubectl get ds envoy -n projectcontour -o yaml | drainguard inject -f - --diff
  drainguard inject -f envoy.yaml --explain

${formatExitCodes(INJECT_EXIT_CODES)}`;

export interface InjectEnvironment {
  mutate: MutateFunction;
  defaultConfig: () => Config;
  loadConfigFile: (path: string) => Config;
  /** Returns the text of a file, or of stdin for `-`; throws an InputError when it cannot. */
  readSource: (name: string) => string;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Colours what goes to stdout (the diff) when it is a terminal; plain otherwise. */
  paint?: Paint;
}

/**
 * Returns the exit status: EXIT_FINDINGS when `--diff` found differences, else EXIT_OK. Throws
 * UsageError, InputError or DrainguardBugError for `main` to report.
 */
export function runInject(argv: readonly string[], environment: InjectEnvironment): number {
  const flags = parseFlags('drainguard inject', argv, INJECT_FLAGS);
  if (flags.help) {
    environment.stdout(INJECT_USAGE);
    return EXIT_OK;
  }
  if (flags.filename.length === 0) {
    throw new UsageError("drainguard inject: at least one -f FILE is required (-f - reads stdin); see 'drainguard inject --help'");
  }
  if (flags.filename.filter((name) => name === STDIN_NAME).length > 1) {
    throw new UsageError('drainguard inject: stdin (-f -) can be read only once');
  }
  if (flags.diff && flags.explain) {
    throw new UsageError('drainguard inject: --diff and --explain cannot be combined');
  }
  const output = flags.output ?? 'yaml';
  if (output !== 'yaml' && output !== 'json') {
    throw new UsageError(`drainguard inject: -o/--output must be yaml or json, not ${JSON.stringify(output)} (see 'drainguard inject --help')`);
  }
  if (flags.diff && output === 'json') throw new UsageError('drainguard inject: --diff prints a unified diff; it cannot be -o json');

  const config = flags.config === undefined ? environment.defaultConfig() : loadConfig(flags.config, environment);
  // Every source is read and parsed before anything is written: a bad document anywhere means no partial output.
  const streams = flags.filename.map((name) =>
    injectStream(name === STDIN_NAME ? STDIN_LABEL : name, environment.readSource(name), environment.mutate, config),
  );
  const rejections = streams.flatMap((stream) => stream.rejections);
  if (rejections.length > 0) throw new InputError(rejections.join('\n'));

  for (const { workloads } of streams) {
    for (const workload of workloads) {
      for (const warning of workload.outcome.warnings) environment.stderr(`warning: ${describeLocation(workload)}: ${warning}\n`);
    }
  }
  let status = EXIT_OK;
  const workloads = streams.flatMap((stream) => stream.workloads);
  if (flags.diff) {
    for (const stream of streams) {
      const diff = unifiedDiffOfParts(stream.documents, { file: stream.source, oldHeader: 'original', newHeader: 'injected' });
      if (diff !== '') status = EXIT_FINDINGS;
      environment.stdout(paintDiff(diff, environment.paint ?? plain));
    }
  } else if (flags.explain) {
    environment.stdout(output === 'json' ? `${JSON.stringify(explanationJson(workloads), null, 2)}\n` : formatExplanation(workloads));
  } else if (output === 'json') {
    environment.stdout(`${JSON.stringify(manifestsAsJson(streams), null, 2)}\n`);
  } else {
    environment.stdout(joinStreams(streams.map((stream) => stream.output)));
  }
  environment.stderr(`${summarize(streams)}\n`);
  return status;
}

/**
 * git's colours: the two file lines bold, hunk headers cyan, removed lines red, added lines green.
 * One stream's diff has its file lines first and only there; every later line is in a hunk.
 */
function paintDiff(diff: string, paint: Paint): string {
  if (paint === plain || diff === '') return diff;
  const lines = diff.split('\n');
  return lines
    .map((line, index) => {
      if (index < 2 && (line.startsWith('--- ') || line.startsWith('+++ '))) return paint('file', line);
      if (line.startsWith('@@')) return paint('hunk', line);
      if (line.startsWith('-')) return paint('removed', line);
      if (line.startsWith('+')) return paint('added', line);
      return line;
    })
    .join('\n');
}

/**
 * The injected manifests as JSON, as `kubectl get -o json` prints them: the one object, or a `List`
 * of every object (the items of a `List` document included, so kubectl never sees a List in a List).
 */
function manifestsAsJson(streams: readonly InjectedStream[]): unknown {
  const objects: unknown[] = [];
  for (const stream of streams) {
    for (const streamDocument of parseYamlStream(stream.output, stream.source)) {
      if (isEmptyDocument(streamDocument.document)) continue;
      const value = streamDocument.document.toJS() as { kind?: unknown; items?: unknown } | null;
      if (value !== null && typeof value === 'object' && value.kind === 'List' && Array.isArray(value.items)) objects.push(...value.items);
      else objects.push(value);
    }
  }
  return objects.length === 1 ? objects[0] : { apiVersion: 'v1', kind: 'List', metadata: {}, items: objects };
}

function loadConfig(path: string, environment: InjectEnvironment): Config {
  try {
    return environment.loadConfigFile(path);
  } catch (error) {
    // A ConfigError is written for users (it names the file and the bad setting); anything else is a bug.
    if (error instanceof ConfigError) throw new InputError(error.message);
    throw error;
  }
}
