/**
 * Where one round trip spends its time, stage by stage, for the benches (issue 18):
 * with CAIRN_STAGE_TIMING=FILE in its environment the broker notes the clock at
 * each stage of a publish, from the socket read to the acknowledgement written,
 * and writes a summary to FILE when the process exits. Unset (always, outside a
 * bench) a mark is one test of a boolean.
 *
 *   read ─▶ decoded ─▶ appended ─▶ routed ─▶ written ─▶ sync submitted ─▶ sync done ─▶ resolved ─▶ flush begun ─▶ ack written
 *   (socket  (packet    (record in  (publish   (pwrite   (fdatasync          (it returned  (the ack's   (the flush of    (the socket
 *    data)    handler)   the batch)  returned)  returned)  called, or handed   or called     promise)     the tick's       write returned)
 *                                                          to the pool)        back)                      packets starts)
 *
 * A lone batch written through the O_DSYNC descriptor (log/data-sync-writer.ts)
 * marks no "written": its write is its sync, timed as "sync done".
 *
 * Only sequential round trips are traced: one read carrying one packet, whose
 * acknowledgement is written before the next read. A second packet in the read,
 * or a read before the acknowledgement, discards the trace. Each stage keeps its
 * first mark. A trace with a sync is a durable round trip; one without, not.
 *
 * Work that is no stage of a round trip but may hold one up is noted as busy
 * intervals (a GC, a zero fill in flight, a snapshot, an HTTP request taken in
 * or answered, a render slice): the report counts the
 * slowest 1% of durable round trips that overlapped each, beside the share of
 * all durable round trips that did — what the tail has that the rest has not.
 *
 * With CAIRN_STAGE_TRACES=FILE as well, every traced round trip's marks are
 * written to FILE at exit, with the offset that turns a mark (performance.now()
 * ms) into CLOCK_MONOTONIC ms, the clock of process.hrtime and of
 * `perf record -k CLOCK_MONOTONIC`: for joining round trips with a scheduler
 * trace (tools/tail-trace-join.ts).
 */
import { writeFileSync } from 'node:fs';
import { PerformanceObserver } from 'node:perf_hooks';

export const stageTimingVariable = 'CAIRN_STAGE_TIMING';
export const stageTracesVariable = 'CAIRN_STAGE_TRACES';

/** What CAIRN_STAGE_TRACES writes: each trace's marks (NaN, written null, where unmarked) in performance.now() ms. */
export interface StageTraces {
  /** Add to a mark to get CLOCK_MONOTONIC ms. */
  readonly monotonicOffsetMs: number;
  readonly durable: ReadonlyArray<ReadonlyArray<number | null>>;
  readonly nonDurable: ReadonlyArray<ReadonlyArray<number | null>>;
  /** Per Busy kind, [start, end] pairs in performance.now() ms (noteBusy). */
  readonly busy: ReadonlyArray<ReadonlyArray<number>>;
}

export const Stage = { read: 0, decoded: 1, appended: 2, routed: 3, written: 4, syncSubmitted: 5, syncDone: 6, resolved: 7, flushBegun: 8, ackWritten: 9 } as const;
export type Stage = (typeof Stage)[keyof typeof Stage];
export const stageNames = ['read', 'decoded', 'appended', 'routed', 'written', 'sync submitted', 'sync done', 'resolved', 'flush begun', 'ack written'] as const;
const stageCount = stageNames.length;
/**
 * After the stages, each trace keeps the event loop's idle time so far (performance.eventLoopUtilization().idle, ms:
 * time in the poll for I/O, a wait for a core after the poll's wake-up included) at its read and at its ack written:
 * across the gap from one trace's ack to the next one's read, the idle time that passed says how much of the gap
 * the loop spent on other work.
 */
export const idleAtRead = stageCount;
export const idleAtAckWritten = stageCount + 1;
/** Traces kept per kind; later ones are dropped (a bench's latency cases take a few thousand). */
const tracesMax = 100_000;

