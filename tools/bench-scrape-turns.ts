/**
 * The longest single hold of the broker's event loop while one scraped
 * endpoint is answered (`node dist/tools/bench.js scrape-turns`): a whole Cairn
 * in this process (in-process-cairn.ts) with the scrape bench's 1,000 queues,
 * its HTTP client on a worker thread (so the client's own parsing is not on
 * the broker's loop), and a chain of setImmediate callbacks on the broker's
 * loop whose largest gap while a request is in flight is the longest turn the
 * answer took. /api/whoami, a trivial answer, shows the floor of one HTTP
 * request. A turn of ~12 ms once a second puts the slowest 1% of MQTT round
 * trips inside it (issue 15), so what matters is this figure, not only the
 * CPU per request (bench-scrape-cost.ts).
 *
 * The minimum over the requests is the least disturbed by other processes
 * (a loaded machine preempts the loop at random); the median and maximum are
 * printed beside it. CAIRN_BENCH_SCRAPE_TURNS_REQUESTS sets the requests per
 * endpoint (default 40).
 */
import { request, Agent } from 'node:http';
import { loadavg } from 'node:os';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { fmt, printTable } from './bench-mqtt.js';
import { declareQueues, scrapedPaths, scrapedRequests } from './bench-scraper.js';
import { percentile } from './bench-side-by-side.js';
import { InProcessCairn } from './in-process-cairn.js';

const queues = 1_000;
const requests = Number(process.env['CAIRN_BENCH_SCRAPE_TURNS_REQUESTS'] ?? 40);
const warmUpRequests = 20;
/** Between requests: the next one starts on a quiet loop. */
const pauseMs = 5;

/** The worker: GETs each path it is sent, with the scraper's headers for it, and answers with the bytes received (encoded, as sent). */
function serveRequests(base: string): void {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  parentPort!.on('message', (path: string) => {
    const headers = scrapedRequests.find((scraped) => scraped.path === path)?.headers ?? {};
    request(`${base}${path}`, { agent, headers }, (response) => {
      let bytes = 0;
      response.on('data', (chunk: Buffer) => { bytes += chunk.length; });
      response.on('end', () => parentPort!.postMessage(bytes));
    }).end();
  });
}

/**
 * A turn longer than this did work beyond the watch's own tick (an idle turn of this loop takes a few microseconds):
 * it is one interruption of an MQTT client's round trip, whatever its length, since a sequential client has one
 * round trip outstanding and a turn it lands behind delays it once.
 */
const busyTurnMs = 0.02;

interface TurnsSeen {
  /** The longest gap between consecutive turns (ms). */
  readonly longest: number;
  /** Turns longer than busyTurnMs, and their total (ms). */
  readonly busy: number;
  readonly busyMs: number;
}

/** The gaps between consecutive turns of this thread's event loop from start() to stop(). */
function turnWatch(): { start(): void; stop(): Promise<TurnsSeen> } {
  let running = false;
  let last = 0;
  let longest = 0;
  let busy = 0;
  let busyMs = 0;
  const tick = (): void => {
    const now = performance.now();
    const gap = now - last;
    longest = Math.max(longest, gap);
    if (gap > busyTurnMs) {
      busy++;
      busyMs += gap;
    }
    last = now;
    if (running) setImmediate(tick);
  };
  return {
    start: () => {
      running = true;
      last = performance.now();
      longest = 0;
      busy = 0;
      busyMs = 0;
      setImmediate(tick);
    },
    stop: async () => {
      running = false;
      await new Promise((resolve) => setImmediate(resolve));
      return { longest, busy, busyMs };
    },
  };
}

export async function benchScrapeTurns(): Promise<void> {
  const cairn = await InProcessCairn.start({ logLevel: 'warn', flags: ['--http-port', '0'] });
  const rows = [['endpoint', 'bytes', 'longest turn ms: min', 'median', 'max', `turns > ${busyTurnMs} ms: median`, 'their ms: median']];
  const round = { busy: 0, busyMs: 0 };
  try {
    const base = `http://127.0.0.1:${cairn.cairn.httpPort!}`;
    await declareQueues(base, queues);
    const worker = new Worker(new URL(import.meta.url), { workerData: { base } });
    try {
      const get = (path: string): Promise<number> => new Promise((resolve) => { worker.once('message', resolve); worker.postMessage(path); });
      const paths = ['/api/whoami', ...scrapedPaths];
      for (const path of paths) for (let i = 0; i < warmUpRequests; i++) await get(path);
      const watch = turnWatch();
      for (const path of paths) {
        const seen: TurnsSeen[] = [];
        let bytes = 0;
        for (let i = 0; i < requests; i++) {
          await new Promise((resolve) => setTimeout(resolve, pauseMs));
          watch.start();
          bytes = await get(path);
          seen.push(await watch.stop());
        }
        const sorted = (values: number[]): number[] => values.sort((a, b) => a - b);
        const longest = sorted(seen.map((s) => s.longest));
        const busy = percentile(sorted(seen.map((s) => s.busy)), 50);
        const busyMs = percentile(sorted(seen.map((s) => s.busyMs)), 50);
        if (path !== '/api/whoami') {
          round.busy += busy;
          round.busyMs += busyMs;
        }
        rows.push([path, bytes.toLocaleString('en-US'), fmt(longest[0]!, 3), fmt(percentile(longest, 50), 3), fmt(longest.at(-1)!, 3), fmt(busy, 0), fmt(busyMs, 2)]);
      }
    } finally {
      await worker.terminate();
    }
  } finally {
    await cairn.stop();
  }
  console.log(`The longest turn of the broker's event loop while one request is answered, over ${requests} requests per endpoint (${queues} queues; broker and client in this process, the client on a worker thread); load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}.`);
  printTable(rows);
  console.log(`One scrape round (the sum of the scraped paths' medians): ${fmt(round.busy, 0)} turns longer than ${busyTurnMs} ms, ${fmt(round.busyMs, 2)} ms in them.`);
}

if (!isMainThread) serveRequests((workerData as { base: string }).base);
