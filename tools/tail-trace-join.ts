/**
 * Joins sequential round trips (timed by the client on CLOCK_MONOTONIC) with
 * a scheduler trace (`perf record -e sched:sched_switch,sched:sched_wakeup,
 * irq:... -k CLOCK_MONOTONIC -a`, read back with `perf script --ns -F
 * comm,pid,tid,cpu,time,event,trace`) to say, for the slowest 1% of a server's
 * round trips, where the time beyond its p50 went (issue 18): its event
 * loop thread on a CPU, waiting for one (and who held the CPUs meanwhile), in
 * a disk write (D), the client on or waiting for a CPU, or none of those
 * (everyone asleep: the disk, a pool thread, the wire). Pure: tail-trace.ts
 * runs the round trips and perf, this reads what they wrote.
 *
 * Each instant of a round trip is given to one category, first match wins:
 * loop running, loop runnable, loop in D, client running, client runnable,
 * another thread of the server running or in D (libuv's pool with an
 * fdatasync, V8's helpers), else asleep. A category's excess in a tail round
 * trip is its time there minus its median over all of that server's round
 * trips. While the loop or the client waits for a CPU, the holder of the CPU
 * whose run queue it is on (a wake-up's target, a preempted thread's own) is
 * who ran instead; 'idle' there is the wake-up itself (the IPI, a halted vCPU
 * resuming).
 */
import { partitionPoint } from './partition-point.js';

export type ThreadState = 'run' | 'wait' | 'disk' | 'sleep';

export interface SchedEvent {
  /** CLOCK_MONOTONIC nanoseconds. */
  readonly t: number;
  readonly cpu: number;
  /** The task running when the event fired (header of the perf line). */
  readonly tid: number;
  readonly tgid: number;
  readonly comm: string;
  readonly kind: 'switch' | 'wakeup' | 'irq-entry' | 'irq-exit' | 'softirq-entry' | 'softirq-exit';
  /** switch: the task switched out, its state letter, the task switched in. */
  readonly prevTid?: number;
  readonly prevState?: string;
  readonly nextTid?: number;
  readonly nextComm?: string;
  /** wakeup: the task woken, and the CPU whose run queue it was put on. */
  readonly wokenTid?: number;
  readonly targetCpu?: number;
  /** irq / softirq: what ran (the handler's name, the softirq's action). */
  readonly what?: string;
}

const header = /^\s*(.+?)\s+(\d+)\/(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+(\S+):\s*(.*)$/;
const switchFields = /prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)/;
const wakeupFields = /comm=(.*?) pid=(\d+) prio=\d+ target_cpu=(\d+)/;

/** One line of `perf script --ns -F comm,pid,tid,cpu,time,event,trace`; undefined for a line it does not know. */
export function parsePerfLine(line: string): SchedEvent | undefined {
  const match = header.exec(line);
  if (match === null) return undefined;
  const [, comm, tgid, tid, cpu, seconds, fraction, event, rest] = match as unknown as string[];
  const t = Number(seconds) * 1e9 + Number(fraction!.padEnd(9, '0').slice(0, 9));
  const base = { t, cpu: Number(cpu), tid: Number(tid), tgid: Number(tgid), comm: comm! };
  if (event === 'sched:sched_switch') {
    const fields = switchFields.exec(rest!);
    if (fields === null) return undefined;
    return { ...base, kind: 'switch', prevTid: Number(fields[2]), prevState: fields[3]!, nextComm: fields[4]!, nextTid: Number(fields[5]) };
  }
  if (event === 'sched:sched_wakeup') {
    const fields = wakeupFields.exec(rest!);
    return fields === null ? undefined : { ...base, kind: 'wakeup', wokenTid: Number(fields[2]), targetCpu: Number(fields[3]) };
  }
  if (event === 'irq:irq_handler_entry') return { ...base, kind: 'irq-entry', what: /name=(\S+)/.exec(rest!)?.[1] ?? 'irq' };
  if (event === 'irq:irq_handler_exit') return { ...base, kind: 'irq-exit' };
  if (event === 'irq:softirq_entry') return { ...base, kind: 'softirq-entry', what: /action=(\w+)/.exec(rest!)?.[1] ?? 'softirq' };
  if (event === 'irq:softirq_exit') return { ...base, kind: 'softirq-exit' };
  return undefined;
}

/** Transitions [t, value] in time order: a value holds from its t to the next one's. */
type Timeline<V> = Array<[number, V]>;

/** A thread's state and the CPU it is on (run) or queued on (wait; a migration is seen only when it runs). */
export interface Placed { readonly state: ThreadState; readonly cpu: number }