/** Work beside the round trips that may hold them up (noteBusy). */
export const Busy = { gc: 0, zeroFill: 1, snapshot: 2, http: 3 } as const;
export type Busy = (typeof Busy)[keyof typeof Busy];
export const busyNames = ['a GC', 'a zero fill', 'a snapshot', "an HTTP request's loop work"] as const;

export interface StageSummary {
  readonly traces: number;
  /** Per stage after the first: p50 of the time since the previous stage the trace marked (µs); null where none marked it. */
  readonly p50Us: ReadonlyArray<number | null>;
  readonly meanUs: ReadonlyArray<number | null>;
  /** Per stage after the first: p99 of the time since the previous stage (µs): a stage's own tail, to set beside the raw disk's. */
  readonly p99Us: ReadonlyArray<number | null>;
  /** read → ack written. */
  readonly totalP50Us: number;
  readonly totalP99Us: number;
  /** Per stage after the first: its mean time over the slowest 1% of the traces (by read → ack written): where the tail is. */
  readonly tailMeanUs: ReadonlyArray<number | null>;
  /** Per Busy kind: how many of the slowest 1% of the traces overlapped such work, and how many of all traces did. */
  readonly tailOverlaps: ReadonlyArray<number>;
  readonly overlaps: ReadonlyArray<number>;
}

export interface StageReport {
  readonly durable: StageSummary;
  readonly nonDurable: StageSummary;
  /** Lone batches synced on the event loop and on the thread pool (log/sync-lane.ts), every one, traced or not. */
  readonly loneSyncs: { readonly loop: number; readonly pool: number };
}

let enabled = false;
let current: Float64Array | undefined;
const completed: { durable: Float64Array[]; nonDurable: Float64Array[] } = { durable: [], nonDurable: [] };
const loneSyncs = { loop: 0, pool: 0 };
/** Per Busy kind, [start, end] pairs in performance.now() milliseconds, in the order they ended. */
const busyIntervals: number[][] = busyNames.map(() => []);

/** Reads CAIRN_STAGE_TIMING; when set, traces from now on and writes the report to that file at exit. */
export function enableStageTimingFrom(env: NodeJS.ProcessEnv): void {
  const file = env[stageTimingVariable];
  if (file === undefined || file === '') return;
  enableStageTiming();
  process.once('exit', () => writeFileSync(file, JSON.stringify(stageReport())));
  const tracesFile = env[stageTracesVariable];
  if (tracesFile !== undefined && tracesFile !== '') process.once('exit', () => writeFileSync(tracesFile, JSON.stringify(stageTraces())));
}

/** Every trace kept so far, with the offset of performance.now() to CLOCK_MONOTONIC (both read here, microseconds apart). */
export function stageTraces(): StageTraces {
  const monotonicOffsetMs = Number(process.hrtime.bigint()) / 1e6 - performance.now();
  return { monotonicOffsetMs, durable: completed.durable.map((trace) => [...trace]), nonDurable: completed.nonDurable.map((trace) => [...trace]), busy: busyIntervals.map((intervals) => [...intervals]) };
}

/** Traces from now on (stageReport() reads them). */
export function enableStageTiming(): void {
  if (enabled) return;
  enabled = true;
  // Entries arrive a little later, in a batch: they are matched to traces only in the report.
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) noteBusy(Busy.gc, entry.startTime, entry.startTime + entry.duration);
  }).observe({ entryTypes: ['gc'] });
}

/** `kind` of work ran from `startMs` to `endMs` (performance.now()). */
export function noteBusy(kind: Busy, startMs: number, endMs: number): void {
  if (!enabled) return;
  const intervals = busyIntervals[kind]!;
  if (intervals.length < 2 * tracesMax) intervals.push(startMs, endMs);
}

/**
 * Small enough that V8's optimising compiler always inlines it where it is called (its bytecode under
 * max_inlined_bytecode_size_small): with the recording inside, it was called, unoptimised, several times a round trip.
 */
