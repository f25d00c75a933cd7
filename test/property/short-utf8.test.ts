/**
 * short-utf8.ts works out the UTF-8 of short property strings in JavaScript: for any string (ASCII,
 * any Unicode, lone surrogates, short and long), its length and bytes are Buffer's own.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { utf8Length, writeUtf8 } from '../../src/protocols/mqtt/short-utf8.js';
import { announceSeed, testSeed } from '../support/kit.js';

const anyText = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.string({ unit: fc.constantFrom('a', 'Z', '0', '/', '\u007f', '\u0080', 'é', '€', '\ud83d', '\ude00', '😀'), maxLength: 80 }),
);

describe('short UTF-8 strings', () => {
  it('have the length and the bytes Buffer gives them', () => {
    announceSeed('short utf8');
    fc.assert(
      fc.property(anyText, fc.nat({ max: 8 }), (text, offset) => {
        const expected = Buffer.from(text, 'utf8');
        expect(utf8Length(text)).toBe(expected.length);
        const out = Buffer.alloc(offset + expected.length + 4, 0xee);
        expect(writeUtf8(out, offset, text)).toBe(expected.length);
        expect(out.subarray(offset, offset + expected.length)).toEqual(expected);
        expect(out.subarray(offset + expected.length).every((byte) => byte === 0xee)).toBe(true);
      }),
      { seed: testSeed, numRuns: 500 },
    );
  });
});
