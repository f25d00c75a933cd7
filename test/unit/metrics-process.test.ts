/**
 * The process and Node.js metrics of src/metrics-process.ts: the families
 * prom-client's collectDefaultMetrics makes, by name, help and type;
 * plausible values; no file read synchronously on the event loop while an
 * exposition is written; the event-loop delay monitor read at most once per
 * eventLoopDelayReadIntervalMs.
 */
import fs from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Metrics, processMetricsReuseMs } from '../../src/metrics.js';
import { eventLoopDelayReadIntervalMs, eventLoopDelayResolutionMs, statusKilobytes } from '../../src/metrics-process.js';
import { until } from '../support/kit.js';
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

  it('read the event-loop delay monitor at most once per eventLoopDelayReadIntervalMs: before it the last read\'s figures, after it the delays since', async () => {
    // The seven families prom-client sets from its monitor at each read (nodejs_eventloop_lag_seconds is set a turn later).
    const fromMonitor = ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99'].map((figure) => `nodejs_eventloop_lag_${figure}_seconds`);
    const blockedMs = 400;
    const witness = monitorEventLoopDelay({ resolution: eventLoopDelayResolutionMs });
    vi.useFakeTimers({ toFake: ['performance'] });
    try {
      const metrics = new Metrics();
      witness.enable();
      const first = await processFamilies(metrics);
      // A read resets the monitor, which then records from its second tick on: the witness, reset alike, says when.
      witness.reset();
      await until(() => witness.count > 0, 'a delay recorded after the read by a monitor like prom-client\'s');
      // Held on the monitors' own clock (uv_hrtime), one resolution longer than blockedMs: a hold that began right
      // after a monitor's tick, timed by Date.now's whole milliseconds, recorded just under blockedMs now and then.
      const heldUntil = process.hrtime.bigint() + BigInt((blockedMs + eventLoopDelayResolutionMs) * 1e6);
      while (process.hrtime.bigint() < heldUntil) { /* the event loop held */ }
      await until(() => witness.max >= blockedMs * 1e6, 'the held loop recorded by the monitors');
      vi.advanceTimersByTime(processMetricsReuseMs);
      const within = await processFamilies(metrics);
      for (const name of fromMonitor) expect(valueOf(within, name), name).toBe(valueOf(first, name));
      expect(valueOf(within, 'nodejs_eventloop_lag_max_seconds')).toBeLessThan(blockedMs / 1000);
      vi.advanceTimersByTime(eventLoopDelayReadIntervalMs);
      const after = await processFamilies(metrics);
      expect(valueOf(after, 'nodejs_eventloop_lag_max_seconds')).toBeGreaterThanOrEqual(blockedMs / 1000);
      expect(valueOf(after, 'nodejs_eventloop_lag_p99_seconds')).toBeLessThanOrEqual(valueOf(after, 'nodejs_eventloop_lag_max_seconds'));
    } finally {
      witness.disable();
      vi.useRealTimers();
    }
  });

  it('statusKilobytes reads VmRSS, VmSize and VmData', () => {
    expect(statusKilobytes('Name:\tnode\nVmPeak:\t  99 kB\nVmSize:\t 1234 kB\nVmRSS:\t   56 kB\nVmData:\t  789 kB\nThreads:\t7\n')).toEqual({ VmSize: 1234, VmRSS: 56, VmData: 789 });
  });
});