export function markStage(stage: Stage): void {
  if (enabled) recordStage(stage);
}

function recordStage(stage: Stage): void {
  if (stage === Stage.read) {
    current = new Float64Array(stageCount + 2).fill(Number.NaN);
    current[Stage.read] = performance.now();
    current[idleAtRead] = performance.eventLoopUtilization().idle;
    return;
  }
  if (current === undefined) return;
  if (stage === Stage.decoded && !Number.isNaN(current[Stage.decoded]!)) {
    current = undefined; // a second packet in the read
    return;
  }
  // A flush writes the acknowledgement only once one is resolved (the flush at the end of a durable publish's read writes nothing).
  if ((stage === Stage.flushBegun || stage === Stage.ackWritten) && Number.isNaN(current[Stage.resolved]!)) return;
  if (Number.isNaN(current[stage]!)) current[stage] = performance.now();
  if (stage !== Stage.ackWritten) return;
  current[idleAtAckWritten] = performance.eventLoopUtilization().idle;
  const kind = Number.isNaN(current[Stage.syncDone]!) ? completed.nonDurable : completed.durable;
  if (kind.length < tracesMax) kind.push(current);
  current = undefined;
}

/** A lone batch's fdatasync went to `lane`. */
export function countLoneSync(lane: 'loop' | 'pool'): void {
  if (enabled) loneSyncs[lane] += 1;
}

export function stageReport(): StageReport {
  return { durable: summarize(completed.durable), nonDurable: summarize(completed.nonDurable), loneSyncs: { ...loneSyncs } };
}

function summarize(traces: readonly Float64Array[]): StageSummary {
  const totalOf = (trace: Float64Array): number => (trace[Stage.ackWritten]! - trace[Stage.read]!) * 1000;
  const totals = traces.map(totalOf);
  const slowest = [...traces].sort((a, b) => totalOf(b) - totalOf(a)).slice(0, Math.ceil(traces.length / 100));
  const deltas = stageDeltas(traces);
  const mean = (values: number[], stage: number): number | null => (stage === 0 || values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length);
  return {
    traces: traces.length,
    p50Us: deltas.map((values, stage) => (stage === 0 || values.length === 0 ? null : quantile(values, 0.5))),
    meanUs: deltas.map(mean),
    p99Us: deltas.map((values, stage) => (stage === 0 || values.length === 0 ? null : quantile(values, 0.99))),
    totalP50Us: totals.length === 0 ? Number.NaN : quantile(totals, 0.5),
    totalP99Us: totals.length === 0 ? Number.NaN : quantile(totals, 0.99),
    tailMeanUs: stageDeltas(slowest).map(mean),
    tailOverlaps: busyIntervals.map((intervals) => slowest.filter((trace) => overlapsAny(trace, intervals)).length),
    overlaps: busyIntervals.map((intervals) => traces.filter((trace) => overlapsAny(trace, intervals)).length),
  };
}

/** Whether the trace (read → ack written) overlapped one of the [start, end] pairs. */
function overlapsAny(trace: Float64Array, intervals: readonly number[]): boolean {
  const start = trace[Stage.read]!;
  const end = trace[Stage.ackWritten]!;
  for (let i = 0; i < intervals.length; i += 2) {
    if (intervals[i]! < end && intervals[i + 1]! > start) return true;
  }
  return false;
}

/** Per stage, the time (µs) since the previous stage each trace marked. */
function stageDeltas(traces: readonly Float64Array[]): number[][] {
  const deltas: number[][] = Array.from({ length: stageCount }, () => []);
  for (const trace of traces) {
    let previous = trace[Stage.read]!;
    for (let stage = 1; stage < stageCount; stage++) {
      const at = trace[stage]!;
      if (Number.isNaN(at)) continue;
      deltas[stage]!.push((at - previous) * 1000);
      previous = at;
    }
  }
  return deltas;
}

/** The value at `q` of `values` (the stage table's and the scrape bench's stage figures); NaN when there are none. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(q * (sorted.length - 1))]!;
}
