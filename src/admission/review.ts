/**
 * The AdmissionReview wire format (admission.k8s.io v1 and v1beta1 share it) and its strict parsing.
 * Parsing answers either a request drainguard can decide on or one specific message saying what is wrong,
 * so a misconfigured caller (or a human with curl) learns exactly which field to fix.
 */

export const ADMISSION_API_VERSIONS = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'] as const;
export type AdmissionApiVersion = (typeof ADMISSION_API_VERSIONS)[number];

/** Kubernetes UIDs are 36-character UUIDs; a far longer one is not from an API server. */
const MAX_UID_LENGTH = 128;

const OPERATIONS = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'] as const;
export type AdmissionOperation = (typeof OPERATIONS)[number];

/** The fields of `AdmissionReview.request` drainguard reads. */
export interface AdmissionRequest {
  uid: string;
  operation: AdmissionOperation;
  /** `request.kind`, when sent (the API server always sends it). */
  kind?: { group: string; version: string; kind: string };
  subResource?: string;
  namespace?: string;
  name?: string;
  dryRun: boolean;
  /** Present for CREATE and UPDATE; shape-checked as a Pod only when drainguard acts on it. */
  object?: unknown;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  patchType?: 'JSONPatch';
  /** base64 of the JSON Patch document. */
  patch?: string;
  warnings?: string[];
  status?: { code: number; message: string };
}

export interface AdmissionReviewResponse {
  apiVersion: AdmissionApiVersion;
  kind: 'AdmissionReview';
  response: AdmissionResponse;
}

export type ParsedReview =
  | { ok: true; apiVersion: AdmissionApiVersion; request: AdmissionRequest }
  | { ok: false; message: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `"${value.length > 64 ? `${value.slice(0, 64)}...` : value}"`;
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function invalid(message: string): ParsedReview {
  return { ok: false, message };
}

/** Checks the envelope and the request fields every operation needs. Pod shape is checked by `podFrom`. */
export function parseAdmissionReview(review: unknown): ParsedReview {
  if (!isRecord(review)) return invalid(`AdmissionReview must be a JSON object, got ${describe(review)}`);
  const { apiVersion, kind, request } = review;
  if (!ADMISSION_API_VERSIONS.includes(apiVersion as AdmissionApiVersion)) {
    return invalid(
      `apiVersion must be one of ${ADMISSION_API_VERSIONS.join(', ')}; got ${describe(apiVersion)}`,
    );
  }
  if (kind !== 'AdmissionReview') return invalid(`kind must be "AdmissionReview"; got ${describe(kind)}`);
  if (!isRecord(request)) return invalid(`request must be an object; got ${describe(request)}`);

  const { uid, operation, dryRun, subResource, namespace, name, object } = request;
  if (typeof uid !== 'string' || uid.length === 0) {
    return invalid(`request.uid must be a non-empty string; got ${describe(uid)}`);
  }
  if (uid.length > MAX_UID_LENGTH) return invalid(`request.uid must be at most ${MAX_UID_LENGTH} characters; got ${uid.length}`);
  if (!OPERATIONS.includes(operation as AdmissionOperation)) {
    return invalid(`request.operation must be one of ${OPERATIONS.join(', ')}; got ${describe(operation)}`);
  }
  if (dryRun !== undefined && typeof dryRun !== 'boolean') {
    return invalid(`request.dryRun must be a boolean; got ${describe(dryRun)}`);
  }
  const notString = notAString({ subResource, namespace, name });
  if (notString !== undefined) return invalid(notString);

  const parsedKind = parseGroupVersionKind(request.kind);
  if (typeof parsedKind === 'string') return invalid(parsedKind);

  // Built field by field: the optional ones are left out rather than set to undefined.
  const parsed: AdmissionRequest = { uid, operation: operation as AdmissionOperation, dryRun: dryRun === true };
  if (parsedKind) parsed.kind = parsedKind;
  if (typeof subResource === 'string' && subResource !== '') parsed.subResource = subResource;
  if (typeof namespace === 'string') parsed.namespace = namespace;
  if (typeof name === 'string') parsed.name = name;
  if (object !== undefined) parsed.object = object;
  return { ok: true, apiVersion: apiVersion as AdmissionApiVersion, request: parsed };
}

/** The message for the first of these optional string fields that is set to something else. */
function notAString(fields: Record<'subResource' | 'namespace' | 'name', unknown>): string | undefined {
  for (const field in fields) {
    const value = fields[field as keyof typeof fields];
    if (value !== undefined && typeof value !== 'string') return `request.${field} must be a string; got ${describe(value)}`;
  }
  return undefined;
}

/** `request.kind` is optional for drainguard but, when sent, must be well formed. Returns a message on error. */
function parseGroupVersionKind(value: unknown): AdmissionRequest['kind'] | undefined | string {
  if (value === undefined) return undefined;
  if (!isRecord(value)) return `request.kind must be an object; got ${describe(value)}`;
  const { group = '', version, kind } = value;
  if (typeof group !== 'string' || typeof version !== 'string' || typeof kind !== 'string') {
    return 'request.kind must have string fields group, version and kind';
  }
  return { group, version, kind };
}

/**
 * The Pod drainguard mutates, or a message saying why `request.object` is not one. Only the fields the
 * core walks are checked; everything else is the API server's business (it validates after mutation).
 */
export type PodReading =
  | { ok: true; pod: unknown }
  /** A well-formed request for another kind: a webhook rule sent more than Pods. Not the request's fault. */
  | { ok: false; notPod: string }
  | { ok: false; message: string };

export function podFrom(request: AdmissionRequest): PodReading {
  const { kind, object } = request;
  if (kind && !(kind.group === '' && kind.kind === 'Pod')) {
    return { ok: false, notPod: `${kind.group ? `${kind.group}/` : ''}${kind.version} ${kind.kind}` };
  }
  if (object === undefined) return { ok: false, message: `request.object is required for ${request.operation}` };
  if (!isRecord(object)) return { ok: false, message: `request.object must be a Pod object; got ${describe(object)}` };
  if (object.kind !== undefined && object.kind !== 'Pod') {
    return { ok: false, notPod: typeof object.kind === 'string' ? `an object of kind ${describe(object.kind)}` : `an object whose kind is ${describe(object.kind)}` };
  }
  const metadata = object.metadata;
  if (metadata !== undefined && !isRecord(metadata)) {
    return { ok: false, message: `request.object.metadata must be an object; got ${describe(metadata)}` };
  }
  const annotations = metadata?.annotations;
  if (annotations !== undefined && annotations !== null) {
    const notString = isRecord(annotations) ? Object.keys(annotations).find((k) => typeof annotations[k] !== 'string') : '';
    if (notString !== undefined) {
      return {
        ok: false,
        message: isRecord(annotations)
          ? `request.object.metadata.annotations["${notString}"] must be a string`
          : `request.object.metadata.annotations must be an object; got ${describe(annotations)}`,
      };
    }
  }
  const spec = object.spec;
  if (!isRecord(spec)) return { ok: false, message: `request.object.spec must be an object; got ${describe(spec)}` };
  for (const list of ['containers', 'initContainers'] as const) {
    const containers = spec[list];
    if (list === 'initContainers' && containers === undefined) continue;
    if (!Array.isArray(containers)) {
      return { ok: false, message: `request.object.spec.${list} must be an array; got ${describe(containers)}` };
    }
    const index = containers.findIndex((c) => !isRecord(c) || typeof c.name !== 'string');
    if (index >= 0) {
      return { ok: false, message: `request.object.spec.${list}[${index}] must be a container with a string name` };
    }
  }
  return { ok: true, pod: object };
}
