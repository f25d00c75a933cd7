/**
 * A monitoring load for the broker benchmarks (CAIRN_BENCH_SCRAPE=1): what a
 * Prometheus server, an operator's script and the web console add while the
 * broker works. It declares `queues` queues through the management API, then
 * every second GETs /metrics, /metrics/per-object and /api/queues (the scraper
 * and the script) and /api/overview plus /api/queues?columns=… (the console on
 * its queues tab), one request at a time, and counts what it did.
 */
export interface ScraperHandle {
  /** Stops the loop; resolves with the rounds done and the slowest round (ms). */
  stop(): Promise<{ rounds: number; slowestRoundMs: number; failures: number }>;
}

const roundIntervalMs = 1_000;
const consoleColumns = 'name,durable,auto_delete,exclusive,messages_ready,messages_unacknowledged,consumers';

export async function startScraper(httpPort: number, queues: number): Promise<ScraperHandle> {
  const base = `http://127.0.0.1:${httpPort}`;
  for (let i = 0; i < queues; i++) {
    const response = await fetch(`${base}/api/queues/%2F/bench-scraped-${i}`, { method: 'PUT', body: '{"durable":false}', headers: { 'content-type': 'application/json' } });
    if (!response.ok) throw new Error(`declaring queue ${i} through the API failed: ${response.status} ${await response.text()}`);
  }
  const paths = ['/metrics', '/metrics/per-object', '/api/queues', '/api/overview', `/api/queues?columns=${consoleColumns}`];
  let running = true;
  let rounds = 0;
  let failures = 0;
  let slowestRoundMs = 0;
  const loop = (async (): Promise<void> => {
    while (running) {
      const started = performance.now();
      for (const path of paths) {
        const response = await fetch(`${base}${path}`).catch(() => undefined);
        if (!response?.ok) failures++;
        await response?.arrayBuffer();
      }
      const took = performance.now() - started;
      slowestRoundMs = Math.max(slowestRoundMs, took);
      rounds++;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, roundIntervalMs - took)));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return { rounds, slowestRoundMs, failures };
    },
  };
}
