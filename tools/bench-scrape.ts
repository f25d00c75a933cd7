/**
 * Does watching the broker slow it down? The MQTT rows of bench-mqtt.ts
 * (sequential QoS 1 with no subscriber and with an offline persistent one;
 * QoS 0, QoS 1 and shared-subscription throughput: the QoS 1 publisher keeps
 * at most qos1WindowMessages in flight end to end, so nothing is dropped at
 * the subscriber's bound) on one Cairn, measured in
 * windows with and without a monitoring load (bench-scraper.ts, its own
 * process: 1,000 queues declared, then every second /metrics,
 * /metrics/per-object, /api/queues, /api/overview and the console's queue
 * list). The two kinds of window alternate in blocks of four (ABBA: a drift of
 * the machine weighs on both alike); each block gives one ratio (scraped
 * against plain) and a row's verdict is the median of its blocks' ratios,
 * printed with their range: single windows of the same kind differed by
 * 25-40% on this shared two-core machine, so pooling a few long windows could
 * not resolve 5%, while neighbouring windows see the same minute.
 *
 * The scraper runs at the lowest CPU priority: it stands in for a Prometheus
 * on another machine, and on two cores its own parsing of ~0.7 MB a second
 * would otherwise be measured as the broker's cost. What the broker spends
 * answering it is printed beside the rows (its CPU time per scrape round).
 */
import { openOfflineSubscriberQos1, openSequentialQos1, fmt, printTable, sharedMembers, tempDir, throughput, throughputCount } from './bench-mqtt.js';
import { startDecoyProcess, startScraperProcess, type ScraperProcess } from './bench-scraper-process.js';
import { summarize, withTimeout, type RoundTripCase } from './bench-side-by-side.js';
import { startCairnProcess } from './cairn-process.js';
import { threadTimes } from './bench-thread-times.js';

const scrapedQueues = 1_000;
const windowMs = Number(process.env['CAIRN_BENCH_SCRAPE_WINDOW_MS'] ?? 1_500);
/** ABBA blocks per case: each gives one ratio. */
const blocksPerCase = Number(process.env['CAIRN_BENCH_SCRAPE_BLOCKS'] ?? 8);
const latencySampleBatch = 100;
const target = 0.05;
/**
 * CAIRN_BENCH_SCRAPE_DECOY=1: the scraper GETs the same bytes from a decoy process (bench-scrape-decoy.ts) instead of
 * the broker, which then answers nothing: the ratios are the machine's part of the overhead (decomposition only).
 */
const decoy = process.env['CAIRN_BENCH_SCRAPE_DECOY'] === '1';
/** CAIRN_BENCH_SCRAPE_CASES=latency or throughput runs only those rows (decomposition; the target is all of them). */
const cases = process.env['CAIRN_BENCH_SCRAPE_CASES'] ?? 'all';
/**
 * The QoS 1 pub->sub row's publisher keeps at most this many messages published and not yet received: a clean
 * session holds at most 4,096 queued messages and drops the oldest past that, and a row whose windows dropped
 * (1 to 25% of them, varying) measured the drops, not the broker (its block ratios ranged 0.56-1.25).
 */
const qos1WindowMessages = 1_024;

type Kind = 'plain' | 'scraped';
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

/** One ABBA block: its two plain and two scraped windows. */
interface Block { readonly plain: number[][]; readonly scraped: number[][]; scrapedRounds: number }

/** Scrape rounds so far, as the scraper last reported them when paused. */
let scrapeRoundsSoFar = 0;
/** The fewest scrape rounds seen in one scraped window (a window without one would measure nothing). */
let fewestRoundsInAWindow = Number.POSITIVE_INFINITY;

/** Blocks of plain, scraped, scraped, plain windows, after one unmeasured window. */
async function alternate(measured: WindowedCase, scraper: ScraperProcess): Promise<Block[]> {
  const blocks: Block[] = [];
  await measured.measure(performance.now() + windowMs); // warm-up
  for (let b = 0; b < blocksPerCase; b++) {
    const block: Block = { plain: [], scraped: [], scrapedRounds: 0 };
    for (const kind of ['plain', 'scraped', 'scraped', 'plain'] as const satisfies readonly Kind[]) {
      if (kind === 'scraped') scraper.resume();
      block[kind].push(await measured.measure(performance.now() + windowMs));
      if (kind === 'scraped') {
        const rounds = await scraper.pause();
        fewestRoundsInAWindow = Math.min(fewestRoundsInAWindow, rounds - scrapeRoundsSoFar);
        block.scrapedRounds += rounds - scrapeRoundsSoFar;
        scrapeRoundsSoFar = rounds;
      }
    }
    blocks.push(block);
  }
  return blocks;
}

