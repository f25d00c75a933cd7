/**
 * A monitoring load for the broker benchmarks (CAIRN_BENCH_SCRAPE=1): what a
 * Prometheus server, an operator's script and the web console add while the
 * broker works. It declares `queues` queues through the management API, then
 * every second GETs /metrics, /metrics/per-object and /api/queues (the scraper
 * and the script) and /api/overview plus /api/queues?columns=… (the console on
 * its queues tab), one request at a time, and counts what it did.
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
/** What one round GETs, in order. */
export const scrapedPaths: readonly string[] = ['/metrics', '/metrics/per-object', '/api/queues', '/api/overview', `/api/queues?columns=${consoleColumns}`];

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
    for (const path of scrapedPaths) {
      const response = await fetch(`${base}${path}`).catch(() => undefined);
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
