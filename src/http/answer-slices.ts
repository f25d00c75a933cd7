/**
 * Large answers rendered in slices (a queue list, the per-queue metrics: a
 * few thousand items over 1,000 queues; prom-client's families), with a turn
 * of the event loop (setImmediate) between slices, so MQTT and AMQP clients
 * are served while a scrape is answered: one answer in one go held the loop
 * for a millisecond or more, and the slowest 1% of round trips landed in
 * those holds (issue 15, `node dist/tools/bench.js scrape`).
 *
 * A slice ends once it has held the loop for sliceMs. Every slice is one
 * interruption: a client with one round trip outstanding (a sequential
 * publisher) that lands behind a slice waits for it, whatever its length, so
 * the slowest 1% of its round trips count the slices, not their lengths,
 * once a slice outlasts the gap between its p50 and p99. So slices are
 * short, shorter than that gap for a sequential publisher under a scrape
 * (the scrape bench's no-subscriber row): a scrape then adds at most about
 * sliceMs to any one round trip. Each turn costs the loop a poll of its
 * sockets and a few promise steps, so shorter slices cost a round a little
 * more loop time. Renderers are generators that yield every
 * itemsPerCheck items, where the clock is read; the same generator run to its
 * end in one go (renderAtOnce) writes the same bytes, so slicing can never
 * change an answer. The figures an answer shows are read before its first
 * slice (the renderers copy them), so a sliced answer is a view of one moment.
 */

import { Busy, noteBusy } from '../stage-timing.js';

/** How long one slice may hold the event loop (ms) before the rest waits for the next turn. */
export const sliceMs = 0.2;
/** Items (queue objects, series lines) a renderer writes between two looks at the clock. */
export const itemsPerCheck = 32;

/** Tells a loop when its slice has used its time: `due()` awaits the next turn once sliceMs have passed. */
export class SliceClock {
  private started = performance.now();

  constructor(private readonly budgetMs = sliceMs) {}

  async due(): Promise<void> {
    if (performance.now() - this.started < this.budgetMs) return;
    this.noteSlice();
    await nextTurn();
    this.started = performance.now();
  }

  /** The slice so far, for the benches' stage timing (a noted interval of the loop's HTTP work). */
  noteSlice(): void {
    noteBusy(Busy.http, this.started, performance.now());
  }
}

/** Renders `slices`, with a turn of the event loop whenever a slice has held it for `budgetMs`. */
export async function renderInSlices(slices: Iterator<void>, budgetMs = sliceMs): Promise<void> {
  const clock = new SliceClock(budgetMs);
  while (!(slices.next().done ?? false)) await clock.due();
  clock.noteSlice();
}

/** Renders `slices` in one go (tests; callers that need the bytes now). */
export function renderAtOnce(slices: Iterator<void>): void {
  while (!(slices.next().done ?? false));
}

/** Resolves on the next turn of the event loop, after the I/O callbacks that are due. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
