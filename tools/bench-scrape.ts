/**
 * Does watching the broker slow it down? The MQTT rows of bench-mqtt.ts
 * (sequential QoS 1 with no subscriber and with an offline persistent one;
 * QoS 0, QoS 1 and shared-subscription throughput: the QoS 1 publisher keeps
 * at most qos1WindowMessages in flight end to end, so nothing is dropped at
 * the subscriber's bound) on one Cairn, measured in windows of three kinds
 * (bench-scrape-blocks.ts): `plain`, no monitoring load; `scraped`, a scraper
 * on the broker (bench-scraper.ts, its own process: 1,000 queues declared,
 * then every second /metrics, /metrics/per-object, /api/queues, /api/overview
 * and the console's queue list); `decoy`, a second scraper process making the
 * same requests to a decoy (bench-scrape-decoy.ts) that captured the broker's
 * answers at the start and serves those bytes, so the broker answers nothing.
 * The windows alternate in blocks of six (plain, decoy, scraped, scraped,
 * decoy, plain: a drift of the machine linear over a block weighs on the three
 * alike); each block gives three ratios, scraped against plain (the issue's
 * question), decoy against plain (the machine's part: on two shared cores the
 * scraper's own CPU moves the p99 rows) and scraped against decoy (the
 * broker's part), and a row's verdicts are the medians of its blocks' ratios,
 * printed with their range: single windows of the same kind differed by
 * 25-40% on this shared two-core machine, so pooling a few long windows could
 * not resolve 5%, while neighbouring windows see the same minute.
 *
 * The broker renders /metrics and /metrics/per-object at most once per
 * --stats-interval (default 5 s, src/http/kept-exposition.ts), so at one
 * round a second about one round in five renders them; the others get the
 * kept answers, as a RabbitMQ scraped this often would show the same figures.
 *
 * Both scrapers run at the lowest CPU priority: they stand in for a Prometheus
 * on another machine, and on two cores their own parsing of ~0.7 MB a second
 * would otherwise be measured as the broker's cost. What the broker spends
 * answering is printed beside the rows (its CPU time per scrape round).
 */
import { openOfflineSubscriberQos1, openSequentialQos1, fmt, printTable, sharedMembers, tempDir, throughput, throughputCount } from './bench-mqtt.js';
import { shareRatios, summarizeShares, median, windowOrder, type ShareRatios, type WindowKind } from './bench-scrape-blocks.js';
import { startDecoyProcess, startScraperProcess, type ScraperProcess } from './bench-scraper-process.js';
import { summarize, withTimeout, type RoundTripCase } from './bench-side-by-side.js';
import { startCairnProcess } from './cairn-process.js';
import { threadTimes } from './bench-thread-times.js';
import { monotonicMs, stageRowsByWindowKind, type WindowSpan } from './bench-scrape-stages.js';
import { stageTimingVariable, stageTracesVariable, type StageTraces } from '../src/stage-timing.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const scrapedQueues = 1_000;
const windowMs = Number(process.env['CAIRN_BENCH_SCRAPE_WINDOW_MS'] ?? 1_500);
/** Blocks per case: each gives one ratio of each share. */
const blocksPerCase = Number(process.env['CAIRN_BENCH_SCRAPE_BLOCKS'] ?? 8);
const latencySampleBatch = 100;
const target = 0.05;
/**
 * CAIRN_BENCH_SCRAPE_CASES=latency or throughput runs only those rows (decomposition; the target is all of them);
 * `durable` only the offline persistent subscriber's. Read when the bench starts: tail-trace-scrape.ts sets it.
 */
const selectedCases = (): string => process.env['CAIRN_BENCH_SCRAPE_CASES'] ?? 'all';
/** CAIRN_BENCH_SCRAPE_STAGES=1: the broker stage-timed, and the durable row's stages by window kind (bench-scrape-stages.ts). */
const stagesWanted = process.env['CAIRN_BENCH_SCRAPE_STAGES'] === '1';
/**
 * The QoS 1 rows' publishers (pub->sub and $share) keep at most this many messages published and not yet received: a clean
 * session holds at most 4,096 queued messages and drops the oldest past that, and a row whose windows dropped
 * (1 to 25% of them, varying) measured the drops, not the broker (its block ratios ranged 0.56-1.25).
 */
