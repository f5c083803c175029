/**
 * What a property test's generated cases covered: each property records the classes of cases that
 * reached its assertions, and the file's last test fails for a class a property claims but no case
 * reached (a generator that drifted, a filter that let nothing through), which passing runs of the
 * properties alone would never show.
 */
export class CaseClasses {
  private readonly reached = new Map<string, Map<string, number>>();

  /** One case of `property` reached its assertions with these classes. */
  record(property: string, ...classes: string[]): void {
    const counts = this.reached.get(property) ?? new Map<string, number>();
    for (const name of classes) counts.set(name, (counts.get(name) ?? 0) + 1);
    this.reached.set(property, counts);
  }

  /** `property: class` for each claimed class no case reached. */
  missing(claimed: Readonly<Record<string, readonly string[]>>): string[] {
    return Object.entries(claimed).flatMap(([property, classes]) =>
      classes.filter((name) => (this.reached.get(property)?.get(name) ?? 0) === 0).map((name) => `${property}: ${name}`),
    );
  }
}
