/**
 * Validation of a Pod against the real Kubernetes core/v1 OpenAPI definitions
 * (test/fixtures/schema/pod-definitions.json, see the README beside it), with every unknown field
 * rejected.
 *
 * Why stricter than kubernetes-models: its generated validators check the types of known fields but
 * accept any extra field, and the API server silently drops a field it does not know when it decodes a
 * patched pod, so a misspelt or misplaced field from drainguard would vanish without an error. A
 * wrongly typed field is worse: the decode fails and the pod is not created at all.
 *
 * How the OpenAPI definitions become a JSON Schema, following what the API server's decoder accepts:
 * - every object type that lists its properties gets `additionalProperties: false`; objects without a
 *   property list (FieldsV1, maps such as labels) keep their own rule;
 * - a property may be JSON `null`: the decoder reads null as the field's zero value;
 * - `format: int32` becomes the int32 range (a larger number fails the decode);
 * - Quantity is a string or a number and IntOrString an integer or a string, as the API server serves
 *   them in its OpenAPI v3 document (the v2 document calls both plain strings).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';

import { REPO_ROOT } from './repo';

export const POD_DEFINITIONS_PATH = join(REPO_ROOT, 'test/fixtures/schema/pod-definitions.json');

type Schema = Record<string, unknown>;

const POD = 'io.k8s.api.core.v1.Pod';
const QUANTITY = 'io.k8s.apimachinery.pkg.api.resource.Quantity';
const INT_OR_STRING = 'io.k8s.apimachinery.pkg.util.intstr.IntOrString';
const INT32 = { minimum: -(2 ** 31), maximum: 2 ** 31 - 1 };

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One OpenAPI schema as JSON Schema (see the rules at the top). */
function convert(schema: Schema): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key.startsWith('x-kubernetes-')) continue;
    if (key === 'format') {
      if (value === 'int32') Object.assign(out, INT32);
      continue;
    }
    if (key === 'properties' && isSchema(value)) {
      out.properties = Object.fromEntries(
        Object.entries(value).map(([name, property]) => [name, { anyOf: [{ type: 'null' }, convert(property as Schema)] }]),
      );
      continue;
    }
    if ((key === 'items' || key === 'additionalProperties') && isSchema(value)) {
      out[key] = convert(value);
      continue;
    }
    out[key] = value;
  }
  if (isSchema(schema.properties) && schema.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

function loadDefinitions(): Record<string, Schema> {
  const file = JSON.parse(readFileSync(POD_DEFINITIONS_PATH, 'utf8')) as { definitions: Record<string, Schema> };
  const definitions = Object.fromEntries(Object.entries(file.definitions).map(([name, schema]) => [name, convert(schema)]));
  definitions[QUANTITY] = { anyOf: [{ type: 'string' }, { type: 'number' }] };
  definitions[INT_OR_STRING] = { anyOf: [{ type: 'integer' }, { type: 'string' }] };
  return definitions;
}

let compiled: ValidateFunction | undefined;

function validator(): ValidateFunction {
  if (compiled) return compiled;
  const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
  compiled = ajv.compile({ $ref: `#/definitions/${POD}`, definitions: loadDefinitions() });
  return compiled;
}

/** `/spec/containers/0/args/1` → `spec.containers[0].args[1]`. */
function fieldPath(instancePath: string, extra?: string): string {
  const segments = instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) segments.push(extra);
  let path = '';
  for (const segment of segments) path += /^\d+$/.test(segment) ? `[${segment}]` : path === '' ? segment : `.${segment}`;
  return path === '' ? '(the pod)' : path;
}

/**
 * The errors a person needs: the `null` alternative of every nullable property fails whenever the real
 * one does, so those and the anyOf summaries that only repeat them are dropped.
 */
function describe(errors: readonly ErrorObject[]): string[] {
  const messages = new Set<string>();
  for (const error of errors) {
    if (error.keyword === 'anyOf') continue;
    if (error.keyword === 'type' && (error.params as { type?: string }).type === 'null' && /\/anyOf\/0\/type$/.test(error.schemaPath)) {
      continue;
    }
    if (error.keyword === 'additionalProperties') {
      const field = (error.params as { additionalProperty: string }).additionalProperty;
      messages.add(`${fieldPath(error.instancePath, field)}: unknown field`);
    } else {
      messages.add(`${fieldPath(error.instancePath)}: ${error.message ?? error.keyword}`);
    }
  }
  return [...messages];
}

/** Every way `pod` breaks the core/v1 Pod schema; empty when it is valid. */
export function podSchemaProblems(pod: unknown): string[] {
  const validate = validator();
  if (validate(pod)) return [];
  return describe(validate.errors ?? []);
}

/** Throws naming every problem, for use inside tests. */
export function assertValidPod(pod: unknown, label = 'pod'): void {
  const problems = podSchemaProblems(pod);
  if (problems.length > 0) throw new Error(`${label} does not validate against the Kubernetes Pod schema:\n  ${problems.join('\n  ')}`);
}
