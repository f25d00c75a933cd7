/**
 * A monitoring load for the broker benchmarks (CAIRN_BENCH_SCRAPE=1): what a
 * Prometheus server, an operator's script and the web console add while the
 * broker works. It declares `queues` queues through the management API, then
 * every second GETs /metrics, /metrics/per-object and /api/queues (the scraper
 * and the script) and /api/overview plus /api/queues?columns=… (the console on
 * its queues tab), one request at a time, each with the headers its client
 * sends (all three ask for gzip, as Prometheus, Node's fetch and browsers do),
 * and counts what it did.
 *
 * It runs as its own process (`node dist/tools/bench-scraper.js HTTP_PORT
 * [QUEUES]`, started by bench-scraper-process.ts), so that it does not compete
 * with the measured clients for the bench process's event loop: like a real
 * Prometheus, it loads only the broker. It prints one JSON line when the
 * queues are declared ({"ready":true}) and one when SIGTERM stops it (its
 * ScraperTotals). A line `pause` on its stdin stops it after the round in
 * progress, which it confirms with a line {"paused":ROUNDS_SO_FAR}, and
 * `resume` starts a round at once: the scrape bench alternates windows with
 * and without this load inside one run (bench-scrape.ts).
 */
import { createInterface } from 'node:readline';

export interface ScraperTotals {
  readonly rounds: number;
  /** The slowest round (ms). */
  readonly slowestRoundMs: number;
  readonly failures: number;
}

const roundIntervalMs = 1_000;
const consoleColumns = 'name,durable,auto_delete,exclusive,messages_ready,messages_unacknowledged,consumers';
/** Prometheus 2's scrape request headers (scrape/scrape.go): it asks for gzip. */
const prometheusHeaders = {
  Accept: 'application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2',
  'Accept-Encoding': 'gzip',
  'User-Agent': 'Prometheus/2.45.0',
  'X-Prometheus-Scrape-Timeout-Seconds': '10',
};
/** An operator's script polling the queue list: what Node's fetch (and Python's requests) send. */
const scriptHeaders = { 'Accept-Encoding': 'gzip, deflate' };
/** The console in Chromium. */
const browserHeaders = { Accept: 'application/json', 'Accept-Encoding': 'gzip, deflate, br, zstd' };
/** What one round GETs, in order, each with the request headers of the client it stands for. */
export const scrapedRequests: ReadonlyArray<{ readonly path: string; readonly headers: Readonly<Record<string, string>> }> = [
  { path: '/metrics', headers: prometheusHeaders },
  { path: '/metrics/per-object', headers: prometheusHeaders },
  { path: '/api/queues', headers: scriptHeaders },
  { path: '/api/overview', headers: browserHeaders },
  { path: `/api/queues?columns=${consoleColumns}`, headers: browserHeaders },
];
export const scrapedPaths: readonly string[] = scrapedRequests.map((request) => request.path);

export async function declareQueues(base: string, queues: number): Promise<void> {
  for (let i = 0; i < queues; i++) {
    const response = await fetch(`${base}/api/queues/%2F/bench-scraped-${i}`, { method: 'PUT', body: '{"durable":false}', headers: { 'content-type': 'application/json' } });
    if (!response.ok) throw new Error(`declaring queue ${i} through the API failed: ${response.status} ${await response.text()}`);
  }
}

/** Rounds of GETs, one a second, until `stopped()`; none between `pause` and `resume` on stdin. */
async function scrape(base: string, stopped: () => boolean): Promise<ScraperTotals> {
  let rounds = 0;
  let failures = 0;
  let slowestRoundMs = 0;
  let paused = false;
  let wake: (() => void) | undefined;
  process.once('SIGTERM', () => wake?.());
  const commands = createInterface({ input: process.stdin });
  commands.on('line', (command) => {
    paused = command.trim() === 'pause';
    if (!paused) wake?.();
  });
  while (!stopped()) {
    if (paused) {
      process.stdout.write(`${JSON.stringify({ paused: rounds })}\n`);
      while (paused && !stopped()) await new Promise<void>((resolve) => { wake = resolve; });
      continue;
    }
    const started = performance.now();
    for (const { path, headers } of scrapedRequests) {
      const response = await fetch(`${base}${path}`, { headers }).catch(() => undefined);
      if (!response?.ok) failures++;
      await response?.arrayBuffer();
    }
    const took = performance.now() - started;
    slowestRoundMs = Math.max(slowestRoundMs, took);
    rounds++;
    await new Promise<void>((resolve) => {
      wake = resolve;
      setTimeout(resolve, Math.max(0, roundIntervalMs - took));
    });
  }
  commands.close();
  return { rounds, slowestRoundMs, failures };
}

async function main(argv: readonly string[]): Promise<void> {
  const [portText, queuesText = '1000'] = argv;
  const port = Number(portText);
  const queues = Number(queuesText);
  if (!Number.isInteger(port) || port < 1 || port > 65_535 || !Number.isInteger(queues) || queues < 0) {
    throw new Error(`usage: node dist/tools/bench-scraper.js HTTP_PORT [QUEUES], got ${argv.join(' ')}`);
  }
  let stopping = false;
  process.once('SIGTERM', () => { stopping = true; });
  const base = `http://127.0.0.1:${port}`;
  await declareQueues(base, queues);
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  const totals = await scrape(base, () => stopping);
  process.stdout.write(`${JSON.stringify(totals)}\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`bench-scraper: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
