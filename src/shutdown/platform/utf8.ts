/**
 * UTF-8 both ways, without TextEncoder/TextDecoder (QuickJS has neither). Log lines, HTTP requests and
 * admin answers pass through here; a property test checks both directions against Node's Buffer.
 */

/** Encodes `text` as UTF-8; a lone surrogate becomes U+FFFD, as TextEncoder does. */
export function utf8Encode(text: string): Uint8Array {
  const out = new Uint8Array(text.length * 3);
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      out[n++] = c;
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        i++;
      } else {
        c = 0xfffd;
      }
    }
    if (c < 0x800) {
      out[n++] = 0xc0 | (c >> 6);
      out[n++] = 0x80 | (c & 0x3f);
    } else if (c < 0x10000) {
      out[n++] = 0xe0 | (c >> 12);
      out[n++] = 0x80 | ((c >> 6) & 0x3f);
      out[n++] = 0x80 | (c & 0x3f);
    } else {
      out[n++] = 0xf0 | (c >> 18);
      out[n++] = 0x80 | ((c >> 12) & 0x3f);
      out[n++] = 0x80 | ((c >> 6) & 0x3f);
      out[n++] = 0x80 | (c & 0x3f);
    }
  }
  return out.subarray(0, n);
}

/** Pieces handed to String.fromCharCode at once (well below any engine's argument limit). */
const CHARS_PER_CALL = 2048;

/** The characters of UTF-16 code units (or of ASCII/Latin-1 bytes), in pieces the engine accepts. */
export function fromCodeUnits(units: Uint8Array | number[]): string {
  if (units.length <= CHARS_PER_CALL) return String.fromCharCode.apply(null, units as number[]);
  let text = '';
  for (let start = 0; start < units.length; start += CHARS_PER_CALL) {
    const end = Math.min(units.length, start + CHARS_PER_CALL);
    const piece = units instanceof Uint8Array ? units.subarray(start, end) : units.slice(start, end);
    text += String.fromCharCode.apply(null, piece as number[]);
  }
  return text;
}

/** True when every byte is ASCII, so the bytes are their own characters. */
export function isAscii(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; i++) if ((bytes[i] as number) >= 0x80) return false;
  return true;
}

/**
 * Decodes UTF-8. Each malformed sequence becomes one U+FFFD per maximal invalid subpart (the WHATWG
 * decoder's rule, which Node's Buffer follows too).
 */
export function utf8Decode(bytes: Uint8Array): string {
  if (isAscii(bytes)) return fromCodeUnits(bytes);
  const units: number[] = [];
  let text = '';
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const b = bytes[i] as number;
    let code = 0xfffd;
    let next = i + 1;
    if (b < 0x80) {
      code = b;
    } else if (b >= 0xc2 && b <= 0xf4) {
      const length = b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
      // The allowed range of the second byte excludes overlong forms and surrogates.
      const low = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80;
      const high = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf;
      let value = b & (length === 2 ? 0x1f : length === 3 ? 0x0f : 0x07);
      let j = i + 1;
      let complete = true;
      for (let k = 1; k < length; k++, j++) {
        const c = j < n ? (bytes[j] as number) : -1;
        const min = k === 1 ? low : 0x80;
        const max = k === 1 ? high : 0xbf;
        if (c < min || c > max) {
          complete = false;
          break;
        }
        value = (value << 6) | (c & 0x3f);
      }
      next = j;
      if (complete) code = value;
    }
    if (code >= 0x10000) {
      code -= 0x10000;
      units.push(0xd800 + (code >> 10), 0xdc00 + (code & 0x3ff));
    } else {
      units.push(code);
    }
    i = next;
    if (units.length >= CHARS_PER_CALL) text += fromCodeUnits(units.splice(0));
  }
  return text + fromCodeUnits(units);
}
