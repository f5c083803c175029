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
    terminationMessagePath: 'string',
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
        volumes: {
          list: {
            object: {
              name: 'string',
              emptyDir: { object: { medium: 'string', sizeLimit: 'quantity' } },
              image: { object: { reference: 'string', pullPolicy: 'string' } },
            },
            required: ['name'],
          },
        },
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

/** Field names, list indices and quoted map keys, as in `spec.containers[1].args[0]`. */
type Segment = string | number;

/** The problems found so far, and where the walk is (the path is turned into text only for a problem). */
class ShapeWalk {
  readonly problems: string[] = [];
  readonly path: Segment[] = [];

  /** A problem with the value at `segment` below the current path. */
  reportAt(segment: Segment, text: string): void {
    this.path.push(segment);
    this.report(text);
    this.path.pop();
  }

  report(text: string): void {
    let where = '';
    for (const segment of this.path) {
      if (typeof segment === 'number') where += `[${segment}]`;
      else if (segment.startsWith('[')) where += segment;
      else where += where === '' ? segment : `.${segment}`;
    }
    this.problems.push(`${where} ${text}`);
  }
}

/**
 * Checks the value at `segment` below the walk's path. The path gets the segment only when the
 * check descends (lists, maps, objects) or reports: most values are scalars that match.
 */
type Check = (walk: ShapeWalk, segment: Segment, value: unknown) => void;

interface ScalarTest {
  matches: (value: unknown) => boolean;
  /** The problem's text up to the value's description. */
  expected: string;
}

function scalarTest(shape: Exclude<Shape, object>): ScalarTest {
  const expected = `must be ${EXPECTED[shape]}, got `;
  if (shape === 'string') return { expected, matches: (value) => typeof value === 'string' };
  if (shape === 'boolean') return { expected, matches: (value) => typeof value === 'boolean' };
  return { expected, matches: (value) => matchesScalar(shape, value) };
}

/**
 * The shape turned into nested closures once, when this module loads: each check knows its own
 * fields and children, so a walk looks nothing up in the description, and a map key is quoted only
 * for a problem (a pod's annotations are many). Problems are collected rather than thrown, so one
 * message can name every bad field; they come in the same order as the fields of the description.
 */
function compile(shape: Shape): Check {
  if (typeof shape === 'string') {
    const { matches, expected } = scalarTest(shape);
    return (walk, segment, value) => {
      if (!matches(value)) walk.reportAt(segment, expected + describeValue(value));
    };
  }
  if ('list' in shape) {
    const item = compile(shape.list);
    return (walk, segment, value) => {
      if (!Array.isArray(value)) return walk.reportAt(segment, `must be a list, got ${describeValue(value)}`);
      walk.path.push(segment);
      // Every index, holes included (for...of on entries or forEach would skip them).
      for (let index = 0; index < value.length; index += 1) item(walk, index, value[index]);
      walk.path.pop();
    };
  }
  if ('map' in shape) {
    // Every map drainguard reads (annotations, labels, requests, limits) holds scalars.
    if (typeof shape.map !== 'string') throw new Error('drainguard bug: a map of objects in the pod shape');
    const { matches, expected } = scalarTest(shape.map);
    return (walk, segment, value) => {
      if (!isMapping(value)) return walk.reportAt(segment, `must be an object, got ${describeValue(value)}`);
      walk.path.push(segment);
      for (const key in value) {
        const entry = value[key];
        // Map keys are shown quoted: annotation keys hold dots and slashes.
        if (!matches(entry)) walk.reportAt(`[${JSON.stringify(key)}]`, expected + describeValue(entry));
      }
      walk.path.pop();
    };
  }
  const required = shape.required ?? [];
  const fields = Object.entries(shape.object).map(([key, field]) => ({ key, check: compile(field) }));
  return (walk, segment, value) => {
    if (!isMapping(value)) return walk.reportAt(segment, `must be an object, got ${describeValue(value)}`);
    walk.path.push(segment);
    for (const key of required) {
      if (value[key] === undefined) walk.reportAt(key, 'is required');
    }
    for (const { key, check } of fields) {
      const field = value[key];
      // An explicit null is reported too: a JSON Patch `add` below a null parent cannot apply.
      if (field !== undefined) check(walk, key, field);
    }
    walk.path.pop();
  };
}

/**
 * How the quick test checks a value: a scalar shape is tested in place with `matchesScalar` (a call
 * through a closure per leaf costs more than the test itself), anything else by its compiled test.
 */
type Fit = Exclude<Shape, object> | ((value: unknown) => boolean);

function fits(fit: Fit, value: unknown): boolean {
  return typeof fit === 'string' ? matchesScalar(fit, value) : fit(value);
}

/**
 * The shape as nested tests, compiled once like the checks above, for the question nearly every pod
 * answers yes: does anything not fit? An object is tested by visiting the keys it has rather than the
 * fields the description lists: most listed fields are absent (a container uses few of its fifteen),
 * and looking a missing key up costs V8 far more than visiting a present one. A pod is plain JSON or
 * YAML data, so every field is an own enumerable key and both ways see the same fields.
 */
function compileFit(shape: Shape): Fit {
  if (typeof shape === 'string') return shape;
  if ('list' in shape) {
    const item = compileFit(shape.list);
    return (value) => {
      if (!Array.isArray(value)) return false;
      // Every index, holes included, as the check does.
      for (let index = 0; index < value.length; index += 1) if (!fits(item, value[index])) return false;
      return true;
    };
  }
  if ('map' in shape) {
    const item = compileFit(shape.map);
    return (value) => {
      if (!isMapping(value)) return false;
      for (const key in value) if (!fits(item, value[key])) return false;
      return true;
    };
  }
  const required = shape.required ?? [];
  // No prototype: a pod's key such as `__proto__` or `toString` must find nothing.
  const fields: Record<string, Fit | undefined> = Object.create(null);
  for (const [key, field] of Object.entries(shape.object)) fields[key] = compileFit(field);
  return (value) => {
    if (!isMapping(value)) return false;
    for (const key of required) if (value[key] === undefined) return false;
    for (const key in value) {
      const fit = fields[key];
      const field = value[key];
      if (fit !== undefined && field !== undefined && !fits(fit, field)) return false;
    }
    return true;
  };
}

const checkPod = compile(POD);
const fitPod = compileFit(POD);

/** Whether every field drainguard reads has its Kubernetes JSON type. */
export function podFitsShape(pod: unknown): boolean {
  return fits(fitPod, pod);
}

/** Every shape problem, found by walking the description's fields in order; [] when fine. */
export function walkPodShape(pod: unknown): string[] {
  const walk = new ShapeWalk();
  // The pod is the root: its empty segment adds nothing to a field's path.
  checkPod(walk, '', pod);
  return walk.problems;
}

/** Every shape problem of the fields drainguard reads, as `path must be …` sentences; [] when fine. */
export function podShapeProblems(pod: unknown): string[] {
  // Nearly every pod fits: only one that does not is walked again, for the messages in field order.
  return podFitsShape(pod) ? [] : walkPodShape(pod);
}
