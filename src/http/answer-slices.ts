/**
 * Large answers rendered in slices (a queue list, the per-queue metrics: a
 * few thousand items over 1,000 queues), with a turn of the event loop
 * (setImmediate) between slices, so MQTT and AMQP clients are served while a
 * scrape is answered: one answer in one go held the loop for about a
 * millisecond each, and the slowest 1% of round trips landed in those holds
 * (issue 15, `node dist/tools/bench.js scrape`).
 *
 * A renderer is a generator that yields at the end of each slice; the same
 * generator run to its end in one go (renderAtOnce) writes the same bytes,
 * so slicing can never change an answer. The figures an answer shows are read
 * before its first slice (the renderers copy them), so a sliced answer is
 * still a view of one moment.
 */

/** Items (queue objects, series lines) written per slice: about 0.1 ms of the loop each here. */
export const sliceItems = 128;

/** Renders `slices` with a turn of the event loop between slices. */
export async function renderInSlices(slices: Iterator<void>): Promise<void> {
  while (!(slices.next().done ?? false)) await nextTurn();
}

/** Renders `slices` in one go (tests; callers that need the bytes now). */
export function renderAtOnce(slices: Iterator<void>): void {
  while (!(slices.next().done ?? false));
}

/** Resolves on the next turn of the event loop, after the I/O callbacks that are due. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
