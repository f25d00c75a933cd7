/**
 * The scrape bench's durable row, stage by stage and window kind by window kind
 * (issue 15; CAIRN_BENCH_SCRAPE_STAGES=1 node dist/tools/bench.js scrape): the
 * broker runs with stage timing and traces (src/stage-timing.ts), the bench
 * notes each window's span on CLOCK_MONOTONIC, and each durable round trip is
 * given the kind of the window its read fell in. Per kind: the broker's
 * read -> ack written p99, the mean of each stage over that kind's slowest 1%,
 * the gap from an ack written to the next read (the client's turn, the wire,
 * and any wait of the loop before it read), and how many of the slowest 1%
 * overlapped a GC. Whether the scraped windows' tail grows inside the broker's
 * stages, and in which, or before the read, where stage timing cannot see.
 *
 * Stage timing costs the loop a little per round trip: these figures explain
 * the bench's rows, they are not its verdicts (run it without for those).
 */
import { Busy, idleAtAckWritten, idleAtRead, quantile, Stage, stageNames, type StageTraces } from '../src/stage-timing.js';
import { fmt } from './bench-mqtt.js';
import type { WindowKind } from './bench-scrape-blocks.js';
import { partitionPoint } from './partition-point.js';

/** One measured window: its kind and its span in CLOCK_MONOTONIC ms. */
export interface WindowSpan { readonly kind: WindowKind; readonly startMs: number; readonly endMs: number }

export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

const kinds: readonly WindowKind[] = ['plain', 'decoy', 'scraped'];

/** A durable trace, the gap (µs) from the previous trace's ack written to its read (NaN: none in its window), and that previous trace. */
interface Entry { readonly trace: ReadonlyArray<number | null>; readonly gapUs: number; readonly previous?: ReadonlyArray<number | null> }