const qos1WindowMessages = 1_024;

type LoadedKind = Exclude<WindowKind, 'plain'>;
/** A case measured in windows: `measure` runs until `until` and returns what it saw then. */
interface WindowedCase {
  readonly label: string;
  measure(until: number): Promise<number[]>;
  close(): Promise<void>;
}

/** Sequential round trips until the window ends; the samples in ms. */
function latencyCase(label: string, roundTrips: RoundTripCase): WindowedCase {
  return {
    label,
    measure: async (until) => {
      const samples: number[] = [];
      while (performance.now() < until) samples.push(...(await roundTrips.sample(latencySampleBatch)));
      return samples;
    },
    close: () => roundTrips.close(),
  };
}

/** Messages published and received over every window of a throughput row (a row whose subscriber drops measures less than it sent). */
const deliveredOf = new Map<string, { published: number; received: number }>();

/** Bursts of `throughputCount` messages until the window ends; [received, seconds] summed. */
function throughputCase(label: string, burst: () => ReturnType<typeof throughput>): WindowedCase {
  const delivered = { published: 0, received: 0 };
  deliveredOf.set(label, delivered);
  return {
    label,
    measure: async (until) => {
      let received = 0;
      let seconds = 0;
      while (performance.now() < until) {
        const result = await withTimeout(burst(), label);
        received += result.received;
        seconds += result.seconds;
        delivered.published += throughputCount;
        delivered.received += result.received;
      }
      return [received, seconds];
    },
    close: () => Promise.resolve(),
  };
}

/** A scraper process whose rounds are counted window by window. */
class CountedScraper {
  /** The fewest rounds seen in one of its windows (a window without one would measure nothing). */
  fewestInAWindow = Number.POSITIVE_INFINITY;
  private constructor(readonly process: ScraperProcess, private roundsSoFar: number) {}

  /** Starts the scraper at `httpPort` (declaring `queues` there first) and pauses it. */
  static async start(httpPort: number, queues: number): Promise<CountedScraper> {
    const scraper = await startScraperProcess(httpPort, queues);
    return new CountedScraper(scraper, await scraper.pause());
  }

  resume(): void { this.process.resume(); }

  /** Pauses it; the rounds it made since it was last paused. */
  async pause(): Promise<number> {
    const rounds = await this.process.pause();
    const made = rounds - this.roundsSoFar;
    this.roundsSoFar = rounds;
    return made;
  }
}

/** One block: each kind's windows, and the rounds each scraper made in its windows. */
interface Block { readonly windows: Record<WindowKind, number[][]>; readonly rounds: Record<LoadedKind, number> }

/**
 * Blocks of windows in windowOrder, after one unmeasured window; `loads` says which scraper runs in a kind's window.
 * Each window's span is added to `spans`.
 */
async function alternate(measured: WindowedCase, loads: Readonly<Record<LoadedKind, CountedScraper>>, spans: WindowSpan[] = []): Promise<Block[]> {
  const blocks: Block[] = [];
  await measured.measure(performance.now() + windowMs); // warm-up
  for (let b = 0; b < blocksPerCase; b++) {
    const block: Block = { windows: { plain: [], decoy: [], scraped: [] }, rounds: { decoy: 0, scraped: 0 } };
    for (const kind of windowOrder) {
      const startMs = monotonicMs();
      if (kind === 'plain') {
        block.windows.plain.push(await measured.measure(performance.now() + windowMs));
        spans.push({ kind, startMs, endMs: monotonicMs() });
        continue;
      }
      const load = loads[kind];
      load.resume();
      block.windows[kind].push(await measured.measure(performance.now() + windowMs));
      spans.push({ kind, startMs, endMs: monotonicMs() });
      const rounds = await load.pause();
      load.fewestInAWindow = Math.min(load.fewestInAWindow, rounds);
      block.rounds[kind] += rounds;
    }
    blocks.push(block);
  }
  return blocks;
}

