/**
 * Golden tests over the corpus of real upstream manifests (test/fixtures/upstream).
 *
 * Every fixture goes through both adapters of the core:
 * - the webhook: `decideAdmission` on the AdmissionReview of each pod its workloads create (the pod a
 *   controller creates from the template, as the API server sends it), its base64 JSON Patch applied
 *   with an independent RFC 6902 implementation;
 * - `drainguard inject`, the built CLI run as a process, on the file (YAML and --explain).
 * The test fails when the two disagree (patched pod, outcome, warnings), when the result differs from
 * the committed goldens in this directory, when a second pass changes anything, or when a patched pod
 * breaks the Kubernetes Pod schema (unknown fields included).
 *
 * Goldens record today's behaviour, mistakes included; a change of behaviour regenerates them with
 * `npm run golden:update` (UPDATE_GOLDEN=1) and the diff is reviewed like code. Per fixture:
 * - NAME.injected.yaml  stdout of `drainguard inject -f FIXTURE`
 * - NAME.explain.txt    stdout of `drainguard inject -f FIXTURE --explain`
 * - NAME.warnings.txt   per workload, the webhook's outcome and the warnings the API server would relay
 *
 * Every fixture runs under the default configuration. A variant runs some fixtures again under a
 * configuration file of test/fixtures/config (the webhook given the same file parsed, `inject` given
 * `--config`), with goldens named NAME.VARIANT.*; where a variant changes how the drain program is
 * delivered, a pod rewritten under either configuration and admitted again under the other must end
 * exactly as a fresh admission under the other.
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { decideAdmission, shapeWarnings, type AdmissionDecision } from '../../src/admission';
import { defaultConfig, type Config } from '../../src/config';
import type { Pod } from '../../src/k8s';
import { buildCli, drainguard } from '../e2e/cli/run-cli';
import { admissionReview } from '../integration/server/webhook-test-kit';
import { REPO_ROOT } from '../support/repo';
import { applyIndependently } from '../support/independent-patch';
import { GOLDEN_VARIANTS as VARIANTS, variantConfig, type GoldenVariant } from '../support/golden-variants';
import { podSchemaProblems } from '../support/pod-schema';
import {
  asSentByApiServer,
  upstreamFixtures,
  workloadsIn,
  type UpstreamFixture,
  type UpstreamWorkload,
} from '../support/upstream-fixtures';

const GOLDEN_DIR = join(REPO_ROOT, 'test/golden');
const UPDATE = process.env.UPDATE_GOLDEN === '1';
const GOLDEN_SUFFIXES = ['.injected.yaml', '.explain.txt', '.warnings.txt'] as const;

const fixtures = upstreamFixtures();

/** The default configuration's run, and each variant's. */
interface Run {
  /** `''`, or `.VARIANT` in golden file names. */
  suffix: string;
  config: Config;
  cliArgs: string[];
  configPath: string | undefined;
}
const DEFAULT_RUN: Run = { suffix: '', config: defaultConfig(), cliArgs: [], configPath: undefined };
const variantRun = (variant: GoldenVariant): Run => ({
  suffix: `.${variant.name}`,
  config: variantConfig(variant),
  cliArgs: ['--config', variant.configPath],
  configPath: variant.configPath,
});

interface WebhookAnswer {
  workload: UpstreamWorkload;
  decision: AdmissionDecision;
  response: { allowed: boolean; patch?: string; warnings?: string[]; status?: { message: string } };
  /** The pod the review carried, as the API server sends it. */
  sent: Pod;
  /** The pod as the API server would store it: the review's pod with the answer's patch applied. */
  patched: Pod;
}

function ask(pod: Pod, config: Config): { decision: AdmissionDecision; response: WebhookAnswer['response'] } {
  const decision = decideAdmission(admissionReview(pod), config);
  if (decision.httpStatus !== 200) throw new Error(`webhook answered HTTP ${decision.httpStatus}: ${JSON.stringify(decision.body)}`);
  return { decision, response: (decision.body as { response: WebhookAnswer['response'] }).response };
}

