/**
 * The scrape bench's blocks (tools/bench-scrape-blocks.ts): a machine whose speed drifts linearly over a block, and
 * loads that slow the broker by fixed factors, give block ratios that are those factors whatever the drift (the
 * window order is drift-balanced), each labelled with its own share.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shareRatios, summarizeShares, windowOrder, type WindowKind } from '../../tools/bench-scrape-blocks.js';
import { announceSeed, testSeed } from '../support/kit.js';

/** Each kind's throughput windows, as bench-scrape.ts pools them: [received, seconds] per window, in windowOrder. */
function driftedBlock(rateAt: (position: number) => number, slowdown: Readonly<Record<WindowKind, number>>): Record<WindowKind, Array<[number, number]>> {
  const windows: Record<WindowKind, Array<[number, number]>> = { plain: [], decoy: [], scraped: [] };
  windowOrder.forEach((kind, position) => windows[kind].push([rateAt(position) / slowdown[kind], 1]));
  return windows;
}

const secondsPerMessage = (windows: ReadonlyArray<[number, number]>): number =>
  windows.reduce((sum, [, seconds]) => sum + seconds, 0) / windows.reduce((sum, [received]) => sum + received, 0);

describe('scrape bench blocks', () => {
  it('recover the loads\' slowdowns as the machine\'s, the broker\'s and the issue\'s ratios under any linear drift', () => {
    announceSeed('scrape bench blocks');
    const factor = fc.double({ min: 0.5, max: 3, noNaN: true });
    fc.assert(
      fc.property(fc.double({ min: 100, max: 1e6, noNaN: true }), fc.double({ min: -0.15, max: 0.15, noNaN: true }), factor, factor, (rate, drift, machine, broker) => {
        const block = driftedBlock((position) => rate * (1 + drift * position), { plain: 1, decoy: machine, scraped: machine * broker });
        const ratios = shareRatios((kind) => secondsPerMessage(block[kind]));
        expect(ratios.machine).toBeCloseTo(machine, 9);
        expect(ratios.broker).toBeCloseTo(broker, 9);
        expect(ratios.issue).toBeCloseTo(machine * broker, 9);
      }),
      { seed: testSeed, numRuns: 500 },
    );
  });

  it('summarize each share over the blocks as its median and range', () => {
    const blocks = [
      { issue: 1.2, machine: 1.1, broker: 1.3 },
      { issue: 0.9, machine: 1.0, broker: 0.8 },
      { issue: 1.0, machine: 1.4, broker: 1.02 },
      { issue: 1.1, machine: 0.7, broker: 1.5 },
    ];
    expect(summarizeShares(blocks)).toEqual({
      issue: { median: 1.05, min: 0.9, max: 1.2 },
      machine: { median: 1.05, min: 0.7, max: 1.4 },
      broker: { median: expect.closeTo(1.16, 12) as number, min: 0.8, max: 1.5 },
    });
  });
});
