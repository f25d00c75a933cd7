/**
 * Who holds the CPUs in the scrape bench's durable tail (issue 15): runs the
 * scrape bench's offline persistent subscriber row exactly as
 * `CAIRN_BENCH_SCRAPE_CASES=durable node dist/tools/bench.js scrape` does
 * (bench-scrape.ts's benchScrape, watched through its ScrapeObserver), with
 * every round trip recorded (bench-side-by-side.ts recordRoundTrips) and
 * `perf record` tracing every context switch, wake-up and interrupt on the
 * machine (tail-trace.ts's recording) over the row's windows. The report
 * gives each round trip the kind of the window it fell in (plain, decoy,
 * scraped) and, per kind, splits its slowest 1% into tail-trace-join.ts's
 * categories (the excess over that kind's own medians), names who held the
 * CPU the broker's loop or the client waited on, and how much CPU each party
 * (the broker's threads by role, the bench client, the scraper, the decoy
 * and its scraper, the kernel) held during the kind's round trips and
 * during its slowest 1%: scraped against decoy is what answering the
 * scraper adds to the tail, and whose it is. Every table is printed twice:
 * over every round trip, and over those during which no process outside the
 * bench (another user of the machine) held a CPU.
 *
 * On this VM perf records nothing in the second vCPU's idle task (see
 * tail-trace-join.ts): a thread woken there by an interrupt or a lost
 * wake-up is seen from its first event, its time before counted where it was
 * last seen (the loop's parsing of a publish often as 'all asleep'). Who held
 * a CPU a thread waited for is sound: a wake-up onto a busy CPU is recorded.
 *
 *   node dist/tools/tail-trace-scrape.js OUTDIR          (under the machine lock)
 *   node dist/tools/tail-trace-scrape.js report OUTDIR
 *
 * Needs `perf` and the right to trace the whole machine. OUTDIR keeps
 * perf.data and rounds.json (the round trips, the windows, the parties).
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import type { spawn } from 'node:child_process';
import { benchScrape, type ScrapeObserver } from './bench-scrape.js';
import type { WindowKind } from './bench-scrape-blocks.js';
import type { WindowSpan } from './bench-scrape-stages.js';
import { fmt, printTable } from './bench-mqtt.js';
import { recordRoundTrips } from './bench-side-by-side.js';
import { readPerf, startPerf, stopPerf } from './tail-trace.js';
import { categories, schedTrace, splitWindow, summarizeSplits, type WindowSplit } from './tail-trace-join.js';
import { brokerThreadRoles, holdersOf, partyLabeller, windowKinds, type KindHolders, type ThreadSnapshot } from './tail-trace-scrape-join.js';

interface Pids { broker: number; client: number; scraper: number; decoy: number; decoyScraper: number; perf: number }

/** What record() leaves in OUTDIR/rounds.json. */
interface Recorded {
  readonly pids: Pids;
  /** [tid, role] of the broker's threads (brokerThreadRoles) and the client's loop. */
  readonly roles: Array<[number, string]>;
  /** The broker's threads before and after the scraper declared its queues, and after the durable row. */
  readonly snapshots: { readonly before: ThreadSnapshot[]; readonly declared: ThreadSnapshot[]; readonly done: ThreadSnapshot[] };
  readonly spans: readonly WindowSpan[];
  /** [start, end] CLOCK_MONOTONIC ns. */
  readonly rounds: Array<[number, number]>;
}

function snapshot(pid: number): ThreadSnapshot[] {
  const threads: ThreadSnapshot[] = [];
  for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const syscall = fs.readFileSync(`/proc/${pid}/task/${task}/syscall`, 'utf8').split(' ')[0]!;
      const runNs = Number(fs.readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
      threads.push({ tid: Number(task), syscall: /^\d+$/.test(syscall) ? Number(syscall) : undefined, runNs });
    } catch {
      // the thread ended while we read
    }
  }
  return threads;
}

