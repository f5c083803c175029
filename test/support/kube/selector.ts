/** Label selectors as kube-apiserver reads them from `labelSelector`, for the API double's lists and watches. */

/** One requirement of an equality-based selector (`a=b`, `c!=d`, `e`, `!f`). */
export type Requirement = { key: string; test: (labels: Record<string, string>) => boolean };

export type LabelSelector = readonly Requirement[];

/** The selector, or the message kube-apiserver's 400 carries when it cannot be parsed. */
export function parseLabelSelector(text: string): LabelSelector | string {
  const requirements: Requirement[] = [];
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    let match: RegExpExecArray | null;
    if ((match = /^([^!=\s]+)\s*!=\s*(\S*)$/.exec(part))) {
      const [, key, value] = match as unknown as [string, string, string];
      requirements.push({ key, test: (labels) => labels[key] !== value });
    } else if ((match = /^([^!=\s]+)\s*==?\s*(\S*)$/.exec(part))) {
      const [, key, value] = match as unknown as [string, string, string];
      requirements.push({ key, test: (labels) => labels[key] === value });
    } else if ((match = /^!([^!=\s]+)$/.exec(part))) {
      const key = match[1] as string;
      requirements.push({ key, test: (labels) => !(key in labels) });
    } else if ((match = /^([^!=\s()]+)$/.exec(part))) {
      const key = match[1] as string;
      requirements.push({ key, test: (labels) => key in labels });
    } else {
      // Set-based requirements (`in`, `notin`) are valid upstream; nothing drainguard does uses them.
      return `unable to parse requirement: the API double supports only equality-based selectors, got ${JSON.stringify(part)}`;
    }
  }
  return requirements;
}

/** Whether an object's labels satisfy every requirement (an empty selector selects everything). */
export function selects(selector: LabelSelector, object: { metadata: { [key: string]: unknown } }): boolean {
  const labels = (object.metadata.labels ?? {}) as Record<string, string>;
  return selector.every((requirement) => requirement.test(labels));
}
