/**
 * The fast body decoder (src/log/body-decoder.ts) against @msgpack/msgpack:
 * for any value the Encoder writes, it gives the same value as the library or
 * steps aside (`unsupported`), and it never returns a binary value that
 * aliases the source. Random bytes must never make it throw or give a value
 * the library would not.
 */
import { decode, encode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBody, unsupported } from '../../src/log/body-decoder.js';
import { announceSeed } from '../support/kit.js';

const seed = announceSeed('test/property/body-decoder');

const value = fc.letrec((tie) => ({
  any: fc.oneof(
    { depthSize: 'small' },
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'binary', maxLength: 10 }),
    fc.constantFrom('bench-session', 'bench-q', 'a', 'x'.repeat(70)),
    fc.integer(),
    fc.maxSafeInteger(),
    fc.double(),
    fc.float(),
    fc.boolean(),
    fc.constant(null),
    fc.date({ noInvalidDate: true }),
    fc.uint8Array({ maxLength: 300 }),
    fc.array(tie('any'), { maxLength: 5 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie('any'), { maxKeys: 5 }),
  ),
})).any;

/** Decodes from the middle of a bigger chunk, as the cursor does. */
function fastDecode(encoded: Uint8Array): { result: unknown; chunk: Uint8Array } {
  const chunk = new Uint8Array(encoded.length + 16).fill(0xc1);
  chunk.set(encoded, 7);
  const result = decodeBody(chunk, new DataView(chunk.buffer), 7, encoded.length);
  return { result, chunk };
}

describe('body decoder', () => {
  it('equals @msgpack/msgpack on whatever the Encoder writes, or steps aside', () => {
    let fast = 0;
    fc.assert(fc.property(value, (input) => {
      const encoded = encode(input);
      const { result, chunk } = fastDecode(encoded);
      if (result === unsupported) return;
      fast += 1;
      expect(result).toStrictEqual(decode(encoded));
      chunk.fill(0);
      expect(result).toStrictEqual(decode(encoded));
    }), { seed, numRuns: 3000 });
    expect(fast).toBeGreaterThan(1000);
  });

  it('decodes a msg body like the bench writes, interned strings included', () => {
    const body = { t: 'bench/x', p: new Uint8Array(100).fill(42), qos: 1, s: [['bench-session', 7, 1]], u: [['bench-q', 7]], from: 'bench' };
    const decodedFirst = fastDecode(encode(body));
    const first = decodedFirst.result as typeof body;
    const second = fastDecode(encode(body)).result as typeof body;
    expect(first).toStrictEqual(body);
    expect(second.s[0]![0]).toBe(first.s[0]![0]);
    // Payloads share a pool but never each other's bytes, nor the chunk's.
    expect(second.p.buffer).not.toBe(decodedFirst.chunk.buffer);
    second.p.fill(1);
    decodedFirst.chunk.fill(2);
    expect(first.p).toStrictEqual(body.p);
  });

  it('never throws on random bytes, and agrees with the library when it decodes', () => {
    fc.assert(fc.property(fc.uint8Array({ minLength: 1, maxLength: 64 }), (bytes) => {
      const { result } = fastDecode(bytes);
      if (result !== unsupported) expect(result).toStrictEqual(decode(bytes));
    }), { seed, numRuns: 5000 });
  });
});
