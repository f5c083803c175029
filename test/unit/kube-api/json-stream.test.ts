/**
 * JSON read as it arrives (src/kube-api/json-stream.ts): whatever the chunks, the same values as
 * JSON.parse of the whole text, and a clear error for what is not a list or not JSON.
 */
import fc from 'fast-check';
import { JsonLines, JsonListItems } from '../../../src/kube-api/json-stream';

/** `text` as Buffers cut at the given byte offsets (sorted, deduplicated, inside the text). */
function cut(text: string, offsets: readonly number[]): Buffer[] {
  const bytes = Buffer.from(text, 'utf8');
  const at = [...new Set(offsets.map((offset) => offset % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let start = 0;
  for (const end of [...at, bytes.length]) {
    chunks.push(bytes.subarray(start, end));
    start = end;
  }
  return chunks;
}

function readList(chunks: readonly Buffer[], maxBytes?: number): { items: unknown[]; rest: Record<string, unknown> } {
  const items: unknown[] = [];
  const reader = new JsonListItems((item) => items.push(item), maxBytes);
  for (const chunk of chunks) reader.push(chunk);
  return { items, rest: reader.end() };
}

const item = fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 6 });
const list = fc.record({
  kind: fc.constant('PodList'),
  apiVersion: fc.constant('v1'),
  metadata: fc.record({ resourceVersion: fc.string(), continue: fc.string(), items: fc.jsonValue() }),
  items: fc.array(item, { maxLength: 8 }),
});

test('a list cut anywhere gives its items in order, and the rest of the list with no items, as JSON.parse reads them', () => {
  fc.assert(
    fc.property(list, fc.array(fc.nat(), { maxLength: 12 }), fc.boolean(), (value, offsets, indented) => {
      const text = JSON.stringify(value, null, indented ? 2 : undefined);
      const { items, rest } = readList(cut(text, offsets));
      expect(items).toEqual(JSON.parse(JSON.stringify(value.items)));
      expect(rest).toEqual({ ...JSON.parse(JSON.stringify(value)), items: [] });
    }),
    { numRuns: 300 },
  );
});

test('the items array is found wherever it is among the keys, and only at the top level', () => {
  const text = '{"items":[{"a":1}],"metadata":{"items":[{"not":"an item"}],"resourceVersion":"7"},"kind":"List"}';
  expect(readList([Buffer.from(text)])).toEqual({ items: [{ a: 1 }], rest: { items: [], metadata: { items: [{ not: 'an item' }], resourceVersion: '7' }, kind: 'List' } });
  const quoted = '{"kind":"items","x":"\\"items\\"","items":[{"s":"]}\\\\"}]}';
  expect(readList([Buffer.from(quoted)])).toEqual({ items: [{ s: ']}\\' }], rest: { kind: 'items', x: '"items"', items: [] } });
});

test('a character of several bytes cut between two chunks is read whole', () => {
  const text = JSON.stringify({ items: [{ name: 'ünïcødé ✓ 🚀' }], metadata: { resourceVersion: '1' } });
  for (let at = 1; at < Buffer.byteLength(text); at++) expect(readList(cut(text, [at])).items).toEqual([{ name: 'ünïcødé ✓ 🚀' }]);
});

test('what is not a list of objects, or ends early, fails with what was wrong', () => {
  expect(() => readList([Buffer.from('{"items":[1,2]}')])).toThrow('an item of the list is not an object (it starts with "1")');
  expect(() => readList([Buffer.from('{"items":[{"a":1}')])).toThrow('the list ended before it was complete');
  expect(() => readList([Buffer.from('{"items":[{"a":tru}]}')])).toThrow(/^an item of the list is not JSON/);
  expect(() => readList([Buffer.from('[]')])).toThrow('the list is not a JSON object');
  expect(() => readList([Buffer.from('{"a":1}}')])).toThrow('the list has more closing brackets than opening ones');
});

test('an item longer than the limit fails the list instead of growing without bound', () => {
  const text = JSON.stringify({ items: [{ a: 'x'.repeat(100) }, { b: 'y'.repeat(2000) }] });
  const items: unknown[] = [];
  const reader = new JsonListItems((value) => items.push(value), 1000);
  expect(() => cut(text, [10, 500, 900, 1500]).forEach((chunk) => reader.push(chunk))).toThrow('an item of the list is longer than 1000 bytes');
  expect(items).toEqual([{ a: 'x'.repeat(100) }]);
});

describe('lines', () => {
  const readLines = (chunks: readonly Buffer[], maxBytes?: number) => {
    const values: unknown[] = [];
    const lines = new JsonLines((value) => values.push(value), maxBytes);
    for (const chunk of chunks) lines.push(chunk);
    lines.end();
    return values;
  };

  test('newline-delimited values cut anywhere are read one per line, blank lines skipped, the last without its newline too', () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue(), { minLength: 1, maxLength: 8 }), fc.array(fc.nat(), { maxLength: 12 }), (values, offsets) => {
        const text = `${values.map((value) => JSON.stringify(value)).join('\n\n')}`;
        expect(readLines(cut(text, offsets))).toEqual(JSON.parse(JSON.stringify(values)));
      }),
      { numRuns: 300 },
    );
  });

  test('a line that is not JSON, or longer than the limit, fails the stream', () => {
    expect(() => readLines([Buffer.from('{"type":"ADDED"}\n{"type":\n')])).toThrow(/^a line of the stream is not JSON/);
    expect(() => readLines([Buffer.from('x'.repeat(600)), Buffer.from('y'.repeat(600))], 1000)).toThrow('a line of the stream is longer than 1000 bytes');
  });
});
