/**
 * Label selectors as the API server evaluates a webhook's `namespaceSelector` and `objectSelector`:
 * every `matchLabels` pair and every `matchExpressions` requirement must hold; an absent selector
 * selects everything.
 */

export interface LabelSelectorRequirement {
  key: string;
  /** In, NotIn, Exists, DoesNotExist (validated by the API server). */
  operator: string;
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export type Labels = Readonly<Record<string, string>>;

function requirementHolds(requirement: LabelSelectorRequirement, labels: Labels): boolean {
  const present = Object.hasOwn(labels, requirement.key);
  const values = requirement.values ?? [];
  switch (requirement.operator) {
    case 'In':
      return present && values.includes(labels[requirement.key] as string);
    case 'NotIn':
      return !present || !values.includes(labels[requirement.key] as string);
    case 'Exists':
      return present;
    case 'DoesNotExist':
      return !present;
    default:
      // The API server rejects any other operator when the webhook configuration is written.
      return false;
  }
}

function formatRequirement(requirement: LabelSelectorRequirement): string {
  return `${requirement.key} ${requirement.operator}${requirement.values?.length ? ` (${requirement.values.join(', ')})` : ''}`;
}

/** The `matchLabels` pairs a set of labels lacks (or has with another value): labelling fixes these. */
export function missingLabels(selector: LabelSelector | undefined, labels: Labels): [string, string][] {
  return Object.entries(selector?.matchLabels ?? {}).filter(([key, value]) => labels[key] !== value);
}

/** The `matchExpressions` requirements that do not hold, written as `key operator (values)`. */
export function failedExpressions(selector: LabelSelector | undefined, labels: Labels): string[] {
  return (selector?.matchExpressions ?? [])
    .filter((requirement) => !requirementHolds(requirement, labels))
    .map(formatRequirement);
}

export function selects(selector: LabelSelector | undefined, labels: Labels): boolean {
  return missingLabels(selector, labels).length === 0 && failedExpressions(selector, labels).length === 0;
}

/** `a=b, c NotIn (x)` for messages; `everything` for an empty selector. */
export function describeSelector(selector: LabelSelector | undefined): string {
  const parts = [
    ...Object.entries(selector?.matchLabels ?? {}).map(([key, value]) => `${key}=${value}`),
    ...(selector?.matchExpressions ?? []).map(formatRequirement),
  ];
  return parts.length > 0 ? parts.join(', ') : 'everything';
}