export interface SchedTrace {
  /** Per thread, its state over time (unknown before its first event). */
  readonly states: ReadonlyMap<number, Timeline<Placed>>;
  /** Per CPU, what held it: a thread id (0: idle) or, inside an interrupt, 'irq:NAME' / 'softirq:ACTION'. */
  readonly cpus: ReadonlyMap<number, Timeline<number | string>>;
  /** Per thread id, its process id and name, as far as the trace saw it run. */
  readonly threads: ReadonlyMap<number, { readonly tgid: number; readonly comm: string }>;
}

/** Builds the timelines from events (any order: sorted here). */
export function schedTrace(events: readonly SchedEvent[]): SchedTrace {
  const sorted = [...events].sort((a, b) => a.t - b.t);
  const states = new Map<number, Timeline<Placed>>();
  const cpus = new Map<number, Timeline<number | string>>();
  const threads = new Map<number, { tgid: number; comm: string }>();
  /** Per CPU: the task on it, and the interrupts in progress over it (innermost last). */
  const onCpu = new Map<number, number>();
  const inInterrupt = new Map<number, string[]>();
  const setState = (tid: number, t: number, state: ThreadState, cpu: number): void => {
    let timeline = states.get(tid);
    if (timeline === undefined) states.set(tid, (timeline = []));
    const last = timeline.at(-1)?.[1];
    if (last?.state !== state || last.cpu !== cpu) timeline.push([t, { state, cpu }]);
  };
  const setCpu = (cpu: number, t: number): void => {
    let timeline = cpus.get(cpu);
    if (timeline === undefined) cpus.set(cpu, (timeline = []));
    const held = inInterrupt.get(cpu)?.at(-1) ?? onCpu.get(cpu) ?? 0;
    if (timeline.at(-1)?.[0] === t) timeline.pop(); // held for no time
    if (timeline.at(-1)?.[1] !== held) timeline.push([t, held]);
  };
  /** Per CPU: when a wake-up (recorded elsewhere) first queued a thread on it since its last recorded event. */
  const queuedOnSince = new Map<number, number>();
  /**
   * The task perf names as running is on the event's CPU, whatever was switched in last: a switch perf did not
   * record. On this VM's second vCPU perf records nothing in the idle task's context: neither its switches to a task
   * nor the interrupts and wake-ups handled over it (a wake-up onto an idle CPU is handled there). Only this task can
   * have run there since the CPU's last recorded event (any other would have recorded its switch out): it ran from
   * the first sign that the CPU was busy, its own wake-up onto it or another thread queued on it; without one, from
   * this first event of its own (a thread woken there by an interrupt, as a disk write completing, or by a wake-up
   * perf lost: the time before is counted where the thread was last seen, often asleep).
   */
  const switchedInUnrecorded = (tid: number, cpu: number, t: number): void => {
    let timeline = states.get(tid);
    if (timeline === undefined) states.set(tid, (timeline = []));
    const last = timeline.at(-1);
    const cpuSince = cpus.get(cpu)?.at(-1)?.[0] ?? Number.NEGATIVE_INFINITY;
    const wokenHere = last !== undefined && last[1].state === 'wait' && last[1].cpu === cpu && last[0] >= cpuSince ? last[0] : t;
    const from = Math.min(wokenHere, queuedOnSince.get(cpu) ?? t);
    if (last !== undefined && last[0] >= from) timeline.pop(); // its wake-up here, or a zero-length state
    setState(tid, Math.max(from, timeline.at(-1)?.[0] ?? from), 'run', cpu);
    onCpu.set(cpu, tid);
    inInterrupt.get(cpu)?.splice(0);
    setCpu(cpu, from);
  };
  for (const event of sorted) {
    if (event.tid !== 0 && !threads.has(event.tid)) threads.set(event.tid, { tgid: event.tgid, comm: event.comm });
    if (event.tid !== 0 && onCpu.get(event.cpu) !== event.tid) switchedInUnrecorded(event.tid, event.cpu, event.t);
    queuedOnSince.delete(event.cpu);
    switch (event.kind) {
      case 'switch': {
        const prev = event.prevTid!;
        if (prev !== 0) setState(prev, event.t, event.prevState!.startsWith('R') ? 'wait' : event.prevState!.startsWith('D') ? 'disk' : 'sleep', event.cpu);
        const next = event.nextTid!;
        if (next !== 0) setState(next, event.t, 'run', event.cpu);
        onCpu.set(event.cpu, next);
        // A task switch happens outside every interrupt: an exit perf did not record (or one before the trace began)
        // would otherwise leave the CPU inside that interrupt for the rest of the trace.
        inInterrupt.get(event.cpu)?.splice(0);
        setCpu(event.cpu, event.t);
        break;
      }
      case 'wakeup': {
        const woken = event.wokenTid!;
        const current = states.get(woken)?.at(-1)?.[1];
        if (current?.state !== 'run') {
          setState(woken, event.t, 'wait', event.targetCpu!);
          if (event.targetCpu !== event.cpu && !queuedOnSince.has(event.targetCpu!)) queuedOnSince.set(event.targetCpu!, event.t);
        }
        break;
      }
      case 'irq-entry':
      case 'softirq-entry': {
        let stack = inInterrupt.get(event.cpu);
        if (stack === undefined) inInterrupt.set(event.cpu, (stack = []));
        // Softirqs never nest on one CPU (an irq may interrupt one): a softirq still open here lost its exit.
        const open = stack.findIndex((name) => name.startsWith('softirq:'));
        if (event.kind === 'softirq-entry' && open >= 0) stack.splice(open);
        stack.push(`${event.kind === 'irq-entry' ? 'irq' : 'softirq'}:${event.what}`);
        setCpu(event.cpu, event.t);
        break;
      }
      case 'irq-exit':
      case 'softirq-exit': {
        // The innermost interrupt of the exit's kind ends, with any inside it whose exits were lost.
        const stack = inInterrupt.get(event.cpu) ?? [];
        const prefix = event.kind === 'irq-exit' ? 'irq:' : 'softirq:';
        let innermost = stack.length - 1;
        while (innermost >= 0 && !stack[innermost]!.startsWith(prefix)) innermost--;
        if (innermost >= 0) stack.splice(innermost);
        setCpu(event.cpu, event.t);
        break;
      }
    }
  }
  return { states, cpus, threads };
}

