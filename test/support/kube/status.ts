/** `metav1.Status` failure bodies shaped like the real API server's (kind, reason, details, code). */
export interface StatusBody {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: string;
  details?: { name?: string; group?: string; kind?: string };
  code: number;
}

function failure(code: number, reason: string, message: string, details?: StatusBody['details']): StatusBody {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code };
}

export interface ResourceRef {
  /** Plural resource, e.g. `secrets`, `mutatingwebhookconfigurations`. */
  resource: string;
  group?: string;
  name: string;
}

const qualified = ({ resource, group }: ResourceRef) => (group ? `${resource}.${group}` : resource);
const details = (ref: ResourceRef) => ({ name: ref.name, ...(ref.group ? { group: ref.group } : {}), kind: ref.resource });

export const notFound = (ref: ResourceRef) => failure(404, 'NotFound', `${qualified(ref)} "${ref.name}" not found`, details(ref));

export const alreadyExists = (ref: ResourceRef) =>
  failure(409, 'AlreadyExists', `${qualified(ref)} "${ref.name}" already exists`, details(ref));

export const conflict = (ref: ResourceRef) =>
  failure(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${qualified(ref)} "${ref.name}": the object has been modified; please apply your changes to the latest version and try again`,
    details(ref),
  );

export const invalidPatch = (message: string) => failure(422, 'Invalid', message);
/** An object validation refused (`Event "x" is invalid: field: …`), as apimachinery's NewInvalid words it. */
export const invalid = (kind: string, name: string, problems: readonly string[]) =>
  failure(422, 'Invalid', `${kind} ${JSON.stringify(name)} is invalid: ${problems.join(', ')}`, { name, kind });
export const unauthorized = () => failure(401, 'Unauthorized', 'Unauthorized');
export const unsupportedMediaType = (type: string) =>
  failure(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json; got ${type}`);
export const badRequest = (message: string) => failure(400, 'BadRequest', message);
export const notAllowed = (method: string) => failure(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource: ${method}`);

/** What the API server answers for a path it has no handler for (an unknown resource or group). */
export const pathNotFound = () => ({ ...failure(404, 'NotFound', 'the server could not find the requested resource'), details: {} });

export interface AuthorizationAttributes {
  user: string;
  /** RBAC verb: get, list, create, update, patch, delete. */
  verb: string;
  resource: string;
  group: string;
  /** Absent for cluster-scoped requests and lists across all namespaces. */
  namespace?: string;
  /** Only requests for one object carry a name (not list or create). */
  name?: string;
}

/**
 * A request RBAC denied, worded as kube-apiserver words it: the authorizer's sentence (responsewriters
 * `forbiddenMessage`) wrapped by apimachinery's `NewForbidden`, which prefixes the group-qualified
 * resource and the object's name when the request names one.
 */
export function forbidden(attributes: AuthorizationAttributes): StatusBody {
  const { user, verb, resource, group, namespace, name } = attributes;
  const where = namespace ? `in the namespace ${JSON.stringify(namespace)}` : 'at the cluster scope';
  const sentence = `User ${JSON.stringify(user)} cannot ${verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(group)} ${where}`;
  const ref = { resource, name: name ?? '', ...(group ? { group } : {}) };
  const subject = name ? `${qualified(ref)} ${JSON.stringify(name)}` : qualified(ref);
  return failure(403, 'Forbidden', `${subject} is forbidden: ${sentence}`, {
    ...(name ? { name } : {}),
    ...(group ? { group } : {}),
    kind: resource,
  });
}