/**
 * Round trips of the scraped windows slower than their block's plain p99, beyond the 1% a plain window has, per scrape
 * round: how many round trips one round delays past the p99 (a sequential client is delayed once per event-loop turn
 * it lands behind, whatever the turn's length). The median over blocks.
 */
function excessSlowPerRound(blocks: readonly Block[]): number {
  return median(blocks.map((block) => {
    const threshold = summarize(block.plain.flat()).p99;
    const scraped = block.scraped.flat();
    const slow = scraped.filter((sample) => sample > threshold).length;
    return (slow - 0.01 * scraped.length) / block.scrapedRounds;
  }));
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * What the broker spends per scrape round, measured alone (no MQTT load, after the cases): its event loop and other
 * threads over a few seconds of scraping, less what the same broker spends over as long without the scraper (an idle
 * broker's timers: ~8.6 ms of event loop a second here, with or without the 1,000 queues), per round.
 */
async function brokerCostPerRound(pid: number, scraper: ScraperProcess): Promise<string> {
  const measuredMs = 5_000;
  const idleBefore = threadTimes(pid);
  await new Promise((resolve) => setTimeout(resolve, measuredMs));
  const before = threadTimes(pid);
  scraper.resume();
  await new Promise((resolve) => setTimeout(resolve, measuredMs));
  const rounds = (await scraper.pause()) - scrapeRoundsSoFar;
  scrapeRoundsSoFar += rounds;
  const after = threadTimes(pid);
  if (idleBefore === undefined || before === undefined || after === undefined || rounds === 0) return 'broker CPU per scrape round: not measured (no /proc or no round)';
  const ms = (ns: number, per: number): string => fmt(ns / per / 1e6, 1);
  const idleLoop = before.loopRunNs - idleBefore.loopRunNs;
  const idleOther = before.otherRunNs - idleBefore.otherRunNs;
  return `broker CPU per scrape round (measured alone, ${rounds} rounds in ${measuredMs / 1000} s, less the same broker idle as long): `
    + `event loop ${ms(after.loopRunNs - before.loopRunNs - idleLoop, rounds)} ms, other threads ${ms(after.otherRunNs - before.otherRunNs - idleOther, rounds)} ms `
    + `(idle: event loop ${ms(idleLoop, measuredMs / 1000)} ms, other threads ${ms(idleOther, measuredMs / 1000)} ms a second)`;
}

export async function benchScrape(): Promise<void> {
  const data = tempDir('cairn-bench-scrape-');
  const rows: string[][] = [['row', 'plain', 'scraped', 'median block ratio', `target ±${target * 100}%`, 'block ratios (min-max)']];
  let scrapeNote = '';
  const slowNotes: string[] = [];
  let costNote = '';
  try {
    const broker = await startCairnProcess(data.dir);
    let scraper = await startScraperProcess(broker.httpPort, scrapedQueues);
    scrapeRoundsSoFar = await scraper.pause();
    const decoyProcess = decoy ? await startDecoyProcess(broker.httpPort) : undefined;
    if (decoyProcess !== undefined) {
      await scraper.stop();
      scraper = await startScraperProcess(decoyProcess.port, 0);
      scrapeRoundsSoFar = await scraper.pause();
    }
    try {
      const port = broker.mqttPort;
      const row = (label: string, plain: string, scraped: string, ratios: readonly number[]): void => {
        const ratio = median(ratios);
        rows.push([label, plain, scraped, fmt(ratio, 3), Math.abs(ratio - 1) <= target ? 'PASS' : 'MISS', `${fmt(Math.min(...ratios), 3)}-${fmt(Math.max(...ratios), 3)}`]);
      };

      for (const [label, open] of cases === 'throughput' ? [] : [
        ['QoS 1 seq publish, no subscriber', () => openSequentialQos1(port, 'bench/nosub')],
        ['QoS 1 seq publish, offline persistent sub', () => openOfflineSubscriberQos1(port, 'bench/offline')],
      ] as const) {
        const measured = latencyCase(label, await open());
        try {
          const blocks = await alternate(measured, scraper);
          const all = (kind: Kind): number[] => blocks.flatMap((block) => block[kind].flat());
          const plain = summarize(all('plain'));
          const scraped = summarize(all('scraped'));
          for (const quantile of ['p50', 'p99'] as const) {
            const ratios = blocks.map((block) => summarize(block.scraped.flat())[quantile] / summarize(block.plain.flat())[quantile]);
            row(`${label} ${quantile} (ms)`, fmt(plain[quantile], 3), fmt(scraped[quantile], 3), ratios);
          }
          const perSecond = (kind: Kind): number => all(kind).length / (blocks.length * 2 * windowMs / 1000);
          slowNotes.push(`${label}: ${fmt(excessSlowPerRound(blocks), 1)} round trips per scrape round slower than the plain p99 beyond its 1% (median of blocks; ${Math.round(perSecond('plain')).toLocaleString('en-US')} round trips a second plain, ${Math.round(perSecond('scraped')).toLocaleString('en-US')} scraped)`);
        } finally {
          await measured.close();
        }
      }

      for (const [label, burst] of cases === 'latency' ? [] : [
        ['QoS 0 pub->sub throughput (msg/s)', () => throughput(port, 'bench/tput0', 0)],
        [`QoS 1 pub->sub throughput, <= ${qos1WindowMessages} in flight end to end (msg/s)`, () => throughput(port, 'bench/tput1', 1, 0, 4, qos1WindowMessages)],
        [`QoS 1 pub->$share (${sharedMembers} members) throughput (msg/s)`, () => throughput(port, 'bench/shared1', 1, sharedMembers)],
      ] as const) {
        const blocks = await alternate(throughputCase(label, burst), scraper);
        const pooled = (windows: number[][]): number => windows.reduce((sum, [received]) => sum + received!, 0) / windows.reduce((sum, [, seconds]) => sum + seconds!, 0);
        const all = (kind: Kind): number[][] => blocks.flatMap((block) => block[kind]);
        const rate = (windows: number[][]): string => Math.round(pooled(windows)).toLocaleString('en-US');
        // A throughput ratio is turned round (plain / scraped) so that > 1 means slower under the load, as for latency.
        row(label, rate(all('plain')), rate(all('scraped')), blocks.map((block) => pooled(block.plain) / pooled(block.scraped)));
      }
      // At the end, on a warm broker: measured first, the 5 rounds included compiling the request paths.
      if (broker.child.pid !== undefined) costNote = await brokerCostPerRound(broker.child.pid, scraper);
    } finally {
      const totals = await scraper.stop();
      scrapeNote = `scraper (its own process, lowest CPU priority): ${totals.rounds} rounds over ${scrapedQueues} queues (at least ${fewestRoundsInAWindow} in every scraped window) (/metrics, /metrics/per-object, /api/queues, /api/overview, console's queue list; one round a second), slowest round ${fmt(totals.slowestRoundMs, 1)} ms, ${totals.failures} failed requests`;
      decoyProcess?.stop();
      await broker.stop();
    }
  } finally {
    data.remove();
  }
  if (decoy) console.log('DECOY: the scraper GETs the same bytes from a decoy process, not from the broker (the machine\'s part of the overhead; not the target).');
  console.log(`MQTT rows with and without a monitoring load: ${blocksPerCase} blocks per row of four ${windowMs / 1000} s windows (plain, scraped, scraped, plain) after one unmeasured window; throughput in bursts of ${throughputCount} x 100 B.`);
  printTable(rows);
  for (const note of slowNotes) console.log(note);
  console.log(costNote);
  for (const [label, { published, received }] of deliveredOf) console.log(`${label}: received ${received.toLocaleString('en-US')} of ${published.toLocaleString('en-US')} published`);
  console.log(scrapeNote);
  console.log('Each block gives one ratio, scraped against plain (latency: scraped / plain; throughput: plain / scraped), so > 1 always means the load slowed Cairn down; a row passes when the median of its blocks\' ratios is within the target. plain and scraped pool every window of their kind.');
}