/** The value at `t` (undefined before the first transition). */
function valueAt<V>(timeline: Timeline<V> | undefined, t: number): V | undefined {
  if (timeline === undefined || timeline.length === 0 || timeline[0]![0] > t) return undefined;
  // The last transition at or before t (the first one holds that, checked above).
  return timeline[partitionPoint(timeline.length, (i) => timeline[i]![0] <= t) - 1]![1];
}

/** Transition times strictly inside (a, b). */
function changesWithin(timeline: Timeline<unknown> | undefined, a: number, b: number, into: number[]): void {
  if (timeline === undefined) return;
  // The first transition after a, by bisection: a timeline of a whole-machine trace has millions.
  for (let i = partitionPoint(timeline.length, (j) => timeline[j]![0] <= a); i < timeline.length && timeline[i]![0] < b; i++) into.push(timeline[i]![0]);
}

export const categories = ['loop running', 'loop waiting for a CPU', 'loop in a disk write (D)', 'client running', 'client waiting for a CPU', "server's other threads running or in D", 'all asleep (disk, wire, wake-ups)'] as const;
export type Category = (typeof categories)[number];

/** Whose threads a round trip involves: the server's event loop (its pid), its other threads, the client's loop. */
export interface Parties { readonly loop: number; readonly others: readonly number[]; readonly client: number }

export interface WindowSplit {
  /** ns per category, in `categories` order. */
  readonly byCategory: readonly number[];
  /** While the loop or the client waited for a CPU: ns per holder of the CPU it was queued on (labelled by `label`). */
  readonly heldBy: ReadonlyMap<string, number>;
  /** The same over the whole window. */
  readonly heldAll: ReadonlyMap<string, number>;
}

