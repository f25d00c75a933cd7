/**
 * tools/partition-point.ts, the benches' bisection: on a sorted array it finds the first index whose value fails
 * the prefix test, as a linear scan does, for "< x" and "<= x" alike (repeated values included).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { partitionPoint } from '../../tools/partition-point.js';
import { announceSeed } from '../support/kit.js';

const seed = announceSeed('partition-point');

describe('partitionPoint', () => {
  it('equals a linear scan for the first value not before x', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 40 }), fc.integer({ min: -1, max: 21 }), fc.boolean(), (values, x, inclusive) => {
        const sorted = [...values].sort((a, b) => a - b);
        const before = (v: number): boolean => (inclusive ? v <= x : v < x);
        const scanned = sorted.findIndex((v) => !before(v));
        expect(partitionPoint(sorted.length, (i) => before(sorted[i]!))).toBe(scanned === -1 ? sorted.length : scanned);
      }),
      { seed, numRuns: 500 },
    );
  });
});
