/**
 * The scrape bench's blocks (bench-scrape.ts): the order of one block's
 * windows, and the three ratios one block gives. A `plain` window runs with no
 * monitoring load, a `decoy` one with the scraper fetching the broker's
 * captured answers from a decoy process (the machine's part: the scraper's own
 * CPU, the loopback copies), a `scraped` one with the scraper on the broker.
 */

export type WindowKind = 'plain' | 'decoy' | 'scraped';

/**
 * One block's windows in order. Each kind's mean position is the same (2.5), so a drift of the machine linear over
 * the block weighs on the three kinds alike; the scraped windows neighbour the decoy ones, the broker's comparison.
 */
export const windowOrder: readonly WindowKind[] = ['plain', 'decoy', 'scraped', 'scraped', 'decoy', 'plain'];

/**
 * One block's ratios, each > 1 when the heavier load slowed the broker: `issue` scraped against plain (issue 15's
 * question), `machine` decoy against plain (what the scraper costs the machine), `broker` scraped against decoy (what
 * answering costs the broker beyond that). Per block, issue = machine x broker.
 */
export interface ShareRatios { readonly issue: number; readonly machine: number; readonly broker: number }

/** The ratios of one block from each kind's cost, larger meaning slower (a latency; seconds per message for a rate). */
export function shareRatios(cost: (kind: WindowKind) => number): ShareRatios {
  const plain = cost('plain');
  const decoy = cost('decoy');
  const scraped = cost('scraped');
  return { issue: scraped / plain, machine: decoy / plain, broker: scraped / decoy };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export interface BlockRatioSummary { readonly median: number; readonly min: number; readonly max: number }

/** Each share's median over the blocks, with its range. */
export function summarizeShares(blocks: readonly ShareRatios[]): Record<keyof ShareRatios, BlockRatioSummary> {
  const of = (share: keyof ShareRatios): BlockRatioSummary => {
    const ratios = blocks.map((block) => block[share]);
    return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) };
  };
  return { issue: of('issue'), machine: of('machine'), broker: of('broker') };
}
