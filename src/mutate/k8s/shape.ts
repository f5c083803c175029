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

/**
 * Walks `value` against `shape`. This runs on every admission, so the path is a stack of segments
 * turned into text only when a problem is found, and keys are visited without building entry arrays.
 * Problems are collected rather than thrown, so one message can name every bad field.
 */
class ShapeChecker {
  readonly problems: string[] = [];
  /** Field names, list indices and quoted map keys, as in `spec.containers[1].args[0]`. */
  private readonly path: (string | number)[] = [];

  private report(text: string): void {
    let where = '';
    for (const segment of this.path) {
      if (typeof segment === 'number') where += `[${segment}]`;
      else if (segment.startsWith('[')) where += segment;
      else where += where === '' ? segment : `.${segment}`;
    }
    this.problems.push(`${where} ${text}`);
  }

  private descend(segment: string | number, shape: Shape | undefined, value: unknown): void {
    this.path.push(segment);
    if (shape === undefined) this.report('is required');
    else this.check(shape, value);
    this.path.pop();
  }

  check(shape: Shape, value: unknown): void {
    if (typeof shape === 'string') {
      if (!matchesScalar(shape, value)) this.report(`must be ${EXPECTED[shape]}, got ${describeValue(value)}`);
      return;
    }
    if ('list' in shape) {
      if (!Array.isArray(value)) {
        this.report(`must be a list, got ${describeValue(value)}`);
        return;
      }
      // Every index, holes included (for...of on entries or forEach would skip them).
      for (let index = 0; index < value.length; index += 1) this.descend(index, shape.list, value[index]);
      return;
    }
    if (!isMapping(value)) {
      this.report(`must be an object, got ${describeValue(value)}`);
      return;
    }
    if ('map' in shape) {
      // Map keys are shown quoted: annotation keys hold dots and slashes.
      for (const key in value) this.descend(`[${JSON.stringify(key)}]`, shape.map, value[key]);
      return;
    }
    for (const key of shape.required ?? []) {
      if (value[key] === undefined) this.descend(key, undefined, undefined);
    }
    for (const key in shape.object) {
      const field = value[key];
      // An explicit null is reported too: a JSON Patch `add` below a null parent cannot apply.
      if (field !== undefined) this.descend(key, shape.object[key], field);
    }
  }
}

/** Every shape problem of the fields drainguard reads, as `path must be …` sentences; [] when fine. */
export function podShapeProblems(pod: unknown): string[] {
  const checker = new ShapeChecker();
  checker.check(POD, pod);
  return checker.problems;
}
