/**
 * The JSON shape of every Pod field drainguard reads, checked before anything else looks at the pod.
 *
 * The API server decodes a pod into typed structs before admission, so the webhook never sees a
 * `volumes` that is an object or an `args` holding numbers; `drainguard inject` reads YAML a person
 * wrote, and may. Without this check such a pod crashed deep inside the core with a TypeError; with
 * it the user gets the field path and what it must be. Only the fields drainguard reads are
 * checked — everything else passes through untouched, as the patch never goes near it.
 */

type Shape =
  | 'string'
  | 'integer'
  | 'boolean'
  /** IntOrString, e.g. a probe port (8002 or "metrics"). */
  | 'int-or-string'
  /** A resource quantity, which YAML may give as a number. */
  | 'quantity'
  | { list: Shape }
  | { map: Shape }
  | { object: Readonly<Record<string, Shape>>; required?: readonly string[] };

const stringList: Shape = { list: 'string' };

const handlerFields = {
  exec: { object: { command: stringList } },
  httpGet: { object: { path: 'string', port: 'int-or-string', host: 'string', scheme: 'string' }, required: ['port'] },
  tcpSocket: { object: { port: 'int-or-string', host: 'string' }, required: ['port'] },
} as const satisfies Record<string, Shape>;

const lifecycleHandler: Shape = { object: { ...handlerFields, sleep: { object: { seconds: 'integer' } } } };

const probe: Shape = {
  object: {
    ...handlerFields,
    grpc: { object: { port: 'integer', service: 'string' }, required: ['port'] },
    initialDelaySeconds: 'integer',
    periodSeconds: 'integer',
    timeoutSeconds: 'integer',
    successThreshold: 'integer',
    failureThreshold: 'integer',
    terminationGracePeriodSeconds: 'integer',
  },
};

const securityIds = { runAsUser: 'integer', runAsGroup: 'integer', runAsNonRoot: 'boolean' } as const;

const container: Shape = {
  object: {
    name: 'string',
    image: 'string',
    command: stringList,
    args: stringList,
    ports: { list: { object: { containerPort: 'integer', name: 'string', protocol: 'string' }, required: ['containerPort'] } },
    resources: { object: { requests: { map: 'quantity' }, limits: { map: 'quantity' } } },
    livenessProbe: probe,
    readinessProbe: probe,
    startupProbe: probe,
    lifecycle: { object: { preStop: lifecycleHandler, postStart: lifecycleHandler } },
    volumeMounts: {
      list: { object: { name: 'string', mountPath: 'string', subPath: 'string', subPathExpr: 'string', readOnly: 'boolean' }, required: ['name', 'mountPath'] },
    },
    securityContext: { object: securityIds },
    restartPolicy: 'string',
  },
  required: ['name'],
};

const POD: Shape = {
  object: {
    metadata: { object: { name: 'string', namespace: 'string', annotations: { map: 'string' }, labels: { map: 'string' } } },
    spec: {
      object: {
        containers: { list: container },
        initContainers: { list: container },
        ephemeralContainers: { list: container },
        volumes: { list: { object: { name: 'string', emptyDir: { object: { medium: 'string', sizeLimit: 'quantity' } } }, required: ['name'] } },
        securityContext: { object: { ...securityIds, fsGroup: 'integer' } },
        terminationGracePeriodSeconds: 'integer',
      },
    },
  },
  required: ['spec'],
};

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'number' && !Number.isInteger(value)) return `the number ${value}`;
  return typeof value === 'object' ? 'an object' : `the ${typeof value} ${JSON.stringify(value)?.slice(0, 40)}`;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const EXPECTED: Record<Exclude<Shape, object>, string> = {
  string: 'a string',
  integer: 'a whole number',
  boolean: 'true or false',
  'int-or-string': 'a port number or name',
  quantity: 'a quantity such as "100m" or "128Mi"',
};

function matchesScalar(shape: Exclude<Shape, object>, value: unknown): boolean {
  switch (shape) {
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return Number.isSafeInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'int-or-string':
    case 'quantity':
      return typeof value === 'string' || Number.isSafeInteger(value) || (shape === 'quantity' && typeof value === 'number' && Number.isFinite(value));
  }
}

/** Problems are collected rather than thrown, so one message can name every bad field. */
function check(shape: Shape, value: unknown, path: string, problems: string[]): void {
  if (typeof shape === 'string') {
    if (!matchesScalar(shape, value)) problems.push(`${path} must be ${EXPECTED[shape]}, got ${describeValue(value)}`);
    return;
  }
  if ('list' in shape) {
    if (!Array.isArray(value)) {
      problems.push(`${path} must be a list, got ${describeValue(value)}`);
      return;
    }
    // Every index, holes included (forEach would skip them).
    for (let index = 0; index < value.length; index += 1) check(shape.list, value[index], `${path}[${index}]`, problems);
    return;
  }
  if (!isMapping(value)) {
    problems.push(`${path} must be an object, got ${describeValue(value)}`);
    return;
  }
  if ('map' in shape) {
    for (const [key, item] of Object.entries(value)) check(shape.map, item, `${path}[${JSON.stringify(key)}]`, problems);
    return;
  }
  for (const key of shape.required ?? []) {
    if (value[key] === undefined) problems.push(`${path}.${key} is required`);
  }
  for (const [key, fieldShape] of Object.entries(shape.object)) {
    // An explicit null is reported too: a JSON Patch `add` below a null parent cannot apply.
    if (value[key] !== undefined) check(fieldShape, value[key], `${path}.${key}`, problems);
  }
}

/** Every shape problem of the fields drainguard reads, as `path must be …` sentences; [] when fine. */
export function podShapeProblems(pod: unknown): string[] {
  const problems: string[] = [];
  check(POD, pod, 'pod', problems);
  return problems.map((problem) => problem.replace(/^pod\./, ''));
}
