/**
 * The metrics expositions (/metrics, /metrics/per-object) rendered at most
 * once per stats interval: a request within the interval of the last render
 * gets that render's bytes again. RabbitMQ's own statistics are what its
 * objects last emitted, every collect_statistics_interval (5 s by default),
 * so a RabbitMQ scrape shows figures up to 5 s old too; Prometheus scrapes
 * every 15 s or more and always gets a fresh render, while a scraper or a
 * console asking every second no longer makes the broker's event loop render
 * the same families again each time (issue 15: the two expositions were half
 * of the loop's work in a scrape round, and their counters move with every
 * message, so no check of "nothing changed" could skip them under load).
 *
 * The interval runs from when a render began (its figures are read then).
 * Requests that arrive while a render runs share it. An interval of 0 renders
 * every request, as before. What remains of the interval (remainingMs) lets
 * the HTTP listener's socket thread give the same bytes again itself
 * (kept-answers.js), without waking the event loop.
 */

export class KeptExposition<T> {
  private kept: { readonly at: number; readonly bytes: T } | undefined;
  private rendering: Promise<T> | undefined;

  /** `now` is a clock in ms (the HTTP server's). */
  constructor(private readonly intervalMs: number, private readonly now: () => number) {}

  /** The kept render while it is younger than the interval, else a new one from `render` (then kept). */
  get(render: () => Promise<T>): Promise<T> {
    if (this.intervalMs <= 0) return render();
    if (this.kept !== undefined) {
      const age = this.now() - this.kept.at;
      // A clock that went back (a wall clock set back) ends the interval too.
      if (age >= 0 && age < this.intervalMs) return Promise.resolve(this.kept.bytes);
    }
    if (this.rendering !== undefined) return this.rendering;
    const at = this.now();
    this.rendering = render().then((bytes) => {
      this.kept = { at, bytes };
      return bytes;
    }).finally(() => {
      this.rendering = undefined;
    });
    return this.rendering;
  }

  /** How much longer (ms) the kept render is given again; 0 when none is kept or the interval is 0. */
  remainingMs(): number {
    if (this.kept === undefined) return 0;
    const age = this.now() - this.kept.at;
    return age >= 0 && age < this.intervalMs ? this.intervalMs - age : 0;
  }
}
