import { InputError } from '../../../src/cli/errors';
import { parseYamlStream, printDocument } from '../../../src/cli/yaml-stream';

const sources = (text: string) => parseYamlStream(text, 'in.yaml').map((document) => document.source);

describe('parseYamlStream', () => {
  test.each([
    ['a single document', 'a: 1\n'],
    ['no final newline', 'a: 1'],
    ['leading comment and ---', '# lead\n---\na: 1 # why\n# trailing\n---\nb: [1,2]\n'],
    ['... end markers and directives', '---\na: 1\n...\n%YAML 1.1\n# x\n--- !!map\nc: 3\n# end\n'],
    ['an empty document between two', 'a: 1\n---\n\n---\nc: 1'],
    ['only a comment', '# nothing here\n'],
    ['empty', ''],
    ['CRLF', 'a: 1\r\n---\r\nb: 2\r\n'],
    ['a byte-order mark', '\uFEFFa: 1\n---\nb: 2\n'],
  ])('the documents concatenate to the exact input: %s', (_name, text) => {
    expect(sources(text).join('')).toBe(text);
  });

  test('comments between documents travel with the document they precede', () => {
    expect(sources('a: 1\n...\n# about b\n---\nb: 2\n')).toEqual(['a: 1\n...\n', '# about b\n---\nb: 2\n']);
    expect(sources('a: 1\n# about b\n---\nb: 2\n')).toEqual(['a: 1\n# about b\n', '---\nb: 2\n']);
  });

  test("each document's offset is where its text starts in the stream, the origin of its nodes' ranges", () => {
    const text = '# one\na: 1\n---\nb: 2\n';
    const documents = parseYamlStream(text, 'in.yaml');
    expect(documents.map(({ offset, source }) => text.slice(offset, offset + source.length) === source)).toEqual([true, true]);
    const second = documents[1]!;
    const [start] = second.document.contents!.range!;
    expect(second.source.slice(start - second.offset)).toBe('b: 2\n');
  });

  test('documents are numbered from 1 and parsed', () => {
    const documents = parseYamlStream('a: 1\n---\nb: 2\n', 'in.yaml');
    expect(documents.map((document) => [document.number, document.document.toJS()])).toEqual([
      [1, { a: 1 }],
      [2, { b: 2 }],
    ]);
  });

  test('YAML 1.1 as kubectl reads it: 0644 is octal', () => {
    expect(parseYamlStream('mode: 0644\n', 'in.yaml')[0]!.document.toJS()).toEqual({ mode: 0o644 });
  });

  test('invalid YAML names the file, the document and the position', () => {
    const parse = () => parseYamlStream('a: 1\n---\nb: [\n---\nc: 1\n', 'bad.yaml');
    expect(parse).toThrow(InputError);
    expect(parse).toThrow(/^bad\.yaml: document 2: invalid YAML at line 4, column 1: .+/);
  });

  test('an alias whose anchor is missing or comes later is invalid YAML, with its position', () => {
    expect(() => parseYamlStream('a: 1\n---\nb: *x\nc: &x 1\n', 'alias.yaml')).toThrow(InputError);
    expect(() => parseYamlStream('a: 1\n---\nb: *x\nc: &x 1\n', 'alias.yaml')).toThrow(
      /^alias\.yaml: document 2: invalid YAML at line 3, column 4: the alias \*x has no anchor &x before it$/,
    );
    expect(parseYamlStream('a: &x [1]\nb: *x\n', 'alias.yaml')[0]!.document.toJS()).toEqual({ a: [1], b: [1] });
  });

  test('aliases that expand exponentially (a "billion laughs") are refused as input', () => {
    const levels = ['l0: &l0 [x, x, x, x, x, x, x, x, x, x]'];
    for (let level = 1; level < 9; level++) levels.push(`l${level}: &l${level} [${Array(10).fill(`*l${level - 1}`).join(', ')}]`);
    expect(() => parseYamlStream(`${levels.join('\n')}\n`, 'laughs.yaml')).toThrow(/^laughs\.yaml: document 1: .*alias/);
    expect(() => parseYamlStream(`${levels.join('\n')}\n`, 'laughs.yaml')).toThrow(InputError);
  });

  test('an alias inside its own anchor is refused as input', () => {
    expect(() => parseYamlStream('a: &loop [1, *loop]\n', 'loop.yaml')).toThrow(InputError);
    expect(() => parseYamlStream('a: &loop [1, *loop]\n', 'loop.yaml')).toThrow(/^loop\.yaml: document 1: its aliases cannot be expanded: /);
  });

  test('a duplicate key is invalid, as in kubectl', () => {
    expect(() => parseYamlStream('a: 1\na: 2\n', 'dup.yaml')).toThrow(/dup\.yaml: document 1: invalid YAML at line 2, column 1/);
  });
});

describe('printDocument', () => {
  const print = (text: string) => {
    const [parsed] = parseYamlStream(text, 'in.yaml');
    return printDocument(parsed!.document, text);
  };

  test("keeps kubectl's compact sequences when the original mostly uses them", () => {
    expect(print('a:\n- x\n- y\nb:\n  c:\n  - z\n')).toBe('a:\n- x\n- y\nb:\n  c:\n  - z\n');
  });

  test('keeps indented sequences when the original mostly uses them', () => {
    expect(print('a:\n  - x\nb:\n  - y\n')).toBe('a:\n  - x\nb:\n  - y\n');
  });

  test('keeps CRLF line breaks when the original uses them throughout', () => {
    expect(print('a:\r\n- x\r\nb: "on"\r\n')).toBe('a:\r\n- x\r\nb: "on"\r\n');
    expect(print('a: 1\r\nb: 2\n')).toBe('a: 1\nb: 2\n');
  });

  test('never folds long strings', () => {
    const long = `key: ${'word '.repeat(40).trim()}\n`;
    expect(print(long)).toBe(long);
  });
});
