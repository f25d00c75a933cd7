/**
 * The bench's latency instruments (tools/bench-side-by-side.ts, bench-thread-times.ts,
 * bench-durable-floor.ts): cases sampled in alternation, thread times read from /proc and
 * divided by round trips, the durable target computed from the lower raw disk figure.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { durableTargetRows } from '../../tools/bench-durable-floor.js';
import { interleavedCases, latencySlices, type RoundTripCase } from '../../tools/bench-side-by-side.js';
import { threadTimes, timedCase } from '../../tools/bench-thread-times.js';

/** A case that records what was done to it, in one shared journal, and returns `sampleMs` per round trip. */
function recordingCase(name: string, journal: string[], sampleMs: number): () => Promise<RoundTripCase> {
  return () => {
    journal.push(`open ${name}`);
    return Promise.resolve({
      sample: (count) => {
        journal.push(`sample ${name} ${count}`);
        return Promise.resolve(new Array<number>(count).fill(sampleMs));
      },
      close: () => {
        journal.push(`close ${name}`);
        return Promise.resolve();
      },
    });
  };
}

describe('interleavedCases', () => {
  it('opens every case before sampling, alternates them slice by slice, closes each once, and keeps each its own samples', async () => {
    const journal: string[] = [];
    const summaries = await interleavedCases('test', [recordingCase('a', journal, 1), recordingCase('b', journal, 2), recordingCase('c', journal, 3)], 10);
    const perSlice = Math.ceil(10 / latencySlices);
    const slices = Array.from({ length: latencySlices }, () => ['a', 'b', 'c'].map((name) => `sample ${name} ${perSlice}`)).flat();
    expect(journal).toEqual(['open a', 'open b', 'open c', ...slices, 'close a', 'close b', 'close c']);
    expect(summaries.map((summary) => summary.p50)).toEqual([1, 2, 3]);
    expect(summaries.map((summary) => summary.count)).toEqual([perSlice * latencySlices, perSlice * latencySlices, perSlice * latencySlices]);
  });
});

describe('durableTargetRows', () => {
  it('measures the durable p50 against the lower raw p50 plus the non-durable p50, and the tail against the p50', () => {
    const summary = (p50: number, p99: number) => ({ p50, p99, count: 100 });
    // Floor: min(0.4, 0.2) + 0.1 = 0.3; 0.33 / 0.3 = 1.10 (met); tail 0.99 / 0.33 = 3.00 (met).
    expect(durableTargetRows([summary(0.4, 1), summary(0.2, 1)], summary(0.1, 1), summary(0.33, 0.99))).toEqual([
      ['durable p50 / (raw p50 + non-durable p50)', '1.10 (target <= 1.15: met)'],
      ['durable p99 / durable p50', '3.00 (target <= 3.00: met)'],
    ]);
    expect(durableTargetRows([summary(0.2, 1), summary(0.4, 1)], summary(0.1, 1), summary(0.6, 3))[0]![1]).toBe('2.00 (target <= 1.15: missed)');
  });
});

// Thread times come from Linux's /proc; elsewhere the bench prints no such row and this does not apply.
describe.runIf(existsSync(`/proc/${process.pid}/task/${process.pid}/schedstat`))('thread times', () => {
  it('count the CPU time of every thread, most of it on the event loop thread while it is busy', () => {
    const before = threadTimes(process.pid)!;
    const cpuBefore = process.cpuUsage();
    const processCpuUs = (): number => process.cpuUsage(cpuBefore).user + process.cpuUsage(cpuBefore).system;
    // Busy on this (the event loop) thread until the process has used 30 ms of CPU.
    while (processCpuUs() < 30_000) Math.sqrt(Math.random());
    const after = threadTimes(process.pid)!;
    const usedUs = processCpuUs();
    const loopUs = (after.loopRunNs - before.loopRunNs) / 1000;
    const otherUs = (after.otherRunNs - before.otherRunNs) / 1000;
    // The same threads on two clocks (schedstat and getrusage, which may count in 10 ms ticks).
    expect(loopUs + otherUs).toBeGreaterThanOrEqual(usedUs - 12_000);
    expect(loopUs + otherUs).toBeLessThanOrEqual(usedUs + 12_000);
    // Other threads (V8's, the test runner's) may run meanwhile, but the busy one is this one.
    expect(loopUs).toBeGreaterThan(otherUs);
  });

  it('are divided by the round trips sampled, and are absent without a process to read', async () => {
    const journal: string[] = [];
    const inner = await recordingCase('a', journal, 1)();
    const timed = timedCase(process.pid, inner);
    expect(timed.perRoundTrip()).toBeUndefined();
    await timed.sample(4);
    const cpuBefore = process.cpuUsage();
    const busy: RoundTripCase = { sample: (count) => { while (process.cpuUsage(cpuBefore).user < 20_000) Math.sqrt(Math.random()); return inner.sample(count); }, close: () => inner.close() };
    const busyTimed = timedCase(process.pid, busy);
    await busyTimed.sample(10);
    // At least 20 ms of CPU over 10 round trips: at least 2,000 us each, less 10 ms for clock granularity.
    const perRoundTrip = busyTimed.perRoundTrip()!;
    expect(perRoundTrip.loopRunUs + perRoundTrip.otherRunUs).toBeGreaterThanOrEqual(1_000);
    expect(timedCase(undefined, inner).perRoundTrip()).toBeUndefined();
  });
});
