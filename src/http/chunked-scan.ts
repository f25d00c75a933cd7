/**
 * A long read inside one HTTP request, cut into chunks with a turn of the
 * event loop (setImmediate) between them, so MQTT and AMQP clients keep being
 * served while it runs (issue 12: a collection query blocked every client for
 * seconds; issue 15: so did a trace over the log).
 *
 * A chunk ends after `chunkItems` items or `chunkMs` milliseconds, whichever
 * comes first (a slow read shortens the chunk rather than the other clients'
 * turn). At most `examinedMax` items are examined; a scan stopped there with
 * items left says `partial`, so that no answer is silently shortened.
 */

export interface ChunkBounds {
  readonly chunkItems: number;
  readonly chunkMs: number;
  readonly examinedMax: number;
}

export interface ScanOutcome {
  /** Items handed to `visit`. */
  readonly examined: number;
  /** The examinedMax cap stopped the scan before every item was examined. */
  readonly partial: boolean;
}

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Hands the items of `items` to `visit` in order until they end, `visit`
 * says false, or the cap is reached with items left. One iterator serves the
 * whole scan; it is closed (`return()`) however the scan ends.
 */
export async function scanInChunks<T>(items: Iterator<T>, bounds: ChunkBounds, visit: (item: T) => boolean): Promise<ScanOutcome> {
  let examined = 0;
  let inChunk = 0;
  let chunkStarted = performance.now();
  try {
    for (;;) {
      if (inChunk >= bounds.chunkItems || performance.now() - chunkStarted >= bounds.chunkMs) {
        await yieldToEventLoop();
        inChunk = 0;
        chunkStarted = performance.now();
      }
      const next = items.next();
      if (next.done) return { examined, partial: false };
      if (examined >= bounds.examinedMax) return { examined, partial: true };
      examined++;
      inChunk++;
      if (!visit(next.value)) return { examined, partial: false };
    }
  } finally {
    items.return?.();
  }
}
