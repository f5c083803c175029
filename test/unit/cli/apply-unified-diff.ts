/**
 * Applies a unified diff to `original`, checking every context and removed line against it: an
 * independent check (shared by the unit and e2e tests) that hunks and line numbers are right.
 */
export function applyUnifiedDiff(original: string, diff: string): string {
  const source = original.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const out: string[] = [];
  let cursor = 0;
  const body = diff.split('\n').slice(2);
  for (let i = 0; i < body.length; i++) {
    const header = /^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@$/.exec(body[i]!);
    if (!header) continue;
    const oldCount = header[2] === undefined ? 1 : Number(header[2]);
    const oldStart = oldCount === 0 ? Number(header[1]) : Number(header[1]) - 1;
    out.push(...source.slice(cursor, oldStart));
    cursor = oldStart;
    for (i++; i < body.length && !body[i]!.startsWith('@@'); i++) {
      const line = body[i]!;
      const noNewline = body[i + 1] === '\\ No newline at end of file';
      const text = line.slice(1) + (noNewline ? '' : '\n');
      if (line.startsWith(' ')) {
        if (source[cursor] !== text) throw new Error(`line ${cursor + 1}: expected ${JSON.stringify(text)}, found ${JSON.stringify(source[cursor])}`);
        out.push(text);
        cursor++;
      } else if (line.startsWith('-')) {
        if (source[cursor] !== text) throw new Error(`line ${cursor + 1}: expected ${JSON.stringify(text)}, found ${JSON.stringify(source[cursor])}`);
        cursor++;
      } else if (line.startsWith('+')) out.push(text);
      if (noNewline) i++;
    }
    i--;
  }
  out.push(...source.slice(cursor));
  return out.join('');
}
