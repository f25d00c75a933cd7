/**
 * The join of round trips with a scheduler trace (tools/tail-trace-join.ts): perf's
 * lines parsed as perf prints them, and a hand-made trace of one round trip on two
 * CPUs split into the categories, with who held the CPU the loop waited on.
 */
import { describe, expect, it } from 'vitest';
import { categories, parsePerfLine, schedTrace, splitWindow, summarizeSplits, type SchedEvent, type WindowSplit } from '../../tools/tail-trace-join.js';

const loop = 100;
const worker = 101;
const client = 200;

/** A switch on `cpu` at `t` from `prev` (leaving in `state`) to `next` (0: idle). */
function switched(t: number, cpu: number, prev: number, state: string, next: number): SchedEvent {
  return { t, cpu, tid: prev, tgid: prev === worker ? loop : prev, comm: 'node', kind: 'switch', prevTid: prev, prevState: state, nextTid: next, nextComm: 'node' };
}

/** A wake-up issued on `cpu` by `by` (the task running there; 0: an interrupt over the idle task). */
function woken(t: number, cpu: number, by: number, tid: number, targetCpu: number): SchedEvent {
  return { t, cpu, tid: by, tgid: by, comm: 'node', kind: 'wakeup', wokenTid: tid, targetCpu };
}

const label = (holder: number | string): string => (holder === 0 ? 'idle' : holder === worker ? 'worker' : String(holder));