/**
 * Round trips of a kind's windows slower than their block's plain p99, beyond the 1% a plain window has, per round of
 * its scraper: how many round trips one round delays past the p99 (a sequential client is delayed once per event-loop
 * turn it lands behind, whatever the turn's length). The median over blocks.
 */
function excessSlowPerRound(blocks: readonly Block[], kind: LoadedKind): number {
  return median(blocks.map((block) => {
    const threshold = summarize(block.windows.plain.flat()).p99;
    const loaded = block.windows[kind].flat();
    const slow = loaded.filter((sample) => sample > threshold).length;
    return (slow - 0.01 * loaded.length) / block.rounds[kind];
  }));
}

/**
 * What the broker spends per scrape round, measured alone (no MQTT load, after the cases): its event loop and other
 * threads over a few seconds of scraping, less what the same broker spends over as long without the scraper (an idle
 * broker's timers: ~8.6 ms of event loop a second here, with or without the 1,000 queues), per round.
 */
async function brokerCostPerRound(pid: number, scraper: CountedScraper): Promise<string> {
  const measuredMs = 5_000;
  const idleBefore = threadTimes(pid);
  await new Promise((resolve) => setTimeout(resolve, measuredMs));
  const before = threadTimes(pid);
  scraper.resume();
  await new Promise((resolve) => setTimeout(resolve, measuredMs));
  const rounds = await scraper.pause();
  const after = threadTimes(pid);
  if (idleBefore === undefined || before === undefined || after === undefined || rounds === 0) return 'broker CPU per scrape round: not measured (no /proc or no round)';
  const ms = (ns: number, per: number): string => fmt(ns / per / 1e6, 1);
  const idleLoop = before.loopRunNs - idleBefore.loopRunNs;
  const idleOther = before.otherRunNs - idleBefore.otherRunNs;
  return `broker CPU per scrape round (measured alone, ${rounds} rounds in ${measuredMs / 1000} s, less the same broker idle as long): `
    + `event loop ${ms(after.loopRunNs - before.loopRunNs - idleLoop, rounds)} ms, other threads ${ms(after.otherRunNs - before.otherRunNs - idleOther, rounds)} ms `
    + `(idle: event loop ${ms(idleLoop, measuredMs / 1000)} ms, other threads ${ms(idleOther, measuredMs / 1000)} ms a second)`;
}

const verdict = (ratio: number): string => (Math.abs(ratio - 1) <= target ? 'PASS' : 'MISS');

/**
 * Who watches the bench run from inside (tail-trace-scrape.ts, a scheduler trace of the durable row): told the
 * processes' ids as they start, and when the durable row's windows begin and end (with their spans).
 */
export interface ScrapeObserver {
  /** The broker is up; the scraper has not declared its queues yet. */
  brokerStarted(pid: number): void;
  /** The scraper has declared its queues through the broker's API; both scrapers and the decoy are up, paused. */
  loadsReady(pids: { readonly scraper: number; readonly decoy: number; readonly decoyScraper: number }): void;
  /** Just before the durable row's unmeasured window, and after its last measured one. */
  durableStarting(): Promise<void>;
  durableDone(spans: readonly WindowSpan[]): Promise<void>;
}

