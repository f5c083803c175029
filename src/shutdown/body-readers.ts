/** The simple BodyReaders: a bounded text collector and a reader that needs no body at all. */
import type { BodyReader } from './http1';
import { platform } from './platform/current';
import { utf8Decode } from './platform/utf8';

const NOT_ASCII = /[^\x00-\x7f]/;

/** The body as text, or `undefined` when it is larger than `maxBytes` (reading stops there). */
export function textReader(maxBytes: number): BodyReader<string | undefined> {
  const pieces: Uint8Array[] = [];
  let size = 0;
  let tooLarge = false;
  return {
    push(bytes) {
      size += bytes.length;
      if (size > maxBytes) {
        tooLarge = true;
        pieces.length = 0;
        return false;
      }
      pieces.push(bytes.slice());
      return true;
    },
    finish() {
      if (tooLarge) return undefined;
      const all = new Uint8Array(size);
      let offset = 0;
      for (const piece of pieces) {
        all.set(piece, offset);
        offset += piece.length;
      }
      // Natively when ASCII (Envoy's answers are): a loop over the bytes in JavaScript, and the
      // argument lists of String.fromCharCode, cost a 200 KB answer a second of a throttled node.
      const text = platform.latin1(all);
      return NOT_ASCII.test(text) ? utf8Decode(all) : text;
    },
  };
}

/** For answers whose status is all that matters (the mutating endpoints): stops at the first byte. */
export function statusOnly(): BodyReader<undefined> {
  return { push: () => false, finish: () => undefined };
}