async function record(outDir: string): Promise<void> {
  fs.mkdirSync(outDir, { recursive: true });
  process.env['CAIRN_BENCH_SCRAPE_CASES'] = 'durable';
  const offsetMs = Number(process.hrtime.bigint()) / 1e6 - performance.now();
  const rounds: Array<[number, number]> = [];
  let recording = false;
  recordRoundTrips((startedMs, endedMs) => { if (recording) rounds.push([(startedMs + offsetMs) * 1e6, (endedMs + offsetMs) * 1e6]); });
  const pids: Pids = { broker: -1, client: process.pid, scraper: -1, decoy: -1, decoyScraper: -1, perf: -1 };
  const snapshots = { before: [] as ThreadSnapshot[], declared: [] as ThreadSnapshot[], done: [] as ThreadSnapshot[] };
  let spans: readonly WindowSpan[] = [];
  let perf: ReturnType<typeof spawn> | undefined;
  const observer: ScrapeObserver = {
    brokerStarted: (pid) => {
      pids.broker = pid;
      snapshots.before = snapshot(pid);
    },
    loadsReady: (loads) => {
      snapshots.declared = snapshot(pids.broker);
      Object.assign(pids, loads);
    },
    durableStarting: async () => {
      perf = await startPerf(outDir);
      pids.perf = perf.pid ?? -1;
      recording = true;
    },
    durableDone: async (windows) => {
      recording = false;
      spans = [...windows];
      snapshots.done = snapshot(pids.broker);
      await stopPerf(perf);
    },
  };
  try {
    await benchScrape(observer);
  } finally {
    recordRoundTrips(undefined);
    await stopPerf(perf);
  }
  const roles: Array<[number, string]> = [...brokerThreadRoles(pids.broker, snapshots.before, snapshots.declared)];
  // A thread born after the queues were declared has no role from them (none was, in the runs so far).
  for (const thread of snapshots.done) if (!roles.some(([tid]) => tid === thread.tid)) roles.push([thread.tid, 'broker: thread born during the row']);
  roles.push([process.pid, 'client: event loop']);
  const recorded: Recorded = { pids, roles, snapshots, spans, rounds };
  fs.writeFileSync(join(outDir, 'rounds.json'), JSON.stringify(recorded));
  console.log(`recorded ${rounds.length} round trips in ${outDir}; now (outside the machine lock): node ${process.argv[1]} report ${outDir}`);
}

const kinds: readonly WindowKind[] = ['plain', 'decoy', 'scraped'];
const outsidePrefix = 'outside: ';
const us = (ns: number | undefined): string => fmt((ns ?? 0) / 1000, 1);

async function report(outDir: string): Promise<void> {
  const { pids, roles, snapshots, spans, rounds } = JSON.parse(fs.readFileSync(join(outDir, 'rounds.json'), 'utf8')) as Recorded;
  const trace = schedTrace(await readPerf(join(outDir, 'perf.data')));
  const roleOf = new Map(roles);
  const processes = new Map<number, string>([
    [pids.broker, 'broker: thread ended before the roles were read'], [pids.client, 'client: other threads'],
    [pids.scraper, 'scraper'], [pids.decoy, 'decoy'], [pids.decoyScraper, 'decoy scraper'], [pids.perf, 'perf'],
  ]);
  const label = partyLabeller({ roles: roleOf, processes, threads: trace.threads });
  printThreads(snapshots, roleOf);
  const kindOf = windowKinds(rounds, spans);
  const parties = { loop: pids.broker, others: snapshots.done.map((thread) => thread.tid).filter((tid) => tid !== pids.broker), client: pids.client };
  const byKind = new Map<WindowKind, { windows: Array<[number, number]>; splits: WindowSplit[] }>(kinds.map((kind) => [kind, { windows: [], splits: [] }]));
  rounds.forEach(([a, b], i) => {
    const kind = kindOf[i];
    if (kind === undefined) return;
    const of = byKind.get(kind)!;
    of.windows.push([a, b]);
    of.splits.push(splitWindow(trace, parties, a, b, label));
  });
  printKinds('every round trip', byKind);
  // The same without the round trips during which a process outside the bench (another user of the machine) held a CPU.
  const clean = new Map([...byKind].map(([kind, { windows, splits }]) => {
    const kept = splits.map((_, i) => i).filter((i) => ![...splits[i]!.heldAll.keys()].some((name) => name.startsWith(outsidePrefix)));
    return [kind, { windows: kept.map((i) => windows[i]!), splits: kept.map((i) => splits[i]!) }];
  }));
  printKinds('only the round trips no outside process touched', clean);
}

