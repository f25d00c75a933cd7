/**
 * swapSeparators (MQTT '/' ⇄ AMQP '.') takes a shortcut for names that hold only one of the two
 * separators: it must give what swapping character by character gives, for every string.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { swapSeparators } from '../../src/core/mqtt-sessions.js';
import { announceSeed, testSeed } from '../support/kit.js';

announceSeed('test/unit/swap-separators');

/** The definition: each '/' becomes '.', each '.' becomes '/', everything else stays. */
function swappedOneByOne(name: string): string {
  return [...name].map((ch) => (ch === '/' ? '.' : ch === '.' ? '/' : ch)).join('');
}

const nameParts = fc.constantFrom('/', '.', 'a', 'room-12', '😀', '\ud800', '', '+', '#');

describe('swapSeparators', () => {
  it('swaps each separator and keeps the rest, round-tripping', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.array(nameParts).map((parts) => parts.join(''))), (name) => {
        expect(swapSeparators(name)).toBe(swappedOneByOne(name));
        expect(swapSeparators(swapSeparators(name))).toBe(name);
      }),
      { seed: testSeed, numRuns: 2000 },
    );
  });

  it('examples: one separator kind, both, none', () => {
    expect(swapSeparators('sensors/room-12/temperature')).toBe('sensors.room-12.temperature');
    expect(swapSeparators('stock.nyse.ibm')).toBe('stock/nyse/ibm');
    expect(swapSeparators('a.b/c.d')).toBe('a/b.c/d');
    expect(swapSeparators('plain')).toBe('plain');
  });
});
