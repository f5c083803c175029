/**
 * Validation of rendered objects: built-in kinds against the Kubernetes OpenAPI schemas
 * (kubernetes-models), CRD kinds (cert-manager, Prometheus Operator) against structural schemas of the
 * fields this chart uses, written from the CRDs, or (PrometheusRule) against the CRD's own schema. An
 * object of any other kind is an error: a new template must come with its validation.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv, { type ValidateFunction } from 'ajv';
import { REPO_ROOT, type K8sObject } from '../../support/helm';

interface Model {
  validate(): void;
}
type ModelClass = new (data: K8sObject) => Model;

/** apiVersion/kind → kubernetes-models module (ESM only, hence dynamic import) and class name. */
const BUILT_IN: Record<string, string> = {
  'v1/ConfigMap': 'kubernetes-models/v1/ConfigMap',
  'v1/Pod': 'kubernetes-models/v1/Pod',
  'v1/Service': 'kubernetes-models/v1/Service',
  'v1/ServiceAccount': 'kubernetes-models/v1/ServiceAccount',
  'v1/Secret': 'kubernetes-models/v1/Secret',
  'apps/v1/Deployment': 'kubernetes-models/apps/v1/Deployment',
  'policy/v1/PodDisruptionBudget': 'kubernetes-models/policy/v1/PodDisruptionBudget',
  'networking.k8s.io/v1/NetworkPolicy': 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy',
  'rbac.authorization.k8s.io/v1/Role': 'kubernetes-models/rbac.authorization.k8s.io/v1/Role',
  'rbac.authorization.k8s.io/v1/RoleBinding': 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding',
  'rbac.authorization.k8s.io/v1/ClusterRole': 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole',
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding',
  'admissionregistration.k8s.io/v1/MutatingWebhookConfiguration':
    'kubernetes-models/admissionregistration.k8s.io/v1/MutatingWebhookConfiguration',
};

const strict = (properties: Record<string, unknown>, required: string[] = []): Record<string, unknown> => ({
  type: 'object',
  additionalProperties: false,
  properties,
  required,
});
const str = { type: 'string', minLength: 1 };
const duration = { type: 'string', pattern: '^([0-9]+(\\.[0-9]+)?(h|m|s|ms))+$' };
const labels = { type: 'object', additionalProperties: { type: 'string' } };
const metadata = strict(
  { name: str, namespace: str, labels, annotations: labels },
  ['name', 'namespace'],
);
const issuerRef = strict({ name: str, kind: { enum: ['Issuer', 'ClusterIssuer'] }, group: { const: 'cert-manager.io' } }, ['name']);

/** cert-manager.io/v1 (fields from the cert-manager CRDs). */
const certificate = strict(
  {
    apiVersion: { const: 'cert-manager.io/v1' },
    kind: { const: 'Certificate' },
    metadata,
    spec: {
      ...strict(
        {
          secretName: str,
          issuerRef,
          commonName: { type: 'string', maxLength: 64 },
          dnsNames: { type: 'array', items: str, minItems: 1 },
          isCA: { type: 'boolean' },
          duration,
          renewBefore: duration,
          usages: {
            type: 'array',
            items: { enum: ['server auth', 'client auth', 'digital signature', 'key encipherment', 'cert sign', 'crl sign'] },
          },
          privateKey: strict({
            algorithm: { enum: ['RSA', 'ECDSA', 'Ed25519'] },
            size: { type: 'integer' },
            encoding: { enum: ['PKCS1', 'PKCS8'] },
            rotationPolicy: { enum: ['Never', 'Always'] },
          }),
        },
        ['secretName', 'issuerRef'],
      ),
      // A certificate needs at least one identity.
      anyOf: [{ required: ['dnsNames'] }, { required: ['commonName'] }],
    },
  },
  ['apiVersion', 'kind', 'metadata', 'spec'],
);
const issuer = strict(
  {
    apiVersion: { const: 'cert-manager.io/v1' },
    kind: { const: 'Issuer' },
    metadata,
    // Exactly one issuer type.
    spec: {
      ...strict({ selfSigned: strict({}), ca: strict({ secretName: str }, ['secretName']) }),
      minProperties: 1,
      maxProperties: 1,
    },
  },
  ['apiVersion', 'kind', 'metadata', 'spec'],
);
/** monitoring.coreos.com/v1 (fields from the Prometheus Operator CRD). */
const serviceMonitor = strict(
  {
    apiVersion: { const: 'monitoring.coreos.com/v1' },
    kind: { const: 'ServiceMonitor' },
    metadata,
    spec: strict(
      {
        selector: strict({ matchLabels: labels }, ['matchLabels']),
        namespaceSelector: strict({ matchNames: { type: 'array', items: str }, any: { type: 'boolean' } }),
        endpoints: {
          type: 'array',
          minItems: 1,
          items: strict(
            {
              port: str,
              scheme: { enum: ['http', 'https'] },
              path: { type: 'string', pattern: '^/' },
              interval: duration,
              scrapeTimeout: duration,
              honorLabels: { type: 'boolean' },
              tlsConfig: strict({
                insecureSkipVerify: { type: 'boolean' },
                serverName: str,
                ca: { type: 'object' },
                cert: { type: 'object' },
                keySecret: { type: 'object' },
              }),
            },
            ['port'],
          ),
        },
      },
      ['selector', 'endpoints'],
    ),
  },
  ['apiVersion', 'kind', 'metadata', 'spec'],
);

