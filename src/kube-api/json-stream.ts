/**
 * JSON read as it arrives, so no answer is held whole: a watch's events one line at a time, and a
 * list's items one at a time. A page of 500 pods is 3 to 10 MB of text and three times that parsed;
 * read item by item, the reporter holds one pod's text and objects at a time, which it reduces to a
 * few hundred bytes before it reads the next.
 *
 * Both take Buffers in any split (a UTF-8 character, a string, a number cut anywhere) and are linear in
 * the bytes they see. An item or a line longer than `maxBytes` fails the stream instead of growing
 * without bound (a Pod is at most 1.5 MiB in etcd; the default allows twice the largest request).
 */

/** The longest line or item accepted, bytes. */
export const DEFAULT_MAX_JSON_BYTES = 4 * 1024 * 1024;

const NEWLINE = 0x0a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;

/** Bytes collected across chunks, bounded. */
class Pieces {
  private parts: Buffer[] = [];
  private length = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly what: string,
  ) {}

  get size(): number {
    return this.length;
  }

  add(chunk: Buffer, start: number, end: number): void {
    if (end <= start) return;
    this.length += end - start;
    if (this.length > this.maxBytes) throw new Error(`${this.what} is longer than ${this.maxBytes} bytes`);
    this.parts.push(chunk.subarray(start, end));
  }

  /** The collected text, and empty again. */
  take(): string {
    const text = this.parts.length === 1 ? this.parts[0]!.toString('utf8') : Buffer.concat(this.parts, this.length).toString('utf8');
    this.parts = [];
    this.length = 0;
    return text;
  }
}

function parse(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${what} is not JSON: ${(error as Error).message}`);
  }
}

/** Newline-delimited JSON (a watch): each complete line, parsed, to `onValue`; blank lines are skipped. */
export class JsonLines {
  private readonly pending: Pieces;

  constructor(
    private readonly onValue: (value: unknown) => void,
    maxBytes = DEFAULT_MAX_JSON_BYTES,
  ) {
    this.pending = new Pieces(maxBytes, 'a line of the stream');
  }

  push(chunk: Buffer): void {
    let start = 0;
    for (let newline = chunk.indexOf(NEWLINE); newline !== -1; newline = chunk.indexOf(NEWLINE, start)) {
      this.pending.add(chunk, start, newline);
      start = newline + 1;
      this.line();
    }
    this.pending.add(chunk, start, chunk.length);
  }

  /** The stream ended: a last line without its newline is still a line. */
  end(): void {
    this.line();
  }

  private line(): void {
    if (this.pending.size === 0) return;
    const text = this.pending.take();
    if (text.trim() === '') return;
    this.onValue(parse(text, 'a line of the stream'));
  }
}

/**
 * A Kubernetes list (`{"kind":…,"metadata":{…},"items":[{…},…]}`): each object of the top-level
 * `items` array, parsed, to `onItem` as soon as it is complete; at the end, the rest of the object
 * (everything but the items, `items` then `[]`), parsed, for its metadata.
 */
export class JsonListItems {
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** A string at the top object's level is being read (a key, or a value). */
  private stringAtTop = false;
  private readonly topString: Pieces;
  /** The last string read at the top object's level, and whether a colon followed it (a key). */
  private lastTopString = '';
  private key = '';
  /** Inside the top-level `items` array. */
  private inItems = false;
  private itemsDone = false;
  /** An item is being read (its first byte was seen). */
  private inItem = false;
  private readonly item: Pieces;
  private readonly rest: Pieces;

  constructor(
    private readonly onItem: (item: unknown) => void,
    maxBytes = DEFAULT_MAX_JSON_BYTES,
  ) {
    this.item = new Pieces(maxBytes, 'an item of the list');
    this.topString = new Pieces(1024, 'a key of the list');
    this.rest = new Pieces(maxBytes, 'the list without its items');
  }

  push(chunk: Buffer): void {
    // Bytes from `restFrom` on belong to the rest of the list; from `itemFrom` on to the current item.
    let restFrom = this.inItems ? -1 : 0;
    let itemFrom = this.inItem ? 0 : -1;
    let stringFrom = this.stringAtTop ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (byte === BACKSLASH) this.escaped = true;
        else if (byte === QUOTE) {
          this.inString = false;
          if (this.stringAtTop) {
            this.topString.add(chunk, stringFrom, i);
            this.stringAtTop = false;
            stringFrom = -1;
            this.lastTopString = this.topString.take();
          }
        }
        continue;
      }
      if (this.inItems && this.depth === 2 && !this.inItem) {
        // Between items: whitespace, commas, or the array's end.
        if (byte === CLOSE_BRACKET) {
          this.inItems = false;
          this.itemsDone = true;
          this.depth = 1;
          restFrom = i;
          continue;
        }
        if (byte === OPEN_BRACE) {
          this.inItem = true;
          itemFrom = i;
          this.depth = 3;
          continue;
        }
        if (byte === COMMA || byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) continue;
        throw new Error(`an item of the list is not an object (it starts with ${JSON.stringify(String.fromCharCode(byte))})`);
      }
      switch (byte) {
        case QUOTE:
          this.inString = true;
          if (this.depth === 1) {
            this.stringAtTop = true;
            stringFrom = i + 1;
          }
          break;
        case COLON:
          if (this.depth === 1) this.key = this.lastTopString;
          break;
        case OPEN_BRACE:
        case OPEN_BRACKET:
          this.depth++;
          if (byte === OPEN_BRACKET && this.depth === 2 && this.key === 'items' && !this.itemsDone) {
            // `[` stays in the rest, the items do not; the rest gets `]` when the array ends.
            this.rest.add(chunk, restFrom, i + 1);
            restFrom = -1;
            this.inItems = true;
          }
          break;
        case CLOSE_BRACE:
        case CLOSE_BRACKET:
          this.depth--;
          if (this.depth < 0) throw new Error('the list has more closing brackets than opening ones');
          if (this.inItem && this.depth === 2) {
            this.item.add(chunk, itemFrom, i + 1);
            this.inItem = false;
            itemFrom = -1;
            this.onItem(parse(this.item.take(), 'an item of the list'));
          }
          break;
        case COMMA:
          if (this.depth === 1) this.key = '';
          break;
      }
    }
    if (this.stringAtTop) this.topString.add(chunk, stringFrom, chunk.length);
    if (this.inItem) this.item.add(chunk, itemFrom, chunk.length);
    if (restFrom !== -1) this.rest.add(chunk, restFrom, chunk.length);
  }

  /** The list without its items, parsed; throws when the answer ended inside it. */
  end(): Record<string, unknown> {
    if (this.depth !== 0 || this.inString || this.inItems) throw new Error('the list ended before it was complete');
    const rest = parse(this.rest.take(), 'the list');
    if (typeof rest !== 'object' || rest === null || Array.isArray(rest)) throw new Error('the list is not a JSON object');
    return rest as Record<string, unknown>;
  }
}