describe('tail-trace-join', () => {
  it('parses the lines perf script prints', () => {
    expect(parsePerfLine('            perf 12118/12118 [000]  2034.645397565:    sched:sched_switch: prev_comm=perf prev_pid=12118 prev_prio=120 prev_state=D ==> next_comm=migration/0 next_pid=18 next_prio=0'))
      .toEqual({ t: 2034645397565, cpu: 0, tid: 12118, tgid: 12118, comm: 'perf', kind: 'switch', prevTid: 12118, prevState: 'D', nextComm: 'migration/0', nextTid: 18 });
    expect(parsePerfLine('            perf 12118/12118 [000]  2034.645394189:    sched:sched_wakeup: comm=migration/0 pid=18 prio=0 target_cpu=001'))
      .toMatchObject({ kind: 'wakeup', wokenTid: 18, targetCpu: 1, t: 2034645394189 });
    expect(parsePerfLine('         swapper     0/0     [000]  2034.672033161:     irq:softirq_entry: vec=1 [action=TIMER]')).toMatchObject({ kind: 'softirq-entry', what: 'TIMER', tid: 0 });
    expect(parsePerfLine('            node 12052/12053 [001]  2036.030721204: irq:irq_handler_entry: irq=36 name=virtio1-req.0')).toMatchObject({ kind: 'irq-entry', what: 'virtio1-req.0', tid: 12053, tgid: 12052, cpu: 1 });
    // A thread name with a space in it, as V8 names some.
    expect(parsePerfLine('  V8 Worker 12052/12055 [001]  1.000000001: sched:sched_switch: prev_comm=V8 Worker prev_pid=12055 prev_prio=120 prev_state=R+ ==> next_comm=swapper/1 next_pid=0 next_prio=120'))
      .toMatchObject({ comm: 'V8 Worker', prevTid: 12055, prevState: 'R+', nextTid: 0 });
    expect(parsePerfLine('not a perf line')).toBeUndefined();
  });

  it('gives each instant of a round trip to one category, and the CPU the loop waited on to its holder', () => {
    // The client publishes on CPU 0 and wakes the loop onto CPU 1, which a worker of the server holds for 300 ns;
    // the loop runs, writes to the disk (D), runs again, wakes the client onto the idle CPU 0.
    const events: SchedEvent[] = [
      switched(0, 0, 0, 'R', client),
      switched(500, 1, loop, 'S', worker),
      woken(1100, 0, client, loop, 1),
      switched(1200, 0, client, 'S', 0),
      switched(1400, 1, worker, 'R', loop),
      switched(1600, 1, loop, 'D', 0),
      woken(1800, 1, 0, loop, 1),
      switched(1800, 1, 0, 'R', loop),
      woken(1890, 1, loop, client, 0),
      switched(1900, 1, loop, 'S', 0),
      switched(1950, 0, 0, 'R', client),
    ].reverse(); // any order: sorted by time (no two at one instant)
    const split = splitWindow(schedTrace(events), { loop, others: [worker], client }, 1000, 2000, label);
    expect(Object.fromEntries(categories.map((name, c) => [name, split.byCategory[c]]))).toEqual({
      'loop running': 300,
      'loop waiting for a CPU': 300,
      'loop in a disk write (D)': 200,
      'client running': 150,
      'client waiting for a CPU': 50,
      "server's other threads running or in D": 0,
      'all asleep (disk, wire, wake-ups)': 0,
    });
    expect(Object.fromEntries(split.heldBy)).toEqual({ worker: 300, idle: 50 });
  });

  it('ends an interrupt whose exit perf lost at the next switch or softirq on its CPU', () => {
    // Over the task running on CPU 0: the client, then the loop.
    const interrupt = (t: number, kind: SchedEvent['kind'], what?: string): SchedEvent => {
      const tid = t < 200 ? client : loop;
      return { t, cpu: 0, tid, tgid: tid, comm: 'node', kind, ...(what === undefined ? {} : { what }) };
    };
    const events: SchedEvent[] = [
      switched(0, 0, 0, 'R', client),
      interrupt(100, 'softirq-entry', 'NET_RX'), // its exit lost
      switched(200, 0, client, 'S', loop),
      interrupt(300, 'softirq-entry', 'BLOCK'),
      interrupt(350, 'irq-entry', 'virtio1-req.0'), // its exit lost too: the softirq's ends it
      interrupt(400, 'softirq-exit'),
      interrupt(500, 'softirq-entry', 'NET_RX'), // lost, then the next softirq replaces it
      interrupt(600, 'softirq-entry', 'TIMER'),
      interrupt(700, 'softirq-exit'),
    ];
    expect(schedTrace(events).cpus.get(0)).toEqual([
      [0, client], [100, 'softirq:NET_RX'], [200, loop], [300, 'softirq:BLOCK'], [350, 'irq:virtio1-req.0'], [400, loop],
      [500, 'softirq:NET_RX'], [600, 'softirq:TIMER'], [700, loop],
    ]);
  });

  it('puts a thread on a CPU whose switch to it perf did not record: from its wake-up there, else from its first event', () => {
    const events: SchedEvent[] = [
      switched(0, 0, 0, 'R', client),
      switched(0, 1, 0, 'R', loop),
      switched(100, 1, loop, 'D', 0),
      // The client wakes the loop onto idle CPU 1 at 200: the switch from idle is not recorded, the loop's send is.
      woken(200, 0, client, loop, 1),
      woken(260, 1, loop, client, 0),
      switched(300, 1, loop, 'D', 0),
      // Its write completes in an interrupt over CPU 1's idle task (not recorded): seen again at its next event.
      { t: 500, cpu: 1, tid: loop, tgid: loop, comm: 'node', kind: 'softirq-entry', what: 'NET_RX' },
      { t: 520, cpu: 1, tid: loop, tgid: loop, comm: 'node', kind: 'softirq-exit' },
      switched(600, 1, loop, 'S', 0),
    ];
    const trace = schedTrace(events);
    expect(trace.states.get(loop)!.map(([t, placed]) => [t, placed.state, placed.cpu])).toEqual([
      [0, 'run', 1], [100, 'disk', 1], [200, 'run', 1], [300, 'disk', 1], [500, 'run', 1], [600, 'sleep', 1],
    ]);
    expect(trace.cpus.get(1)).toEqual([[0, loop], [100, 0], [200, loop], [300, 0], [500, 'softirq:NET_RX'], [520, loop], [600, 0]]);
  });

  it("gives an idle CPU to the thread next seen there from when a wake-up queued another on it: it was busy then", () => {
    // A worker of the server starts on idle CPU 1 unrecorded; the client queues the loop behind it at 200; the worker
    // is seen first when it yields to the loop at 500.
    const events: SchedEvent[] = [
      switched(0, 0, 0, 'R', client),
      switched(0, 1, loop, 'S', 0),
      woken(200, 0, client, loop, 1),
      switched(250, 0, client, 'S', 0),
      switched(500, 1, worker, 'R', loop),
      switched(600, 1, loop, 'S', 0),
    ];
    const trace = schedTrace(events);
    expect(trace.cpus.get(1)).toEqual([[0, 0], [200, worker], [500, loop], [600, 0]]);
    const split = splitWindow(trace, { loop, others: [worker], client }, 100, 700, label);
    expect(split.byCategory[1]).toBe(300);
    expect(Object.fromEntries(split.heldBy)).toEqual({ worker: 300 });
  });

  it('takes the slowest 1% against the medians, and names the category and holder of each', () => {
    const typical: WindowSplit = { byCategory: [100, 0, 800, 100, 0, 0, 0], heldBy: new Map(), heldAll: new Map() };
    const windows: Array<readonly [number, number]> = [];
    const splits: WindowSplit[] = [];
    for (let i = 0; i < 199; i++) {
      windows.push([i * 10_000, i * 10_000 + 1000]);
      splits.push(typical);
    }
    // Two slow ones (the slowest 1% of 201): one waited 4,000 ns for a CPU a worker held, one spent 2,000 more in D.
    windows.push([5_000_000, 5_005_000], [6_000_000, 6_003_000]);
    splits.push({ byCategory: [100, 4000, 800, 100, 0, 0, 0], heldBy: new Map([['worker', 4000]]), heldAll: new Map() });
    splits.push({ byCategory: [100, 0, 2800, 100, 0, 0, 0], heldBy: new Map(), heldAll: new Map() });
    const summary = summarizeSplits(windows, splits);
    expect(summary).toMatchObject({ roundTrips: 201, p50Ns: 1000, tail: 3, medianNs: [100, 0, 800, 100, 0, 0, 0] });
    // The third slowest is a typical one: excess (4000 + 2000 + 0) / 3.
    expect(summary.meanExcessNs).toBe(2000);
    expect(summary.tailMeanNs[1]).toBeCloseTo(4000 / 3);
    expect(summary.dominant[1]).toBe(1);
    expect(summary.dominant[2]).toBe(1);
    expect(Object.fromEntries(summary.topHolder)).toEqual({ worker: 1, none: 2 });
  });
});
