/**
 * Bisection over a sorted array, for the benches' joins of traces with intervals and timelines (millions of
 * entries in a whole-machine perf trace): the first index in [0, length) where `before(index)` is false, given that
 * it holds on a prefix and fails on the rest; `length` when it holds everywhere.
 */
export function partitionPoint(length: number, before: (index: number) => boolean): number {
  let low = 0;
  let high = length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (before(middle)) low = middle + 1;
    else high = middle;
  }
  return low;
}
