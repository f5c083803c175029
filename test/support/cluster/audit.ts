/**
 * kube-apiserver's audit log, for the suites that check which requests a component made (RBAC measured
 * by the calls, a watch resumed from a bookmark): the flags that turn it on for some users only, at the
 * Metadata level, and its events read back.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** An audit.k8s.io/v1 Event, as far as the suites read it. */
export interface AuditEvent {
  auditID: string;
  stage: string;
  verb: string;
  requestURI: string;
  user: { username: string };
  sourceIPs: string[];
  objectRef?: { resource?: string; namespace?: string; name?: string; apiGroup?: string; subresource?: string };
  responseStatus?: { code?: number };
}

/** Who is audited: users by name, or every member of a group; nobody else is. */
export interface Audited {
  users?: readonly string[];
  userGroups?: readonly string[];
}

/**
 * Writes a policy (Metadata level for `audited`, None for the rest, no RequestReceived stage) into `dir`
 * and returns the kube-apiserver flags that apply it, and the log's path.
 */
export function auditFlags(dir: string, audited: Audited): { apiServerArgs: string[]; logPath: string } {
  const policy = join(dir, 'audit-policy.yaml');
  const logPath = join(dir, 'audit.log');
  const rule = (key: string, values: readonly string[] | undefined) => (values?.length ? [`  - level: Metadata`, `    ${key}: [${values.map((v) => JSON.stringify(v)).join(', ')}]`] : []);
  const lines = ['apiVersion: audit.k8s.io/v1', 'kind: Policy', 'omitStages: ["RequestReceived"]', 'rules:', ...rule('userGroups', audited.userGroups), ...rule('users', audited.users), '  - level: None'];
  writeFileSync(policy, `${lines.join('\n')}\n`);
  return { apiServerArgs: [`--audit-policy-file=${policy}`, `--audit-log-path=${logPath}`], logPath };
}

/** Every event of the log, in order (a request that streams has its ResponseStarted and its ResponseComplete). */
export function readAuditLog(logPath: string): AuditEvent[] {
  return readFileSync(logPath, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as AuditEvent);
}

/** One event per request: its ResponseComplete, or its ResponseStarted while it still streams (a watch). */
export function auditedRequests(logPath: string): AuditEvent[] {
  const byId = new Map<string, AuditEvent>();
  for (const event of readAuditLog(logPath)) if (event.stage === 'ResponseComplete' || !byId.has(event.auditID)) byId.set(event.auditID, event);
  return [...byId.values()];
}
