/**
 * Short strings to UTF-8 in JavaScript. Buffer.byteLength and Buffer.write cross into C++ on every
 * call, which costs more than a loop over a few ASCII characters; the strings written on hot paths
 * (MQTT 5 property strings, a record body's keys and names, a JSON answer's strings) are mostly
 * that. A character past ASCII, or a long string, goes to Buffer, so the length and bytes are
 * always Buffer's (a lone surrogate is U+FFFD's three bytes).
 */
import { Buffer } from 'node:buffer';

/** Longer strings go to Buffer at once: past this the loop no longer wins. */
export const shortStringMax = 64;

/**
 * Writes the characters of `text` from its start to `out` at `at`, one byte each, up to the first
 * past ASCII; returns how many it wrote (`text.length` when all are ASCII). The caller made room.
 */
export function writeAsciiPrefix(out: Uint8Array, at: number, text: string): number {
  const length = text.length;
  let index = 0;
  for (; index < length; index++) {
    const code = text.charCodeAt(index);
    if (code > 0x7f) break;
    out[at + index] = code;
  }
  return index;
}

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
  if (length <= shortStringMax && writeAsciiPrefix(out, at, text) === length) return length;
  return out.write(text, at, 'utf8');
}
