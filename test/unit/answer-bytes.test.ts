/**
 * The reused answer buffers (src/http/answer-bytes.ts): what is written reads
 * back as the text it stands for, across growth; numbers are written as
 * JSON.stringify writes them; a buffer given back is written again by the
 * next answer, and a writer given back twice is an invariant broken.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AssertionError } from '../../src/assert.js';
import { AnswerBytes, AnswerBytesPool } from '../../src/http/answer-bytes.js';
import { announceSeed, testSeed } from '../support/kit.js';

type Piece = { kind: 'ascii' | 'utf8' | 'range'; text: string } | { kind: 'number'; value: number };

const piece: fc.Arbitrary<Piece> = fc.oneof(
  fc.record({ kind: fc.constant('ascii' as const), text: fc.string({ unit: fc.integer({ min: 0, max: 127 }).map((code) => String.fromCharCode(code)), maxLength: 300 }) }),
  fc.record({ kind: fc.constant('utf8' as const), text: fc.string({ unit: 'binary', maxLength: 300 }) }),
  fc.record({ kind: fc.constant('range' as const), text: fc.string({ unit: 'grapheme', maxLength: 300 }) }),
  fc.record({ kind: fc.constant('number' as const), value: fc.oneof(fc.nat(), fc.maxSafeNat(), fc.double(), fc.integer()) }),
);

describe('answer bytes', () => {
  it('read back as the text written, across growth; numbers as JSON.stringify writes them', () => {
    const seed = announceSeed('answer bytes', testSeed);
    fc.assert(fc.property(fc.array(piece, { maxLength: 40 }), (pieces) => {
      const out = new AnswerBytes(Buffer.alloc(8));
      let expected = '';
      for (const p of pieces) {
        if (p.kind === 'number') {
          out.number(p.value);
          expected += JSON.stringify(p.value);
        } else if (p.kind === 'range') {
          const bytes = Buffer.from(`<${p.text}>`);
          out.range(bytes, 1, bytes.length - 1);
          expected += p.text;
        } else {
          out[p.kind](p.text);
          expected += p.text;
        }
      }
      expect(out.view().toString('utf8')).toBe(Buffer.from(expected).toString('utf8'));
    }), { seed, numRuns: 300 });
  });

  it('a buffer is not lent twice: given back, it is written by the next answer', () => {
    const pool = new AnswerBytesPool();
    const first = pool.take();
    first.ascii('first answer');
    const buffer = first.view().buffer;
    expect(pool.take().view().buffer).not.toBe(buffer); // still lent: a new buffer
    pool.giveBack(first);
    expect(pool.take().view().buffer).toBe(buffer);
  });

  it('giving a writer back twice is an invariant broken', () => {
    const pool = new AnswerBytesPool();
    const writer = pool.take();
    pool.giveBack(writer);
    expect(() => pool.giveBack(writer)).toThrow(AssertionError);
  });
});