/** Rows: a header, then per stage the slowest 1%'s mean µs in each kind, then totals, gaps and GC overlaps. */
export function stageRowsByWindowKind(traces: StageTraces, spans: readonly WindowSpan[]): string[][] {
  const byKind = new Map<WindowKind, Entry[]>(kinds.map((kind) => [kind, []]));
  const durable = traces.durable;
  for (let i = 0; i < durable.length; i++) {
    const trace = durable[i]!;
    const read = trace[Stage.read]! + traces.monotonicOffsetMs;
    const span = spans.find((candidate) => candidate.startMs <= read && read < candidate.endMs);
    if (span === undefined) continue;
    const previous = durable[i - 1];
    // The gap before this read, when the previous durable round trip was in the same window (else none: NaN).
    const previousAck = previous === undefined ? Number.NaN : previous[Stage.ackWritten]! + traces.monotonicOffsetMs;
    const gapUs = previousAck >= span.startMs ? (trace[Stage.read]! - previous![Stage.ackWritten]!) * 1000 : Number.NaN;
    byKind.get(span.kind)!.push({ trace, gapUs, ...(Number.isNaN(gapUs) ? {} : { previous: previous! }) });
  }
  const totalUs = (trace: ReadonlyArray<number | null>): number => (trace[Stage.ackWritten]! - trace[Stage.read]!) * 1000;
  const rows: string[][] = [['durable round trips by window kind', ...kinds]];
  const perKind = (cell: (entries: Entry[]) => string): string[] => kinds.map((kind) => cell(byKind.get(kind)!));
  const slowest = (entries: Entry[]) => [...entries].sort((a, b) => totalUs(b.trace) - totalUs(a.trace)).slice(0, Math.ceil(entries.length / 100));
  rows.push(['round trips traced', ...perKind((entries) => String(entries.length))]);
  rows.push(['read -> ack written p50 / p99 (us)', ...perKind((entries) => `${fmt(quantile(entries.map((e) => totalUs(e.trace)), 0.5), 1)} / ${fmt(quantile(entries.map((e) => totalUs(e.trace)), 0.99), 1)}`)]);
  for (let stage = 1; stage < stageNames.length; stage++) {
    rows.push([`slowest 1%: mean us to ${stageNames[stage]}`, ...perKind((entries) => fmt(meanStageUs(slowest(entries).map((e) => e.trace), stage), 1))]);
  }
  rows.push(['p99 us to sync done (the O_DSYNC pwrite)', ...perKind((entries) => fmt(quantile(stageUs(entries.map((e) => e.trace), Stage.syncDone), 0.99), 1))]);
  const gaps = (entries: { gapUs: number }[]): number[] => entries.map((e) => e.gapUs).filter((gap) => !Number.isNaN(gap));
  rows.push(['ack written -> next read p50 / p99 (us): client turn, wire, loop wait before the read', ...perKind((entries) => `${fmt(quantile(gaps(entries), 0.5), 1)} / ${fmt(quantile(gaps(entries), 0.99), 1)}`)]);
  rows.push(['(ack written -> next read) + (read -> ack written) p99 (us)', ...perKind((entries) => fmt(quantile(entries.filter((e) => !Number.isNaN(e.gapUs)).map((e) => e.gapUs + totalUs(e.trace)), 0.99), 1))]);
  // The loop's HTTP work (requests taken in, render slices, answers posted): one thread's, so intervals never overlap.
  const http = overlapsOf(traces.busy[Busy.http] ?? []);
  const plainGapP99 = quantile(gaps(byKind.get('plain')!), 0.99);
  rows.push(["gaps over plain's gap p99: all / overlapping the loop's HTTP work", ...perKind((entries) => {
    const slow = entries.filter((e) => e.gapUs > plainGapP99);
    return `${slow.length} / ${slow.filter((e) => http(e.trace[Stage.read]! - e.gapUs / 1000, e.trace[Stage.read]!)).length}`;
  })]);
  // The loop's own work in a gap: its length less the idle time that passed (null idle marks: a build before them).
  const loopBusyUs = (entry: Entry, previous: ReadonlyArray<number | null>): number =>
    entry.gapUs - ((entry.trace[idleAtRead] ?? Number.NaN) - (previous[idleAtAckWritten] ?? Number.NaN)) * 1000;
  rows.push(["gaps over plain's gap p99: the loop's own work in them, mean us / gap mean us", ...perKind((entries) => {
    const slow = entries.filter((e) => e.gapUs > plainGapP99 && e.previous !== undefined);
    const busy = slow.map((e) => loopBusyUs(e, e.previous!)).filter((us) => !Number.isNaN(us));
    const mean = (values: number[]): number => (values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length);
    return `${fmt(mean(busy), 1)} / ${fmt(mean(slow.map((e) => e.gapUs)), 1)}`;
  })]);
  rows.push(["slowest 1% (read -> ack written) overlapping the loop's HTTP work", ...perKind((entries) => `${slowest(entries).filter((e) => http(e.trace[Stage.read]!, e.trace[Stage.ackWritten]!)).length} of ${slowest(entries).length}`)]);
  const gcs = traces.busy[Busy.gc] ?? [];
  const overlapsGc = (trace: ReadonlyArray<number | null>): boolean => {
    for (let i = 0; i < gcs.length; i += 2) if (gcs[i]! < trace[Stage.ackWritten]! && gcs[i + 1]! > trace[Stage.read]!) return true;
    return false;
  };
  rows.push(['overlapped a GC: of the slowest 1% / of all', ...perKind((entries) => `${slowest(entries).filter((e) => overlapsGc(e.trace)).length} of ${slowest(entries).length} / ${entries.filter((e) => overlapsGc(e.trace)).length} of ${entries.length}`)]);
  return rows;
}

/** Whether [start, end] overlaps one of `pairs` ([start, end] flat, of intervals that never overlap each other). */
function overlapsOf(pairs: readonly number[]): (start: number, end: number) => boolean {
  const intervals: [number, number][] = [];
  for (let i = 0; i < pairs.length; i += 2) intervals.push([pairs[i]!, pairs[i + 1]!]);
  intervals.sort((a, b) => a[0] - b[0]);
  return (start, end) => {
    // The last interval that began before `end`: the only one that can still be running at `start`, or one inside.
    const last = intervals[partitionPoint(intervals.length, (i) => intervals[i]![0] < end) - 1];
    return last !== undefined && last[1] > start;
  };
}

/** Per trace, the µs from the previous marked stage to `stage` (traces that did not mark it left out). */
function stageUs(traces: ReadonlyArray<ReadonlyArray<number | null>>, stage: number): number[] {
  const values: number[] = [];
  for (const trace of traces) {
    const at = trace[stage];
    if (at === null || at === undefined) continue;
    let previous = stage - 1;
    while (previous > 0 && (trace[previous] === null || trace[previous] === undefined)) previous--;
    values.push((at - trace[previous]!) * 1000);
  }
  return values;
}

function meanStageUs(traces: ReadonlyArray<ReadonlyArray<number | null>>, stage: number): number {
  const values = stageUs(traces, stage);
  return values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length;
}