/** Per kind: its p50, p99 and tail; the tail by category; who held the CPUs while the loop or client waited, and during the round trips. */
function printKinds(title: string, byKind: ReadonlyMap<WindowKind, { windows: Array<[number, number]>; splits: WindowSplit[] }>): void {
  const summaries = kinds.map((kind) => summarizeSplits(byKind.get(kind)!.windows, byKind.get(kind)!.splits));
  console.log(`\n== ${title}: the durable row's round trips by window kind (each against its own kind's p50 and per-category medians), us:`);
  printTable([
    ['', ...kinds],
    ['round trips', ...summaries.map((s) => String(s.roundTrips))],
    ['p50 / p99', ...summaries.map((s) => `${us(s.p50Ns)} / ${us(s.p99Ns)}`)],
    ['slowest 1%: round trips, mean excess over the p50', ...summaries.map((s) => `${s.tail}, ${us(s.meanExcessNs)}`)],
  ]);
  console.log('\nthe slowest 1% by category (first match wins): median over all / mean over the slowest 1% / slowest 1% with its biggest excess there, us:');
  printTable([['category', ...kinds], ...categories.map((name, c) => [name, ...summaries.map((s) => `${us(s.medianNs[c])} / ${us(s.tailMeanNs[c])} / ${s.dominant[c]}`)])]);
  const holders = kinds.map((kind) => holdersOf(byKind.get(kind)!.windows, byKind.get(kind)!.splits));
  printHolders('who held the CPU the loop or the client was queued on while it waited, us per slowest-1% round trip', holders, (h) => h.tailWaiting);
  printHolders('CPU held by each party during the round trips (both CPUs; idle included), us per round trip: all / slowest 1%', holders, (h) => h.all, (h) => h.tail);
}

/** The broker's threads by role: CPU while the scraper declared its queues, and over the durable row. */
function printThreads(snapshots: Recorded['snapshots'], roles: ReadonlyMap<number, string>): void {
  const runOf = (list: readonly ThreadSnapshot[], tid: number): number => list.find((thread) => thread.tid === tid)?.runNs ?? 0;
  console.log("the broker's threads (roles: tail-trace-scrape-join.ts), CPU ms:");
  printTable([['tid', 'role', 'blocked in syscall', 'while the scraper declared its queues', 'over the durable row'],
    ...snapshots.done.map((thread) => [String(thread.tid), roles.get(thread.tid) ?? '?', String(snapshots.declared.find((t) => t.tid === thread.tid)?.syscall ?? 'running'),
      fmt((runOf(snapshots.declared, thread.tid) - runOf(snapshots.before, thread.tid)) / 1e6, 1), fmt((thread.runNs - runOf(snapshots.declared, thread.tid)) / 1e6, 1)])]);
}

/**
 * One row per party (those with ≥ 0.5 us somewhere), a column per kind (a cell per measure), and the scraped tail less
 * the decoy tail: the last measure is the tail's, and rows are sorted by that difference.
 */
function printHolders(title: string, holders: readonly KindHolders[], ...measures: Array<(h: KindHolders) => ReadonlyMap<string, number>>): void {
  const last = measures.at(-1)!;
  const names = new Set(holders.flatMap((h) => measures.flatMap((measure) => [...measure(h).keys()])));
  const decoy = holders[kinds.indexOf('decoy')]!;
  const scraped = holders[kinds.indexOf('scraped')]!;
  const grew = (name: string): number => (last(scraped).get(name) ?? 0) - (last(decoy).get(name) ?? 0);
  const rows = [...names]
    .filter((name) => holders.some((h) => measures.some((measure) => (measure(h).get(name) ?? 0) >= 500)))
    .sort((a, b) => grew(b) - grew(a))
    .map((name) => [name, ...holders.map((h) => measures.map((measure) => us(measure(h).get(name))).join(' / ')), us(grew(name))]);
  console.log(`\n${title}:`);
  printTable([['party', ...kinds, 'scraped less decoy (slowest 1%)'], ...rows]);
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) {
  const [command, outDir] = process.argv.slice(2);
  if (command === 'report' && outDir !== undefined) await report(outDir);
  else if (command !== undefined && command !== 'report') await record(command);
  else throw new Error('usage: tail-trace-scrape.js OUTDIR | report OUTDIR');
}
