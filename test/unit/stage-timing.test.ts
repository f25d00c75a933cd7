/**
 * The per-stage timing of round trips (src/stage-timing.ts) that bench-mqtt
 * prints: a trace runs from a socket read to the acknowledgement written; one
 * with an fdatasync counts as durable; a read with a second packet, or a new
 * read before the acknowledgement, discards it; an uncork before the
 * acknowledgement was resolved does not end it.
 */
import { describe, expect, it } from 'vitest';
import { Busy, countLoneSync, enableStageTiming, idleAtAckWritten, idleAtRead, markStage, noteBusy, Stage, stageReport, stageTraces } from '../../src/stage-timing.js';

describe('stage timing', () => {
  it('sorts traces into durable and not, discards the ones that are not one sequential round trip, and counts sync lanes', () => {
    markStage(Stage.read); // before it is enabled: nothing is kept
    markStage(Stage.decoded);
    markStage(Stage.resolved);
    markStage(Stage.ackWritten);
    expect(stageReport().nonDurable.traces).toBe(0);
    enableStageTiming();
    // Before any trace and long before: overlaps none. A zero fill from now on, still in flight: overlaps every trace.
    noteBusy(Busy.snapshot, -2, -1);
    noteBusy(Busy.zeroFill, performance.now(), Number.POSITIVE_INFINITY);

    // Not durable: read, handler, routed, resolved, written.
    for (const stage of [Stage.read, Stage.decoded, Stage.routed, Stage.resolved, Stage.flushBegun, Stage.ackWritten]) markStage(stage);
    // Durable; the flush at the end of the read writes nothing yet and must neither begin its flush nor end the trace.
    for (const stage of [Stage.read, Stage.decoded, Stage.appended, Stage.routed, Stage.flushBegun, Stage.ackWritten, Stage.written, Stage.syncSubmitted, Stage.syncDone]) markStage(stage);
    const resolvedAt = performance.now();
    for (const stage of [Stage.resolved, Stage.flushBegun, Stage.ackWritten]) markStage(stage);
    // Two packets in one read: discarded.
    for (const stage of [Stage.read, Stage.decoded, Stage.decoded, Stage.resolved, Stage.ackWritten]) markStage(stage);
    // A new read before the acknowledgement: the first trace is discarded, the second kept.
    for (const stage of [Stage.read, Stage.decoded, Stage.read, Stage.decoded, Stage.resolved, Stage.ackWritten]) markStage(stage);
    countLoneSync('loop');
    countLoneSync('loop');
    countLoneSync('pool');

    const report = stageReport();
    expect(report.nonDurable.traces).toBe(2);
    expect(report.durable.traces).toBe(1);
    expect(report.durable.p50Us[Stage.syncDone]).toBeGreaterThanOrEqual(0);
    expect(report.durable.p99Us[Stage.syncDone]).toBe(report.durable.p50Us[Stage.syncDone]);
    // Its flush began after it was resolved, not at the flush before.
    expect(report.durable.p50Us[Stage.flushBegun]).toBeGreaterThanOrEqual(0);
    expect(report.durable.p50Us[Stage.flushBegun]).toBeLessThanOrEqual((performance.now() - resolvedAt) * 1000);
    expect(report.durable.p50Us[Stage.resolved]).toBeGreaterThanOrEqual(0);
    expect(report.nonDurable.p50Us[Stage.syncDone]).toBeNull();
    expect(report.durable.totalP50Us).toBeGreaterThanOrEqual(0);
    expect(report.durable.totalP99Us).toBeGreaterThanOrEqual(report.durable.totalP50Us);
    // The slowest 1% of one trace is that trace: its stage means are its own stage times.
    expect(report.durable.tailMeanUs).toEqual(report.durable.meanUs);
    expect(report.nonDurable.tailMeanUs[Stage.syncDone]).toBeNull();
    expect(report.loneSyncs).toEqual({ loop: 2, pool: 1 });
    expect(report.durable.overlaps[Busy.zeroFill]).toBe(1);
    expect(report.durable.tailOverlaps[Busy.zeroFill]).toBe(1);
    expect(report.nonDurable.overlaps[Busy.zeroFill]).toBe(2);
    expect(report.durable.overlaps[Busy.snapshot]).toBe(0);
    expect(report.nonDurable.overlaps[Busy.snapshot]).toBe(0);

    // The kept traces' marks, with the offset that puts them on CLOCK_MONOTONIC (process.hrtime's clock).
    const before = Number(process.hrtime.bigint()) / 1e6;
    const traces = stageTraces();
    const after = Number(process.hrtime.bigint()) / 1e6;
    expect(traces.durable).toHaveLength(1);
    expect(traces.nonDurable).toHaveLength(2);
    const durable = traces.durable[0]!;
    expect(durable[Stage.read]! + traces.monotonicOffsetMs).toBeLessThanOrEqual(after);
    expect(durable[Stage.ackWritten]! + traces.monotonicOffsetMs).toBeLessThanOrEqual(after);
    expect(performance.now() + traces.monotonicOffsetMs).toBeGreaterThanOrEqual(before);
    expect(Math.abs(performance.now() + traces.monotonicOffsetMs - Number(process.hrtime.bigint()) / 1e6)).toBeLessThan(1);
    expect(Number.isNaN(traces.nonDurable[0]![Stage.syncDone])).toBe(true);
    // The loop's idle time at the read and at the ack: none passed between them (this test never let the loop turn).
    expect(durable[idleAtRead]).toBeGreaterThanOrEqual(0);
    expect(durable[idleAtAckWritten]).toBe(durable[idleAtRead]);
    // The busy intervals noted, per kind.
    expect(traces.busy[Busy.snapshot]).toEqual([-2, -1]);
  });
});
