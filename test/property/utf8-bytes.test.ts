/**
 * utf8-bytes.ts writes short strings to UTF-8 in JavaScript: for any string (ASCII, U+0000, any
 * Unicode, astral characters, lone surrogates; lengths on either side of the short-string bound),
 * its length and bytes are Buffer's own, and the ASCII prefix writer writes exactly the characters
 * before the first one past ASCII, nothing after them.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shortStringMax, utf8Length, writeAsciiPrefix, writeUtf8 } from '../../src/utf8-bytes.js';
import { announceSeed, testSeed } from '../support/kit.js';

const characters = ['a', 'Z', '0', '/', '\u0000', '\u007f', '\u0080', 'é', '\u07ff', '\u0800', '€', '\uffff', '\ud83d', '\ude00', '😀', '\u{10ffff}'];
const mostlyAscii = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('a', '\u0000', '\u007f', '~') },
  { weight: 1, arbitrary: fc.constantFrom(...characters) },
);
/** Lengths (in UTF-16 units) around the bound; an astral character counts two. */
const aroundTheBound = fc.integer({ min: shortStringMax - 3, max: shortStringMax + 3 })
  .chain((length) => fc.string({ unit: mostlyAscii, minLength: length, maxLength: length }));

const anyText = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.string({ unit: fc.constantFrom(...characters), maxLength: 80 }),
  aroundTheBound,
  fc.constantFrom('', 'a'.repeat(shortStringMax), `${'a'.repeat(shortStringMax - 1)}é`, `${'a'.repeat(shortStringMax - 1)}\ud83d`, 'a'.repeat(shortStringMax + 1)),
);

/** `out` filled with a byte no UTF-8 of these strings ends with at the tail, to see nothing is written past the end. */
const filler = 0xee;

describe('short strings to UTF-8', () => {
  it('have the length and the bytes Buffer gives them', () => {
    announceSeed('utf8 bytes');
    fc.assert(
      fc.property(anyText, fc.nat({ max: 8 }), (text, offset) => {
        const expected = Buffer.from(text, 'utf8');
        expect(utf8Length(text)).toBe(Buffer.byteLength(text, 'utf8'));
        const out = Buffer.alloc(offset + expected.length + 4, filler);
        expect(writeUtf8(out, offset, text)).toBe(expected.length);
        expect(out.subarray(offset, offset + expected.length)).toEqual(expected);
        expect(out.subarray(0, offset).every((byte) => byte === filler)).toBe(true);
        expect(out.subarray(offset + expected.length).every((byte) => byte === filler)).toBe(true);
      }),
      { seed: testSeed, numRuns: 1000 },
    );
  });

  it('the ASCII prefix is written as Buffer writes it, up to the first other character, into a Buffer or a plain Uint8Array', () => {
    announceSeed('utf8 ascii prefix');
    fc.assert(
      fc.property(anyText, fc.nat({ max: 8 }), fc.boolean(), (text, offset, plain) => {
        const prefix = /^[\u0000-\u007f]*/.exec(text)![0];
        const out = plain ? new Uint8Array(offset + text.length + 4).fill(filler) : Buffer.alloc(offset + text.length + 4, filler);
        expect(writeAsciiPrefix(out, offset, text)).toBe(prefix.length);
        expect(Buffer.from(out.subarray(offset, offset + prefix.length))).toEqual(Buffer.from(prefix, 'utf8'));
        expect(out.subarray(offset + prefix.length).every((byte) => byte === filler)).toBe(true);
      }),
      { seed: testSeed, numRuns: 1000 },
    );
  });
});