/**
 * CRD patterns are Go regular expressions: the one Go construct the schemas here use that JavaScript
 * lacks is a leading `(?i)` (case-insensitive), which becomes the `i` flag.
 */
const goRegExp = Object.assign(
  (pattern: string, flags: string): RegExp =>
    pattern.includes('(?i)') ? new RegExp(pattern.replace('(?i)', ''), `${flags}i`) : new RegExp(pattern, flags),
  { code: 'goRegExp' },
);
const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false, code: { regExp: goRegExp } });
// The API server's extensions of a CRD's structural schema: a `map` list has no two items with the same
// keys; `int-or-string` is spelled out by the schema's own anyOf.
ajv.addKeyword({
  keyword: 'x-kubernetes-list-map-keys',
  type: 'array',
  validate: (keys: string[], items: Record<string, unknown>[]) =>
    new Set(items.map((item) => JSON.stringify(keys.map((key) => item[key])))).size === items.length,
  errors: false,
});
ajv.addKeyword({ keyword: 'x-kubernetes-list-type' });
ajv.addKeyword({ keyword: 'x-kubernetes-int-or-string' });

type SchemaNode = { [key: string]: unknown; properties?: Record<string, SchemaNode>; additionalProperties?: unknown };

/**
 * A CRD's openAPIV3Schema as the API server applies it with strict field validation (kubectl's
 * default): a field the schema does not declare is an error, not silently pruned. `metadata` is
 * checked like the other custom kinds' (the CRD leaves it to the API server).
 */
function crdSchema(file: string, apiVersion: string, kind: string): Record<string, unknown> {
  const strictFields = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(strictFields);
    if (node === null || typeof node !== 'object') return node;
    const copy = Object.fromEntries(Object.entries(node).map(([key, value]) => [key, strictFields(value)])) as SchemaNode;
    if (copy.properties && copy.additionalProperties === undefined) copy.additionalProperties = false;
    return copy;
  };
  const schema = strictFields(JSON.parse(readFileSync(join(REPO_ROOT, 'test/fixtures/schema', file), 'utf8'))) as SchemaNode;
  // `status` is the operator's to write: a chart that renders one is wrong.
  const { status: _status, ...properties } = schema.properties ?? {};
  schema.properties = { ...properties, apiVersion: { const: apiVersion }, kind: { const: kind }, metadata };
  return { ...schema, required: ['apiVersion', 'kind', 'metadata', 'spec'] };
}

const CUSTOM: Record<string, ValidateFunction> = {
  'cert-manager.io/v1/Certificate': ajv.compile(certificate),
  'cert-manager.io/v1/Issuer': ajv.compile(issuer),
  'monitoring.coreos.com/v1/ServiceMonitor': ajv.compile(serviceMonitor),
  'monitoring.coreos.com/v1/PrometheusRule': ajv.compile(
    crdSchema('prometheusrule-crd-schema.json', 'monitoring.coreos.com/v1', 'PrometheusRule'),
  ),
};

const modelCache = new Map<string, ModelClass>();

async function modelFor(key: string, kind: string): Promise<ModelClass | undefined> {
  const path = BUILT_IN[key];
  if (!path) return undefined;
  let model = modelCache.get(key);
  if (!model) {
    const mod = (await import(path)) as Record<string, ModelClass>;
    model = mod[kind];
    if (!model) throw new Error(`${path} exports no ${kind}`);
    modelCache.set(key, model);
  }
  return model;
}

/** Validation errors of one object; empty when valid. */
export async function validateObject(obj: K8sObject): Promise<string[]> {
  const key = `${obj.apiVersion}/${obj.kind}`;
  const where = `${key} ${obj.metadata?.name ?? '(no name)'}`;
  const model = await modelFor(key, obj.kind);
  if (model) {
    try {
      new model(obj).validate();
      return [];
    } catch (error) {
      return [`${where}: ${(error as Error).message}`];
    }
  }
  const custom = CUSTOM[key];
  if (custom) {
    return custom(obj) ? [] : (custom.errors ?? []).map((e) => `${where}: ${e.instancePath} ${e.message ?? ''}`);
  }
  return [`${where}: no validator for this kind (add one in test/integration/chart/validate.ts)`];
}

export async function validateAll(objects: K8sObject[]): Promise<string[]> {
  const errors: string[] = [];
  for (const obj of objects) errors.push(...(await validateObject(obj)));
  return errors;
}
