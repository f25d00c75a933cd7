/**
 * The UTF-8 length and bytes of the short strings of MQTT 5 properties (user property names and
 * values, content types, response topics), worked out in JavaScript: Buffer.byteLength and
 * Buffer.write cross into C++ on every call, which costs more than a loop over a few ASCII
 * characters (a delivery with two user properties made eight such calls). A string with a character
 * past ASCII, or a long one, goes to Buffer as before, so the bytes are always Buffer's.
 */
import { Buffer } from 'node:buffer';

/** Longer strings go to Buffer at once: past this the loop no longer wins. */
const shortStringMax = 64;

/** The bytes `text` takes in UTF-8 (as Buffer.byteLength). */
export function utf8Length(text: string): number {
  const length = text.length;
  if (length > shortStringMax) return Buffer.byteLength(text, 'utf8');
  for (let index = 0; index < length; index++) {
    if (text.charCodeAt(index) > 0x7f) return Buffer.byteLength(text, 'utf8');
  }
  return length;
}

/** Writes `text` in UTF-8 at `at` (the caller made room: utf8Length); returns the bytes written (as Buffer.write). */
export function writeUtf8(out: Buffer, at: number, text: string): number {
  const length = text.length;
  if (length <= shortStringMax) {
    let index = 0;
    for (; index < length; index++) {
      const code = text.charCodeAt(index);
      if (code > 0x7f) break;
      out[at + index] = code;
    }
    if (index === length) return length;
  }
  return out.write(text, at, 'utf8');
}
