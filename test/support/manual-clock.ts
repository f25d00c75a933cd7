/**
 * A clock and timers that move only when a test says so: `advance(ms)` moves
 * the time and runs, in deadline order, every timer that falls due (timers set
 * by those callbacks too, when they fall within the step).
 */
import type { Timers } from '../../src/core/timers.js';

interface PendingTimer { readonly at: number; readonly callback: () => void; readonly id: number }

export class ManualClock implements Timers {
  private time: number;
  private timers: PendingTimer[] = [];
  private nextId = 1;

  constructor(start = 1_750_000_000_000) {
    this.time = start;
  }

  readonly now = (): number => this.time;

  set(callback: () => void, delayMs: number): unknown {
    const timer = { at: this.time + Math.max(0, delayMs), callback, id: this.nextId++ };
    this.timers.push(timer);
    return timer.id;
  }

  clear(handle: unknown): void {
    this.timers = this.timers.filter((timer) => timer.id !== handle);
  }

  /** Forget every pending timer: their broker stopped, and a restarted one sets its own. */
  dropTimers(): void {
    this.timers = [];
  }

  get pending(): number {
    return this.timers.length;
  }

  advance(ms: number): void {
    const until = this.time + ms;
    for (;;) {
      const due = this.timers.filter((timer) => timer.at <= until).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (due === undefined) break;
      this.timers = this.timers.filter((timer) => timer !== due);
      this.time = Math.max(this.time, due.at);
      due.callback();
    }
    this.time = until;
  }
}