function patchOf(response: WebhookAnswer['response']): unknown[] {
  return response.patch === undefined ? [] : (JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')) as unknown[]);
}

function webhookAnswer(workload: UpstreamWorkload, config: Config): WebhookAnswer {
  const sent = asSentByApiServer(workload.pod);
  const { decision, response } = ask(sent, config);
  return { workload, decision, response, sent, patched: applyIndependently(sent, patchOf(response)) };
}

/** The pod `pod` becomes when admitted under `config`. */
function admitted(pod: Pod, config: Config): Pod {
  return applyIndependently(pod, patchOf(ask(pod, config).response));
}

/** `test/fixtures/upstream/x.yaml: document 1: DaemonSet projectcontour/envoy: `, the CLI's prefix for a workload. */
function cliLocation(fixture: UpstreamFixture, workload: UpstreamWorkload): string {
  return `${fixture.relativePath}: document ${workload.document}: ${workload.label}: `;
}

/** The CLI's stderr warnings about one workload, without their location prefix. */
function cliWarnings(stderr: string, fixture: UpstreamFixture, workload: UpstreamWorkload): string[] {
  const prefix = `warning: ${cliLocation(fixture, workload)}`;
  return stderr
    .split('\n')
    .filter((line) => line.startsWith(prefix))
    .map((line) => line.slice(prefix.length));
}

/** The CLI's verdict for one workload from its --explain header line: mutated, unchanged or skipped. */
function cliOutcome(explain: string, fixture: UpstreamFixture, workload: UpstreamWorkload): string | undefined {
  const prefix = cliLocation(fixture, workload);
  const line = explain.split('\n').find((candidate) => candidate.startsWith(prefix));
  return line?.slice(prefix.length).split(/[ :]/)[0];
}

function warningsGolden(answers: readonly WebhookAnswer[], fixture: UpstreamFixture, run: Run): string {
  const lines = [
    `# ${fixture.relativePath}: what the webhook answers for the pod of each workload${run.configPath === undefined ? '' : `, configured by ${run.configPath}`}.`,
    '# Regenerate with `npm run golden:update` and review the diff.',
  ];
  for (const answer of answers) {
    const { outcome } = answer.decision;
    const skip = outcome.skipReason === undefined ? '' : ` (${outcome.skipReason})`;
    lines.push(`${answer.workload.label}: ${outcome.result}${skip}, ${outcome.patchOperations} patch operations`);
    const warnings = answer.response.warnings ?? [];
    if (warnings.length === 0) lines.push('  no warnings');
    for (const warning of warnings) lines.push(`  warning: ${warning}`);
  }
  return `${lines.join('\n')}\n`;
}

function expectGolden(fixture: UpstreamFixture, run: Run, suffix: (typeof GOLDEN_SUFFIXES)[number], actual: string): void {
  const path = join(GOLDEN_DIR, `${fixture.name}${run.suffix}${suffix}`);
  if (UPDATE) {
    writeFileSync(path, actual);
    return;
  }
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`npm run golden:update\` and review the new file`);
  expect(actual).toBe(readFileSync(path, 'utf8'));
}

beforeAll(() => buildCli());

it('has a corpus to check', () => {
  expect(fixtures.length).toBeGreaterThan(0);
  expect(fixtures.every((fixture) => fixture.workloads.length > 0)).toBe(true);
});

it('runs every variant on fixtures of the corpus', () => {
  const names = new Set(fixtures.map((fixture) => fixture.name));
  for (const variant of VARIANTS) expect(variant.fixtures.filter((name) => !names.has(name))).toEqual([]);
});

it('keeps no golden file without its fixture', () => {
  const names = new Set([
    ...fixtures.map((fixture) => fixture.name),
    ...VARIANTS.flatMap((variant) => variant.fixtures.map((name) => `${name}.${variant.name}`)),
  ]);
  const orphans = readdirSync(GOLDEN_DIR).filter((file) => {
    const suffix = GOLDEN_SUFFIXES.find((candidate) => file.endsWith(candidate));
    return suffix !== undefined && !names.has(file.slice(0, -suffix.length));
  });
  if (UPDATE) for (const orphan of orphans) rmSync(join(GOLDEN_DIR, orphan));
  else expect(orphans).toEqual([]);
});

