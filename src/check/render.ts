/**
 * The report as text, in the style of `linkerd check`: a section per category, one line per check with
 * a mark, hints indented under failures, the fixing commands, and a status line. `-o json` prints the
 * report object itself.
 */
import type { Category, CheckReport, CheckResult, Verdict } from './report';

export const MARKS: Record<Verdict, string> = { pass: '√', fail: '×', info: 'ℹ' };

const SECTIONS: { category: Category; title: string }[] = [
  { category: 'installation', title: 'installation' },
  { category: 'coverage', title: 'namespaces holding Envoy pods' },
  { category: 'pods', title: 'Envoy pods' },
];

/** Pod names shown per fix; the JSON output lists them all. */
const NAMES_SHOWN = 5;

function heading(title: string): string[] {
  return ['', title, '-'.repeat(title.length)];
}

function lines(check: CheckResult): string[] {
  return [`${MARKS[check.verdict]} ${check.message}`, ...(check.hint ? [`    ${check.hint}`] : [])];
}

export function renderText(report: CheckReport): string {
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
    out.push(...heading(title), ...checks.flatMap(lines));
  }
  if (report.fixes.length > 0) {
    out.push(...heading('to protect the pods above'));
    const installationFailed = report.checks.some((check) => check.category === 'installation' && check.verdict === 'fail');
    if (installationFailed) out.push('first fix the installation: pods recreated now would not be rewritten either');
    for (const fix of report.fixes) {
      const shown = fix.pods.slice(0, NAMES_SHOWN).join(', ') + (fix.pods.length > NAMES_SHOWN ? `, and ${fix.pods.length - NAMES_SHOWN} more` : '');
      out.push(`${fix.workload.kind.toLowerCase()} ${fix.workload.namespace}/${fix.workload.name}: ${fix.why} (${shown})`);
      out.push(...fix.commands.map((command) => `    ${command}`));
      if (fix.note) out.push(`    ${fix.note}`);
    }
  }
  const { passed, failed, info } = report.summary;
  const total = passed + failed;
  const notes = info > 0 ? `, ${info} note${info === 1 ? '' : 's'}` : '';
  out.push(
    '',
    report.summary.ok
      ? `Status: ${MARKS.pass} all ${total} checks passed${notes}`
      : `Status: ${MARKS.fail} ${failed} of ${total} checks failed${notes}`,
  );
  return `${out.join('\n')}\n`;
}

export function renderJson(report: CheckReport): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}
