/**
 * FrameOffsets (src/log/frame-offsets.ts) keeps offsets in u32 slots and widens them when a segment passes
 * 4 GiB: against a plain array of offsets, any frames added one by one or as shifted batches, starting
 * anywhere (near 4 GiB too), give back every offset and length exactly, after truncation and trimming as well.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FrameOffsets } from '../../src/log/frame-offsets.js';
import { announceSeed, testSeed } from '../support/kit.js';

const step = fc.oneof(
  fc.record({ kind: fc.constant('add' as const), lengths: fc.array(fc.integer({ min: 20, max: 1 << 20 }), { minLength: 1, maxLength: 20 }) }),
  fc.record({ kind: fc.constant('batch' as const), lengths: fc.array(fc.integer({ min: 20, max: 1 << 30 }), { minLength: 1, maxLength: 20 }) }),
  fc.record({ kind: fc.constant('truncate' as const), keep: fc.nat() }),
  fc.record({ kind: fc.constant('trim' as const) }),
);

describe('FrameOffsets', () => {
  it('gives back exact offsets and lengths on either side of 4 GiB', () => {
    announceSeed('frame-offsets');
    fc.assert(
      fc.property(fc.constantFrom(0, 64, 2 ** 32 - 5_000_000, 2 ** 32 + 7), fc.array(step, { maxLength: 30 }), (start, steps) => {
        const index = new FrameOffsets(start);
        const model: number[] = [];
        let end = start;
        for (const s of steps) {
          if (s.kind === 'add') {
            for (const length of s.lengths) {
              index.add(length);
              model.push(end);
              end += length;
            }
          } else if (s.kind === 'batch') {
            const batch = new FrameOffsets(0);
            for (const length of s.lengths) batch.add(length);
            index.addShifted(batch, end);
            for (const length of s.lengths) {
              model.push(end);
              end += length;
            }
          } else if (s.kind === 'truncate') {
            const keep = s.keep % (model.length + 1);
            index.truncate(keep);
            if (keep < model.length) end = model[keep]!;
            model.length = keep;
          } else {
            index.trim();
          }
          expect(index.count).toBe(model.length);
          expect(index.end).toBe(end);
        }
        model.forEach((offset, i) => {
          expect(index.offsetOf(i)).toBe(offset);
          expect(index.lengthOf(i)).toBe((model[i + 1] ?? end) - offset);
        });
      }),
      { seed: testSeed, numRuns: 300 },
    );
  });
});
