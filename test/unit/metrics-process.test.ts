/**
 * The process and Node.js metrics of src/metrics-process.ts and
 * src/metrics-event-loop-delay.ts: the families prom-client's
 * collectDefaultMetrics makes, by name, help and type; plausible values; no
 * file read synchronously on the event loop while an exposition is written;
 * and the event-loop delay statistics equal Node's own histogram's over the
 * same samples.
 */
import fs from 'node:fs';
import { createHistogram } from 'node:perf_hooks';
import fc from 'fast-check';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Metrics } from '../../src/metrics.js';
import { DelaySamples, keptSamplesMax, registerEventLoopDelayGauges } from '../../src/metrics-event-loop-delay.js';
import { statusKilobytes } from '../../src/metrics-process.js';
import { announceSeed, testSeed, until } from '../support/kit.js';
import { parseExposition, type Family } from '../support/prometheus-exposition.js';

const linux = process.platform === 'linux';
const processFamily = (name: string): boolean => name.startsWith('process_') || name.startsWith('nodejs_');

async function processFamilies(metrics: Metrics): Promise<Map<string, Family>> {
  return new Map([...parseExposition(await metrics.text())].filter(([name]) => processFamily(name)));
}

function valueOf(families: Map<string, Family>, name: string): number {
  const value = families.get(name)?.samples[0]?.value;
  if (value === undefined) throw new Error(`no sample of ${name}`);
  return value;
}

describe('process and Node.js metrics', () => {
  afterEach(() => { vi.restoreAllMocks(); });

  it('are the families prom-client\'s collectDefaultMetrics makes, with its help and types, less its three *_total gauges', async () => {
    const reference = new Registry();
    collectDefaultMetrics({ register: reference });
    const expected = [...parseExposition(await reference.metrics())]
      .filter(([name]) => !['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'].includes(name))
      .map(([name, family]) => ({ name, help: family.help, type: family.type }))
      .sort((a, b) => a.name.localeCompare(b.name));
    const actual = [...await processFamilies(new Metrics())].map(([name, family]) => ({ name, help: family.help, type: family.type })).sort((a, b) => a.name.localeCompare(b.name));
    expect(actual).toEqual(expected);
    expect(actual.map((family) => family.name)).toEqual(expect.arrayContaining(['process_resident_memory_bytes', 'process_open_fds', 'nodejs_eventloop_lag_p99_seconds']));
  });

  it.runIf(linux)('read no file synchronously while an exposition is written (/proc is read on the thread pool)', async () => {
    const metrics = new Metrics();
    const synchronous = ['readFileSync', 'readdirSync', 'openSync', 'readSync', 'statSync', 'fstatSync', 'opendirSync'] as const;
    const spies = synchronous.map((name) => vi.spyOn(fs, name));
    await metrics.text();
    await metrics.perObjectText();
    const calls = spies.flatMap((spy, i) => spy.mock.calls.map((call) => `${synchronous[i]}(${String(call[0])})`));
    expect(calls).toEqual([]);
  });

  it.runIf(linux)('memory and descriptors are plausible: RSS near process.memoryUsage(), descriptors near /proc/self/fd\'s count', async () => {
    const families = await processFamilies(new Metrics());
    const resident = valueOf(families, 'process_resident_memory_bytes');
    const rss = process.memoryUsage().rss;
    expect(resident).toBeGreaterThan(rss / 2);
    expect(resident).toBeLessThan(rss * 2);
    expect(valueOf(families, 'process_virtual_memory_bytes')).toBeGreaterThanOrEqual(resident);
    expect(valueOf(families, 'process_heap_bytes')).toBeGreaterThan(0);
    const open = fs.readdirSync('/proc/self/fd').length - 1;
    expect(Math.abs(valueOf(families, 'process_open_fds') - open)).toBeLessThanOrEqual(4);
    expect(valueOf(families, 'process_open_fds')).toBeGreaterThan(2);
  });

  it('the event-loop delay gauges report the ticks of their sampler (the resolution plus the delay) since the last read', async () => {
    const registry = new Registry();
    const resolutionMs = 20;
    registerEventLoopDelayGauges(registry, resolutionMs);
    let families = parseExposition(await registry.metrics());
    await until(async () => {
      families = parseExposition(await registry.metrics());
      return valueOf(families, 'nodejs_eventloop_lag_max_seconds') > 0;
    }, 'a read with samples of the sampler');
    const [min, p50, p90, p99, max] = ['min', 'p50', 'p90', 'p99', 'max'].map((statistic) => valueOf(families, `nodejs_eventloop_lag_${statistic}_seconds`));
    // Node's timers may fire a little early on the loop's cached clock.
    expect(min).toBeGreaterThan(0.9 * resolutionMs / 1000);
    expect([min! <= p50!, p50! <= p90!, p90! <= p99!, p99! <= max!]).toEqual([true, true, true, true]);
    const mean = valueOf(families, 'nodejs_eventloop_lag_mean_seconds');
    expect(mean >= min! && mean <= max!).toBe(true);
  });

  it('statusKilobytes reads VmRSS, VmSize and VmData', () => {
    expect(statusKilobytes('Name:\tnode\nVmPeak:\t  99 kB\nVmSize:\t 1234 kB\nVmRSS:\t   56 kB\nVmData:\t  789 kB\nThreads:\t7\n')).toEqual({ VmSize: 1234, VmRSS: 56, VmData: 789 });
  });
});