/** Splits [a, b] (ns) into the categories, and says who held the CPUs while the loop or the client waited. */
export function splitWindow(trace: SchedTrace, parties: Parties, a: number, b: number, label: (holder: number | string) => string): WindowSplit {
  const byCategory = categories.map(() => 0);
  const heldBy = new Map<string, number>();
  const heldAll = new Map<string, number>();
  const points: number[] = [a, b];
  const loop = trace.states.get(parties.loop);
  const client = trace.states.get(parties.client);
  const others = parties.others.map((tid) => trace.states.get(tid));
  changesWithin(loop, a, b, points);
  changesWithin(client, a, b, points);
  for (const timeline of others) changesWithin(timeline, a, b, points);
  for (const timeline of trace.cpus.values()) changesWithin(timeline, a, b, points);
  points.sort((x, y) => x - y);
  for (let i = 0; i + 1 < points.length; i++) {
    const from = points[i]!;
    const length = points[i + 1]! - from;
    if (length <= 0) continue;
    const loopPlaced = valueAt(loop, from);
    const clientPlaced = valueAt(client, from);
    const loopState = loopPlaced?.state;
    const clientState = clientPlaced?.state;
    let category: number;
    if (loopState === 'run') category = 0;
    else if (loopState === 'wait') category = 1;
    else if (loopState === 'disk') category = 2;
    else if (clientState === 'run') category = 3;
    else if (clientState === 'wait') category = 4;
    else if (others.some((timeline) => { const state = valueAt(timeline, from)?.state; return state === 'run' || state === 'disk'; })) category = 5;
    else category = 6;
    byCategory[category]! += length;
    for (const timeline of trace.cpus.values()) {
      const name = label(valueAt(timeline, from) ?? 0);
      heldAll.set(name, (heldAll.get(name) ?? 0) + length);
    }
    const waiting = category === 1 ? loopPlaced : category === 4 ? clientPlaced : undefined;
    if (waiting !== undefined) {
      const name = label(valueAt(trace.cpus.get(waiting.cpu), from) ?? 0);
      heldBy.set(name, (heldBy.get(name) ?? 0) + length);
    }
  }
  return { byCategory, heldBy, heldAll };
}

export interface TailSummary {
  readonly roundTrips: number;
  readonly p50Ns: number;
  readonly p99Ns: number;
  readonly tail: number;
  /** Mean of (duration − p50) over the tail. */
  readonly meanExcessNs: number;
  /** Per category: its median over all round trips; its mean over the tail (less the median: the tail's excess there). */
  readonly medianNs: readonly number[];
  readonly tailMeanNs: readonly number[];
  /** How many tail round trips had their biggest excess in each category. */
  readonly dominant: readonly number[];
  /** Over the tail: ns per holder of a CPU while the loop or the client waited, summed. */
  readonly heldBy: ReadonlyMap<string, number>;
  /** Tail round trips by the holder that held a CPU longest while the loop or the client waited ('none': they never waited). */
  readonly topHolder: ReadonlyMap<string, number>;
}

/** The indexes of the slowest 1% (at least one) of `windows` ([start, end]), slowest first. */
export function slowestIndexes(windows: ReadonlyArray<readonly [number, number]>): number[] {
  const order = windows.map((_, i) => i).sort((x, y) => windows[y]![1] - windows[y]![0] - (windows[x]![1] - windows[x]![0]));
  return order.slice(0, Math.max(1, Math.ceil(windows.length / 100)));
}

/** The slowest 1% (at least one) of `windows` ([start, end] ns) against all of them. */
export function summarizeTail(trace: SchedTrace, parties: Parties, windows: ReadonlyArray<readonly [number, number]>, label: (holder: number | string) => string): TailSummary {
  return summarizeSplits(windows, windows.map(([a, b]) => splitWindow(trace, parties, a, b, label)));
}

/** The same from windows already split (the caller may have dropped some, e.g. those an outside process touched). */
export function summarizeSplits(windows: ReadonlyArray<readonly [number, number]>, splits: readonly WindowSplit[]): TailSummary {
  const durations = windows.map(([a, b]) => b - a);
  const sorted = [...durations].sort((x, y) => x - y);
  const pick = (q: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
  const p50Ns = pick(0.5);
  const p99Ns = pick(0.99);
  const medianNs = categories.map((_, c) => median(splits.map((split) => split.byCategory[c]!)));
  const tailIndexes = slowestIndexes(windows);
  const tailMeanNs = categories.map((_, c) => mean(tailIndexes.map((i) => splits[i]!.byCategory[c]!)));
  const dominant = categories.map(() => 0);
  const heldBy = new Map<string, number>();
  const topHolder = new Map<string, number>();
  for (const i of tailIndexes) {
    const excess = splits[i]!.byCategory.map((ns, c) => ns - medianNs[c]!);
    dominant[excess.indexOf(Math.max(...excess))]! += 1;
    let top = ['none', 0] as [string, number];
    for (const [name, ns] of splits[i]!.heldBy) {
      heldBy.set(name, (heldBy.get(name) ?? 0) + ns);
      if (ns > top[1]) top = [name, ns];
    }
    topHolder.set(top[0], (topHolder.get(top[0]) ?? 0) + 1);
  }
  return { roundTrips: windows.length, p50Ns, p99Ns, tail: tailIndexes.length, meanExcessNs: mean(tailIndexes.map((i) => durations[i]! - p50Ns)), medianNs, tailMeanNs, dominant, heldBy, topHolder };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted.length === 0 ? Number.NaN : sorted[Math.floor((sorted.length - 1) / 2)]!;
}

function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((x, y) => x + y, 0) / values.length;
}
