/**
 * The pure half of tail-trace-scrape.ts (issue 15): which window kind of the
 * scrape bench (plain, decoy, scraped; bench-scrape-blocks.ts) each recorded
 * round trip fell in, which role each of the broker's threads plays, the
 * name of whoever held a CPU (a party of the bench, the kernel, an outsider),
 * and, per kind, how much CPU each party held during round trips: all of
 * them against the slowest 1%, and while the loop or the client waited.
 *
 * Node names none of its threads ("node" in /proc/PID/task/TID/comm), so the
 * broker's are told apart by what /proc says of them when they are idle and
 * by their order of creation (thread ids grow): the event loop's id is the
 * process id; the HTTP socket thread (src/http/socket-thread.js, a worker
 * with a libuv loop of its own) waits in epoll like the loop and is the
 * thread whose CPU grew most while the scraper declared its queues through
 * the API; V8's platform starts first its delayed-task thread (the other one
 * waiting in epoll), then its workers (compilation, concurrent marking and
 * sweeping), then Node its inspector's signal thread; libuv's pool (fs, zlib)
 * is started later, on first use.
 */
import type { WindowKind } from './bench-scrape-blocks.js';
import type { WindowSpan } from './bench-scrape-stages.js';
import { partitionPoint } from './partition-point.js';
import { slowestIndexes, type WindowSplit } from './tail-trace-join.js';

/**
 * Each round trip's kind: the window its start fell in ([startMs, endMs) of a span, CLOCK_MONOTONIC ms; round
 * trips in ns), undefined outside every span (the unmeasured window, the opening warm-up).
 */
export function windowKinds(rounds: ReadonlyArray<readonly [number, number]>, spans: readonly WindowSpan[]): Array<WindowKind | undefined> {
  const sorted = [...spans].sort((a, b) => a.startMs - b.startMs);
  return rounds.map(([startNs]) => {
    const startMs = startNs / 1e6;
    const span = sorted[partitionPoint(sorted.length, (i) => sorted[i]!.startMs <= startMs) - 1];
    return span !== undefined && startMs < span.endMs ? span.kind : undefined;
  });
}

/** One thread of a process as /proc showed it: its id, the system call it was blocked in (none: running), its CPU so far. */
export interface ThreadSnapshot { readonly tid: number; readonly syscall: number | undefined; readonly runNs: number }

/** epoll_wait, epoll_pwait, epoll_pwait2 on x86-64: where a libuv loop idles. */
const epollWaits: ReadonlySet<number> = new Set([232, 281, 441]);
/** V8's platform workers Node starts (its --v8-pool-size, 4 unless set). */
const v8PlatformWorkers = 4;

export const brokerRoles = {
  loop: 'broker: event loop',
  socketThread: 'broker: HTTP socket thread',
  delayedTasks: "broker: V8's delayed-task thread",
  platformWorker: "broker: V8's platform workers (JIT, GC)",
  signalThread: "broker: Node's inspector signal thread",
  pool: "broker: libuv's pool (fs, zlib)",
} as const;

/**
 * Each broker thread's role, from snapshots taken before and after a burst of HTTP requests (`after` lists every
 * thread; one missing from `before` was born meanwhile and grew by all its CPU).
 */
export function brokerThreadRoles(pid: number, before: readonly ThreadSnapshot[], after: readonly ThreadSnapshot[]): Map<number, string> {
  const roles = new Map<number, string>([[pid, brokerRoles.loop]]);
  const grewNs = (thread: ThreadSnapshot): number => thread.runNs - (before.find((b) => b.tid === thread.tid)?.runNs ?? 0);
  const others = after.filter((thread) => thread.tid !== pid).sort((a, b) => a.tid - b.tid);
  const polling = others.filter((thread) => thread.syscall !== undefined && epollWaits.has(thread.syscall));
  const socket = polling.reduce<ThreadSnapshot | undefined>((best, thread) => (grewNs(thread) > (best === undefined ? 0 : grewNs(best)) ? thread : best), undefined);
  if (socket !== undefined) roles.set(socket.tid, brokerRoles.socketThread);
  for (const thread of polling) if (thread !== socket) roles.set(thread.tid, brokerRoles.delayedTasks);
  others.filter((thread) => !roles.has(thread.tid)).forEach((thread, rank) => {
    roles.set(thread.tid, rank < v8PlatformWorkers ? brokerRoles.platformWorker : rank === v8PlatformWorkers ? brokerRoles.signalThread : brokerRoles.pool);
  });
  return roles;
}

/** What a labeller needs: roles by thread id, names by process id (a process's every thread), and the trace's thread table. */
export interface Parties {
  readonly roles: ReadonlyMap<number, string>;
  readonly processes: ReadonlyMap<number, string>;
  readonly threads: ReadonlyMap<number, { readonly tgid: number; readonly comm: string }>;
}

const kernelThread = /^(kworker|kdamond|ksoftirqd|rcu_|migration|kcompactd|khugepaged|kswapd|jbd2|cpuhp|watchdog|kthreadd)/;

/**
 * Names a CPU's holder (a thread id, 0 for idle, or 'irq:NAME' / 'softirq:ACTION') by party: a role, the process of
 * a known party ('… (ended thread)' for a broker thread gone before the roles were read), a kernel thread by its
 * kind, or 'outside: COMM'.
 */
export function partyLabeller(parties: Parties): (holder: number | string) => string {
  return (holder) => {
    if (typeof holder === 'string') return `kernel: ${holder}`;
    if (holder === 0) return 'idle';
    const role = parties.roles.get(holder);
    if (role !== undefined) return role;
    const thread = parties.threads.get(holder);
    if (thread === undefined) return 'unknown';
    const process = parties.processes.get(thread.tgid);
    if (process !== undefined) return process;
    const comm = thread.comm.replace(/\/\d+.*$/, '').replace(/:\d+.*$/, '');
    if (kernelThread.test(comm)) return `kernel: ${comm}`;
    return `outside: ${comm}`;
  };
}

/** Per party, ns per round trip: CPU held during all round trips and during the slowest 1%, and held while the loop or the client waited. */
export interface KindHolders {
  readonly all: ReadonlyMap<string, number>;
  readonly tail: ReadonlyMap<string, number>;
  readonly tailWaiting: ReadonlyMap<string, number>;
}

/** The means of one kind's splits (its windows, in the same order). */
export function holdersOf(windows: ReadonlyArray<readonly [number, number]>, splits: readonly WindowSplit[]): KindHolders {
  const tail = slowestIndexes(windows);
  const meanOf = (indexes: readonly number[], of: (split: WindowSplit) => ReadonlyMap<string, number>): Map<string, number> => {
    const sums = new Map<string, number>();
    for (const i of indexes) for (const [name, ns] of of(splits[i]!)) sums.set(name, (sums.get(name) ?? 0) + ns);
    for (const [name, ns] of sums) sums.set(name, ns / indexes.length);
    return sums;
  };
  return {
    all: meanOf(windows.map((_, i) => i), (split) => split.heldAll),
    tail: meanOf(tail, (split) => split.heldAll),
    tailWaiting: meanOf(tail, (split) => split.heldBy),
  };
}