describe('DelaySamples', () => {
  it('min, max, mean, stddev and percentiles equal Node\'s HdrHistogram\'s over the same samples (to its 3 significant figures)', () => {
    announceSeed('DelaySamples vs HdrHistogram');
    fc.assert(fc.property(fc.array(fc.integer({ min: 1_000, max: 5_000_000_000 }), { minLength: 1, maxLength: 300 }), (values) => {
      const samples = new DelaySamples();
      const histogram = createHistogram({ lowest: 1, highest: Number.MAX_SAFE_INTEGER, figures: 3 });
      for (const value of values) {
        samples.record(value);
        histogram.record(value);
      }
      const figures = samples.take()!;
      const close = (ours: number, theirs: number): boolean => Math.abs(ours - theirs) <= 0.002 * Math.max(ours, theirs) + 1;
      expect({ min: figures.min, max: figures.max }).toEqual({ min: Math.min(...values), max: Math.max(...values) });
      expect(close(figures.min, histogram.min) && close(figures.max, histogram.max)).toBe(true);
      expect(close(figures.mean, histogram.mean)).toBe(true);
      expect(Math.abs(figures.stddev - histogram.stddev)).toBeLessThanOrEqual(0.002 * figures.max + 1);
      for (const [p, ours] of [[50, figures.p50], [90, figures.p90], [99, figures.p99]] as const) {
        expect([p, close(ours, histogram.percentile(p))]).toEqual([p, true]);
        expect(values).toContain(ours);
      }
    }), { seed: testSeed, numRuns: 200 });
  });

  it('a take starts afresh; with no sample since the last it says so', () => {
    const samples = new DelaySamples();
    samples.record(5);
    samples.record(7);
    expect(samples.take()).toMatchObject({ min: 5, max: 7, mean: 6, stddev: 1, p50: 5, p99: 7 });
    expect(samples.take()).toBeUndefined();
    samples.record(3);
    expect(samples.take()).toMatchObject({ min: 3, max: 3, mean: 3, stddev: 0, p50: 3 });
  });

  it('past keptSamplesMax samples, percentiles come from samples spread evenly over them; min, max and mean from all', () => {
    const samples = new DelaySamples();
    const count = keptSamplesMax * 5 + 123;
    for (let i = 1; i <= count; i++) samples.record(i);
    const figures = samples.take()!;
    expect({ min: figures.min, max: figures.max, mean: figures.mean }).toEqual({ min: 1, max: count, mean: (count + 1) / 2 });
    for (const [p, value] of [[50, figures.p50], [90, figures.p90], [99, figures.p99]] as const) expect([p, Math.abs(value / count - p / 100) < 0.01]).toEqual([p, true]);
  });
});
