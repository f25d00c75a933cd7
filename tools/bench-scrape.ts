/**
 * Does watching the broker slow it down? The MQTT rows of bench-mqtt.ts
 * (sequential QoS 1 with no subscriber and with an offline persistent one;
 * QoS 0, QoS 1 and shared-subscription throughput) on one Cairn, measured in
 * windows of a few seconds with and without a monitoring load
 * (bench-scraper.ts, its own process: 1,000 queues declared, then every second
 * /metrics, /metrics/per-object, /api/queues, /api/overview and the console's
 * queue list), the two kinds of window alternating inside each case (ABBA, so
 * a drift of the machine weighs on both alike). Whole runs with and without
 * the load differed from each other by up to 30% on this shared machine; the
 * windows see the same minutes. Prints each row with and without the load,
 * their ratio against issue 15's target (within 5%), and the spread between
 * windows of the same kind (the noise the ratio has to be read against).
 */
import { openOfflineSubscriberQos1, openSequentialQos1, fmt, printTable, sharedMembers, tempDir, throughput, throughputCount } from './bench-mqtt.js';
import { startScraperProcess, type ScraperProcess } from './bench-scraper-process.js';
import { summarize, withTimeout, type RoundTripCase } from './bench-side-by-side.js';
import { startCairnProcess } from './cairn-process.js';

const scrapedQueues = 1_000;
const windowMs = Number(process.env['CAIRN_BENCH_SCRAPE_WINDOW_MS'] ?? 3_000);
/** Windows of each kind per case. */
const windowsPerKind = Number(process.env['CAIRN_BENCH_SCRAPE_WINDOWS'] ?? 6);
const latencySampleBatch = 100;
const target = 0.05;

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

/** Bursts of `throughputCount` messages until the window ends; [received, seconds] summed. */
function throughputCase(label: string, burst: () => ReturnType<typeof throughput>): WindowedCase {
  return {
    label,
    measure: async (until) => {
      let received = 0;
      let seconds = 0;
      while (performance.now() < until) {
        const result = await withTimeout(burst(), label);
        received += result.received;
        seconds += result.seconds;
      }
      return [received, seconds];
    },
    close: () => Promise.resolve(),
  };
}

interface Windows { readonly plain: number[][]; readonly scraped: number[][] }

/** Scrape rounds so far, as the scraper last reported them when paused. */
let scrapeRoundsSoFar = 0;
/** The fewest scrape rounds seen in one scraped window (a window without one would measure nothing). */
let fewestRoundsInAWindow = Number.POSITIVE_INFINITY;

/** ABBA: plain, scraped, scraped, plain, … — each window's result kept by its kind. */
async function alternate(measured: WindowedCase, scraper: ScraperProcess): Promise<Windows> {
  const windows: Windows = { plain: [], scraped: [] };
  await measured.measure(performance.now() + windowMs); // unmeasured warm-up window
  for (let i = 0; i < windowsPerKind * 2; i++) {
    const kind: Kind = i % 4 === 0 || i % 4 === 3 ? 'plain' : 'scraped';
    if (kind === 'scraped') scraper.resume();
    windows[kind].push(await measured.measure(performance.now() + windowMs));
    if (kind === 'scraped') {
      const rounds = await scraper.pause();
      fewestRoundsInAWindow = Math.min(fewestRoundsInAWindow, rounds - scrapeRoundsSoFar);
      scrapeRoundsSoFar = rounds;
    }
  }
  return windows;
}

export async function benchScrape(): Promise<void> {
  const data = tempDir('cairn-bench-scrape-');
  const rows: string[][] = [['row', 'plain', 'scraped', 'scraped/plain', `target ±${target * 100}%`, 'spread plain / scraped']];
  let scrapeNote = '';
  try {
    const broker = await startCairnProcess(data.dir);
    const scraper = await startScraperProcess(broker.httpPort, scrapedQueues);
    scrapeRoundsSoFar = await scraper.pause();
    try {
      const port = broker.mqttPort;
      const verdict = (ratio: number): string => (Math.abs(ratio - 1) <= target ? 'PASS' : 'MISS');
      const spread = (values: number[]): string => `${fmt(Math.min(...values), 3)}–${fmt(Math.max(...values), 3)}`;

      for (const [label, open] of [
        ['QoS 1 seq publish, no subscriber', () => openSequentialQos1(port, 'bench/nosub')],
        ['QoS 1 seq publish, offline persistent sub', () => openOfflineSubscriberQos1(port, 'bench/offline')],
      ] as const) {
        const measured = latencyCase(label, await open());
        try {
          const windows = await alternate(measured, scraper);
          const plain = summarize(windows.plain.flat());
          const scraped = summarize(windows.scraped.flat());
          const windowP50s = (kind: number[][]): number[] => kind.map((samples) => summarize(samples).p50);
          rows.push([`${label} p50 (ms)`, fmt(plain.p50, 3), fmt(scraped.p50, 3), fmt(scraped.p50 / plain.p50, 3), verdict(scraped.p50 / plain.p50),
            `${spread(windowP50s(windows.plain))} / ${spread(windowP50s(windows.scraped))}`]);
          rows.push([`${label} p99 (ms)`, fmt(plain.p99, 3), fmt(scraped.p99, 3), fmt(scraped.p99 / plain.p99, 3), verdict(scraped.p99 / plain.p99), '']);
        } finally {
          await measured.close();
        }
      }

      for (const [label, burst] of [
        ['QoS 0 pub->sub throughput (msg/s)', () => throughput(port, 'bench/tput0', 0)],
        ['QoS 1 pub->sub throughput (msg/s)', () => throughput(port, 'bench/tput1', 1)],
        [`QoS 1 pub->$share (${sharedMembers} members) throughput (msg/s)`, () => throughput(port, 'bench/shared1', 1, sharedMembers)],
      ] as const) {
        const windows = await alternate(throughputCase(label, burst), scraper);
        const pooled = (kind: number[][]): number => kind.reduce((sum, [received]) => sum + received!, 0) / kind.reduce((sum, [, seconds]) => sum + seconds!, 0);
        const rates = (kind: number[][]): number[] => kind.map(([received, seconds]) => received! / seconds! / 1000);
        const plain = pooled(windows.plain);
        const scraped = pooled(windows.scraped);
        rows.push([label, Math.round(plain).toLocaleString('en-US'), Math.round(scraped).toLocaleString('en-US'), fmt(scraped / plain, 3), verdict(scraped / plain),
          `${spread(rates(windows.plain))} / ${spread(rates(windows.scraped))} k`]);
      }
    } finally {
      const totals = await scraper.stop();
      scrapeNote = `scraper (its own process): ${totals.rounds} rounds over ${scrapedQueues} queues (at least ${fewestRoundsInAWindow} in every scraped window) (/metrics, /metrics/per-object, /api/queues, /api/overview, console's queue list; one round a second), slowest round ${fmt(totals.slowestRoundMs, 1)} ms, ${totals.failures} failed requests`;
      await broker.stop();
    }
  } finally {
    data.remove();
  }
  console.log(`MQTT rows with and without a monitoring load: ${windowsPerKind} windows of ${windowMs / 1000} s of each kind per row, alternating (ABBA) after one unmeasured window; throughput in bursts of ${throughputCount} x 100 B, pooled over the windows; latency rows pool every round trip of the windows.`);
  printTable(rows);
  console.log(scrapeNote);
  console.log('A latency ratio > 1 or a throughput ratio < 1 means the load slowed Cairn down. The spread is the lowest and highest window of each kind (latency: each window\'s p50 in ms; throughput: each window\'s rate in thousands of msg/s).');
}
