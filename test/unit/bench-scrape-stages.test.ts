/**
 * The scrape bench's stage table by window kind (tools/bench-scrape-stages.ts):
 * each durable round trip counts in the kind of the window its read fell in
 * (on CLOCK_MONOTONIC, the traces' marks shifted by their offset), a gap from
 * an ack to the next read counts only inside one window, and a slow gap is
 * said to overlap the loop's HTTP work only when a noted interval covers part
 * of it.
 */
import { describe, expect, it } from 'vitest';
import { Busy, idleAtAckWritten, idleAtRead, Stage, stageNames, type StageTraces } from '../../src/stage-timing.js';
import { stageRowsByWindowKind, type WindowSpan } from '../../tools/bench-scrape-stages.js';

/** A durable trace read at `readMs` (performance.now() ms), its ack `totalUs` later, each marked stage at the read. */
function trace(readMs: number, totalUs: number): Array<number | null> {
  const marks: Array<number | null> = stageNames.map(() => null);
  marks[Stage.read] = readMs;
  marks[Stage.decoded] = readMs;
  marks[Stage.syncDone] = readMs + totalUs / 2000;
  marks[Stage.ackWritten] = readMs + totalUs / 1000;
  return marks;
}

const row = (rows: string[][], label: string): string[] => rows.find((r) => r[0]!.startsWith(label))!;

describe('stageRowsByWindowKind', () => {
  const offsetMs = 1_000;
  // Windows on CLOCK_MONOTONIC: plain 1000-1100, scraped 1100-1200 (marks are 1000 ms less).
  const spans: WindowSpan[] = [{ kind: 'plain', startMs: 1_000, endMs: 1_100 }, { kind: 'scraped', startMs: 1_100, endMs: 1_200 }];
  // Round trips every 1 ms of 0.25 ms each (binary fractions: exact gaps): gaps of 0.75 ms, except one of 5 ms in each window.
  const reads = [...Array.from({ length: 50 }, (_, i) => i), 55, ...Array.from({ length: 40 }, (_, i) => 100 + i), 145];
  const traces: StageTraces = {
    monotonicOffsetMs: offsetMs,
    durable: reads.map((read) => trace(read, 250)),
    nonDurable: [],
    // HTTP work on the loop during the scraped window's long gap only (ms, performance.now()).
    busy: [[], [], [], [141, 142]],
  };

  it('counts each round trip in its window\'s kind', () => {
    const rows = stageRowsByWindowKind(traces, spans);
    expect(row(rows, 'round trips traced').slice(1)).toEqual(['51', '0', '41']);
  });

  it('finds the slow gaps, and which of them overlapped the loop\'s HTTP work', () => {
    const rows = stageRowsByWindowKind(traces, spans);
    // The plain p99 gap is 0.75 ms (50 gaps, one of 5.75 ms): each window's 5.75 ms gap is over it; only the scraped one had HTTP work.
    expect(row(rows, 'gaps over plain').slice(1)).toEqual(['1 / 0', '0 / 0', '1 / 1']);
  });

  it('leaves out a gap that spans two windows and round trips outside every window', () => {
    const outside: StageTraces = { ...traces, durable: [...traces.durable, trace(300, 250)], busy: [[], [], [], [99, 101]] };
    const rows = stageRowsByWindowKind(outside, spans);
    expect(row(rows, 'round trips traced').slice(1)).toEqual(['51', '0', '41']);
    // The gap from the plain window's last ack (55.25) to the scraped window's first read (100) crosses the HTTP work at 99-101: not counted.
    expect(row(rows, 'gaps over plain').slice(1)).toEqual(['1 / 0', '0 / 0', '1 / 0']);
  });

  it('splits a slow gap into the loop\'s own work and its idle time', () => {
    // The loop idle all the time except 2 ms of the scraped window's 5.75 ms gap (139.25 -> 145).
    const idle: StageTraces = {
      ...traces,
      durable: traces.durable.map((marks) => {
        const read = marks[Stage.read]!;
        const busyBefore = (at: number): number => (at >= 145 ? 2 : 0);
        const withIdle = [...marks, null, null];
        withIdle[idleAtRead] = read - busyBefore(read);
        withIdle[idleAtAckWritten] = marks[Stage.ackWritten]! - busyBefore(read);
        return withIdle;
      }),
    };
    expect(row(stageRowsByWindowKind(idle, spans), "gaps over plain's gap p99: the loop's own work").slice(1)).toEqual(['0.0 / 5750.0', '- / -', '2000.0 / 5750.0']);
  });

  it('reads no other kind of busy interval as HTTP work', () => {
    const gcOnly: StageTraces = { ...traces, busy: [[141, 142], [], [], []] };
    expect(row(stageRowsByWindowKind(gcOnly, spans), 'gaps over plain').slice(1)).toEqual(['1 / 0', '0 / 0', '1 / 0']);
    expect(Busy.http).toBe(3);
  });
});
