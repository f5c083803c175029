/**
 * The report as text, in the style of `linkerd check`: a section per category, one line per check with
 * a mark, hints indented under failures, the fixing commands, and a status line. `-o json` prints the
 * report object itself.
 */
import type { PreInstallReport } from './preinstall';
import type { Category, CheckReport, CheckResult, Verdict } from './report';

/**
 * Colours a piece of text by what it is; the identity for plain output. The caller decides (colour
 * only on a terminal: src/cli/terminal.ts), so this file stays free of I/O.
 */
export type Highlight = (role: 'pass' | 'fail' | 'info' | 'heading' | 'hint', text: string) => string;
const plain: Highlight = (_role, text) => text;

export const MARKS: Record<Verdict, string> = { pass: '√', fail: '×', info: 'ℹ' };

const SECTIONS: { category: Category; title: string }[] = [
  { category: 'installation', title: 'installation' },
  { category: 'coverage', title: 'namespaces holding Envoy pods' },
  { category: 'nodes', title: 'nodes (image volumes)' },
  { category: 'pods', title: 'Envoy pods' },
  { category: 'drains', title: "recent drains (the reporter's Events)" },
];

/** Pod names shown per fix; the JSON output lists them all. */
const NAMES_SHOWN = 5;

function heading(title: string, paint: Highlight): string[] {
  return ['', paint('heading', title), paint('heading', '-'.repeat(title.length))];
}

function lines(check: CheckResult, paint: Highlight): string[] {
  return [`${paint(check.verdict, MARKS[check.verdict])} ${check.message}`, ...(check.hint ? [`    ${paint('hint', check.hint)}`] : [])];
}

function statusLine(summary: CheckReport['summary'], paint: Highlight): string {
  const { passed, failed, info } = summary;
  const total = passed + failed;
  const notes = info > 0 ? `, ${info} note${info === 1 ? '' : 's'}` : '';
  return summary.ok
    ? `Status: ${paint('pass', `${MARKS.pass} all ${total} checks passed`)}${notes}`
    : `Status: ${paint('fail', `${MARKS.fail} ${failed} of ${total} checks failed`)}${notes}`;
}

/** `check --pre`: one section, and the status line. */
export function renderPreInstallText(report: PreInstallReport, paint: Highlight = plain): string {
  const { preInstall } = report;
  const out = [
    `drainguard check --pre: context ${report.context} (${report.server})`,
    `  before installing release ${preInstall.release} in ${preInstall.namespace} with tls.mode ${preInstall.tlsMode}`,
    ...heading('before installing', paint),
    ...report.checks.flatMap((check) => lines(check, paint)),
    '',
    statusLine(report.summary, paint),
  ];
  return `${out.join('\n')}\n`;
}

export function renderText(report: CheckReport, paint: Highlight = plain): string {
  const scope = report.scope.allNamespaces ? 'all namespaces' : `namespace ${report.scope.namespace}`;
  const { installation } = report;
  const version = installation.versionSource === 'deployment' ? `drainguard ${installation.version}` : `drainguard ${installation.version} (this program's version: the Deployment gives none)`;
  const out = [
    `drainguard check: context ${report.context} (${report.server})`,
    `  release ${installation.release} in ${installation.namespace}, pods compared with ${version}; Envoy pods in ${scope}`,
  ];
  for (const { category, title } of SECTIONS) {
    const checks = report.checks.filter((check) => check.category === category);
    if (checks.length === 0) continue;
    out.push(...heading(title, paint), ...checks.flatMap((check) => lines(check, paint)));
  }
  if (report.fixes.length > 0) {
    out.push(...heading('to protect the pods above', paint));
    const installationFailed = report.checks.some((check) => check.category === 'installation' && check.verdict === 'fail');
    if (installationFailed) out.push('first fix the installation: pods recreated now would not be rewritten either');
    for (const fix of report.fixes) {
      const shown = fix.pods.slice(0, NAMES_SHOWN).join(', ') + (fix.pods.length > NAMES_SHOWN ? `, and ${fix.pods.length - NAMES_SHOWN} more` : '');
      out.push(`${fix.workload.kind.toLowerCase()} ${fix.workload.namespace}/${fix.workload.name}: ${fix.why} (${shown})`);
      out.push(...fix.commands.map((command) => `    ${command}`));
      if (fix.note) out.push(`    ${fix.note}`);
    }
  }
  out.push('', statusLine(report.summary, paint));
  if (report.wait) out.push(describeWait(report.wait));
  return `${out.join('\n')}\n`;
}

function describeWait(wait: NonNullable<CheckReport['wait']>): string {
  const attempts = `${wait.attempts} attempt${wait.attempts === 1 ? '' : 's'}`;
  return wait.timedOut
    ? `Waited ${wait.elapsedSeconds}s (${attempts}): the installation was still not healthy when --wait ran out`
    : `Installation healthy after ${wait.elapsedSeconds}s (${attempts})`;
}

export function renderJson(report: CheckReport | PreInstallReport): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}