/** The tests of one fixture under one configuration. */
function fixtureTests(fixture: UpstreamFixture, run: Run): void {
  let injected: { status: number | null; stdout: string; stderr: string };
  let explain: { status: number | null; stdout: string; stderr: string };
  let answers: WebhookAnswer[];

  beforeAll(() => {
    injected = drainguard(['inject', '-f', fixture.relativePath, ...run.cliArgs]);
    explain = drainguard(['inject', '-f', fixture.relativePath, '--explain', ...run.cliArgs]);
    answers = fixture.workloads.map((workload) => webhookAnswer(workload, run.config));
  });

  it('is injected by the CLI without an error', () => {
    expect({ status: injected.status, stderr: injected.stderr }).toMatchObject({ status: 0 });
    expect(explain.status).toBe(0);
  });

  it('gets the same pod from the webhook as from drainguard inject', () => {
    const fromCli = workloadsIn(injected.stdout);
    expect(fromCli.map((w) => [w.document, w.kind, w.name])).toEqual(fixture.workloads.map((w) => [w.document, w.kind, w.name]));
    // The API server would also drop the nulls of inject's output when it decodes the applied manifest.
    for (const [index, answer] of answers.entries()) expect(answer.patched).toEqual(asSentByApiServer(fromCli[index]!.pod));
  });

  it('gets the same outcome and warnings from both adapters', () => {
    for (const answer of answers) {
      const { workload } = answer;
      expect(answer.response.allowed).toBe(true);
      expect(cliOutcome(explain.stdout, fixture, workload)).toBe(answer.decision.outcome.result);
      expect(shapeWarnings(cliWarnings(injected.stderr, fixture, workload))).toEqual(answer.response.warnings ?? []);
    }
  });

  it('matches its goldens', () => {
    expectGolden(fixture, run, '.injected.yaml', injected.stdout);
    expectGolden(fixture, run, '.explain.txt', explain.stdout);
    expectGolden(fixture, run, '.warnings.txt', warningsGolden(answers, fixture, run));
  });

  it('is left as it is by a second pass of either adapter', () => {
    for (const answer of answers) {
      const again = ask(answer.patched, run.config);
      expect({ patch: again.response.patch, operations: again.decision.outcome.patchOperations }).toEqual({ patch: undefined, operations: 0 });
    }
    const twice = drainguard(['inject', '-f', '-', ...run.cliArgs], injected.stdout);
    expect(twice.status).toBe(0);
    expect(twice.stdout).toBe(injected.stdout);
  });

  it('produces pods that validate against the Kubernetes Pod schema, unknown fields rejected', () => {
    for (const answer of answers) {
      expect({ workload: answer.workload.label, before: podSchemaProblems(answer.sent) }).toEqual({
        workload: answer.workload.label,
        before: [],
      });
      expect({ workload: answer.workload.label, after: podSchemaProblems(answer.patched) }).toEqual({
        workload: answer.workload.label,
        after: [],
      });
    }
  });
}

describe.each(fixtures.map((fixture) => [fixture.name, fixture] as const))('%s', (_name, fixture) => fixtureTests(fixture, DEFAULT_RUN));

describe.each(VARIANTS.map((variant) => [variant.name, variant] as const))('variant %s', (_variant, variant) => {
  const run = variantRun(variant);
  describe.each(variant.fixtures.map((name) => [name, fixtures.find((fixture) => fixture.name === name)!] as const))('%s', (_name, fixture) => {
    fixtureTests(fixture, run);

    if (!variant.convergesWhenSwitched) return;
    it('ends the same when rewritten under either configuration and admitted again under the other', () => {
      const configs = [DEFAULT_RUN.config, run.config] as const;
      for (const workload of fixture.workloads) {
        const sent = asSentByApiServer(workload.pod);
        const [underDefault, underVariant] = configs.map((config) => admitted(sent, config)) as [Pod, Pod];
        expect({ workload: workload.label, switched: admitted(underDefault, configs[1]) }).toEqual({ workload: workload.label, switched: underVariant });
        expect({ workload: workload.label, switched: admitted(underVariant, configs[0]) }).toEqual({ workload: workload.label, switched: underDefault });
      }
    });
  });
});