export async function benchScrape(observer?: ScrapeObserver): Promise<void> {
  const cases = selectedCases();
  const data = tempDir('cairn-bench-scrape-');
  const rows: string[][] = [[
    'row', 'plain', 'decoy', 'scraped',
    'scraped/plain', `±${target * 100}%`, 'min-max',
    'machine: decoy/plain', 'min-max',
    'broker: scraped/decoy', `broker's share ±${target * 100}%`, 'min-max',
  ]];
  const scrapeNotes: string[] = [];
  const slowNotes: string[] = [];
  let costNote = '';
  const durableSpans: WindowSpan[] = [];
  // Beside the data directory, not in it: the broker owns what is there.
  const stageDir = tempDir('cairn-bench-scrape-stages-');
  const tracesFile = join(stageDir.dir, 'stage-traces.json');
  const stageEnv: Record<string, string> = stagesWanted ? { [stageTimingVariable]: join(stageDir.dir, 'stage-timing.json'), [stageTracesVariable]: tracesFile } : {};
  let stageRows: string[][] | undefined;
  try {
    const broker = await startCairnProcess(data.dir, [], stageEnv);
    observer?.brokerStarted(broker.child.pid ?? -1);
    const scraper = await CountedScraper.start(broker.httpPort, scrapedQueues);
    // Captured once the queues are declared: the decoy serves what the broker answered then.
    const decoy = await startDecoyProcess(broker.httpPort);
    const decoyScraper = await CountedScraper.start(decoy.port, 0);
    observer?.loadsReady({ scraper: scraper.process.pid ?? -1, decoy: decoy.pid ?? -1, decoyScraper: decoyScraper.process.pid ?? -1 });
    const loads = { decoy: decoyScraper, scraped: scraper };
    try {
      const port = broker.mqttPort;
      const row = (label: string, values: Readonly<Record<WindowKind, string>>, ratios: readonly ShareRatios[]): void => {
        const { issue, machine, broker: brokers } = summarizeShares(ratios);
        const range = (summary: { min: number; max: number }): string => `${fmt(summary.min, 3)}-${fmt(summary.max, 3)}`;
        rows.push([
          label, values.plain, values.decoy, values.scraped,
          fmt(issue.median, 3), verdict(issue.median), range(issue),
          fmt(machine.median, 3), range(machine),
          fmt(brokers.median, 3), verdict(brokers.median), range(brokers),
        ]);
      };
      const perKind = <T>(of: (kind: WindowKind) => T): Record<WindowKind, T> => ({ plain: of('plain'), decoy: of('decoy'), scraped: of('scraped') });

      for (const [label, open] of cases === 'throughput' ? [] : [
        ...(cases === 'durable' ? [] : [['QoS 1 seq publish, no subscriber', () => openSequentialQos1(port, 'bench/nosub')]] as const),
        ['QoS 1 seq publish, offline persistent sub', () => openOfflineSubscriberQos1(port, 'bench/offline')],
      ] as const) {
        const measured = latencyCase(label, await open());
        const durable = label.includes('offline');
        try {
          if (durable) await observer?.durableStarting();
          const blocks = await alternate(measured, loads, durable ? durableSpans : []);
          if (durable) await observer?.durableDone(durableSpans);
          const all = (kind: WindowKind): number[] => blocks.flatMap((block) => block.windows[kind].flat());
          const pooled = perKind((kind) => summarize(all(kind)));
          for (const quantile of ['p50', 'p99'] as const) {
            const ratios = blocks.map((block) => shareRatios((kind) => summarize(block.windows[kind].flat())[quantile]));
            row(`${label} ${quantile} (ms)`, perKind((kind) => fmt(pooled[kind][quantile], 3)), ratios);
          }
          const perSecond = (kind: WindowKind): string => Math.round(all(kind).length / (blocks.length * windowOrder.filter((k) => k === kind).length * windowMs / 1000)).toLocaleString('en-US');
          slowNotes.push(`${label}: ${fmt(excessSlowPerRound(blocks, 'scraped'), 1)} round trips per scrape round slower than the plain p99 beyond its 1% `
            + `(decoy: ${fmt(excessSlowPerRound(blocks, 'decoy'), 1)} per decoy round; median of blocks; `
            + `${perSecond('plain')} round trips a second plain, ${perSecond('decoy')} decoy, ${perSecond('scraped')} scraped)`);
        } finally {
          await measured.close();
        }
      }

      for (const [label, burst] of cases === 'latency' || cases === 'durable' ? [] : [
        ['QoS 0 pub->sub throughput (msg/s)', () => throughput(port, 'bench/tput0', 0)],
        [`QoS 1 pub->sub throughput, <= ${qos1WindowMessages} in flight end to end (msg/s)`, () => throughput(port, 'bench/tput1', 1, 0, 4, qos1WindowMessages)],
        [`QoS 1 pub->$share (${sharedMembers} members) throughput, <= ${qos1WindowMessages} in flight end to end (msg/s)`, () => throughput(port, 'bench/shared1', 1, sharedMembers, 4, qos1WindowMessages)],
      ] as const) {
        const blocks = await alternate(throughputCase(label, burst), loads);
        const pooled = (windows: number[][]): number => windows.reduce((sum, [received]) => sum + received!, 0) / windows.reduce((sum, [, seconds]) => sum + seconds!, 0);
        const all = (kind: WindowKind): number[][] => blocks.flatMap((block) => block.windows[kind]);
        // A rate's cost is its inverse (seconds per message), so that every ratio > 1 means slower under the load, as for latency.
        row(label, perKind((kind) => Math.round(pooled(all(kind))).toLocaleString('en-US')), blocks.map((block) => shareRatios((kind) => 1 / pooled(block.windows[kind]))));
      }
      // At the end, on a warm broker: measured first, the 5 rounds included compiling the request paths.
      if (broker.child.pid !== undefined) costNote = await brokerCostPerRound(broker.child.pid, scraper);
    } finally {
      const requests = '(/metrics, /metrics/per-object, /api/queues, /api/overview, console\'s queue list; one round a second)';
      const totals = await scraper.process.stop();
      scrapeNotes.push(`scraper (its own process, lowest CPU priority): ${totals.rounds} rounds over ${scrapedQueues} queues (at least ${scraper.fewestInAWindow} in every scraped window) ${requests}, slowest round ${fmt(totals.slowestRoundMs, 1)} ms, ${totals.failures} failed requests`);
      const decoyTotals = await decoyScraper.process.stop();
      scrapeNotes.push(`decoy scraper (its own process, lowest CPU priority, the same requests to the decoy's captured answers): ${decoyTotals.rounds} rounds (at least ${decoyScraper.fewestInAWindow} in every decoy window), slowest round ${fmt(decoyTotals.slowestRoundMs, 1)} ms, ${decoyTotals.failures} failed requests`);
      decoy.stop();
      await broker.stop();
      if (stagesWanted) stageRows = stageRowsByWindowKind(JSON.parse(readFileSync(tracesFile, 'utf8')) as StageTraces, durableSpans);
    }
  } finally {
    data.remove();
    stageDir.remove();
  }
  console.log(`MQTT rows with and without a monitoring load: ${blocksPerCase} blocks per row of six ${windowMs / 1000} s windows (${windowOrder.join(', ')}) after one unmeasured window; throughput in bursts of ${throughputCount} x 100 B.`);
  printTable(rows);
  for (const note of slowNotes) console.log(note);
  console.log(costNote);
  for (const [label, { published, received }] of deliveredOf) console.log(`${label}: received ${received.toLocaleString('en-US')} of ${published.toLocaleString('en-US')} published`);
  for (const note of scrapeNotes) console.log(note);
  if (stageRows !== undefined) {
    console.log('The durable row stage-timed (src/stage-timing.ts; the broker ran with stage timing on, so these explain the rows, not judge them), each round trip in the kind of the window its read fell in:');
    printTable(stageRows);
  }
  console.log('Each block gives three ratios (latency: the loaded kind\'s / the lighter kind\'s; throughput: the lighter kind\'s / the loaded kind\'s), so > 1 always means the load slowed Cairn down: '
    + 'scraped/plain, the issue\'s question; decoy/plain, the machine\'s part (the scraper\'s own CPU and loopback copies, the broker answering nothing); scraped/decoy, the broker\'s part. '
    + 'A verdict passes when the median of its blocks\' ratios is within the target. plain, decoy and scraped pool every window of their kind.');
}
