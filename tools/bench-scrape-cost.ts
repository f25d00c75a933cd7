/**
 * What one scraped endpoint costs the broker, endpoint by endpoint (`node
 * dist/tools/bench.js scrape-cost`): one Cairn with 1,000 queues declared
 * (the scrape bench's monitoring load, bench-scraper.ts), each endpoint of a
 * scrape round warmed up, then requested `requests` times one after another
 * while /proc says how much CPU the broker's event loop and its other
 * threads spent (bench-thread-times.ts), and a PINGREQ probe on its own
 * thread (bench-block-probe.ts) times how long the loop kept an MQTT client
 * waiting: its slowest PINGRESP is about the longest single stretch of the
 * loop one answer took. Endpoints are measured in turns (each a slice of
 * `requests / turns`), so a minute of a loaded machine weighs on all alike.
 *
 * CAIRN_BENCH_SCRAPE_COST_REQUESTS sets `requests` (default 200).
 * CAIRN_BENCH_SCRAPE_COST_PROBE=off runs without the probe: its PINGREQs
 * keep the loop busy all the time the requests run, so with it the event
 * loop column counts the probe's pings over each request's wall time too
 * (a request that waits longer, e.g. on another thread, reads as costing
 * the loop more); without it the column is what the requests cost the loop.
 */
import { loadavg } from 'node:os';
import { fmt, printTable, tempDir } from './bench-mqtt.js';
import { startBlockProbe, type BlockProbe } from './bench-block-probe.js';
import { declareQueues, scrapedPaths, scrapedRequests } from './bench-scraper.js';
import { percentile } from './bench-side-by-side.js';
import { threadTimes } from './bench-thread-times.js';
import { startCairnProcess } from './cairn-process.js';

const queues = 1_000;
const requests = Number(process.env['CAIRN_BENCH_SCRAPE_COST_REQUESTS'] ?? 200);
const turns = 4;
const warmUpRequests = 50;
const probing = process.env['CAIRN_BENCH_SCRAPE_COST_PROBE'] !== 'off';
/** Stands in for the probe when it is off: nothing measured. */
const noProbe: BlockProbe = { take: async () => [], stop: async () => undefined };

interface EndpointCost { loopNs: number; otherNs: number; bytes: number; requests: number; probe: number[] }

/** GETs `path` with the headers the scraper sends for it (bench-scraper.ts); the bytes of the decoded answer. */
async function get(base: string, path: string): Promise<number> {
  const response = await fetch(`${base}${path}`, { headers: scrapedRequests.find((request) => request.path === path)?.headers ?? {} });
  if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`);
  return (await response.arrayBuffer()).byteLength;
}

export async function benchScrapeCost(): Promise<void> {
  const data = tempDir('cairn-bench-scrape-cost-');
  const costs = new Map<string, EndpointCost>(scrapedPaths.map((path) => [path, { loopNs: 0, otherNs: 0, bytes: 0, requests: 0, probe: [] }]));
  let idleProbe: number[] = [];
  try {
    const broker = await startCairnProcess(data.dir);
    const pid = broker.child.pid!;
    const base = `http://127.0.0.1:${broker.httpPort}`;
    const probe = probing ? await startBlockProbe(broker.mqttPort) : noProbe;
    try {
      await declareQueues(base, queues);
      for (const path of scrapedPaths) for (let i = 0; i < warmUpRequests; i++) await get(base, path);
      await new Promise((resolve) => setTimeout(resolve, 500));
      idleProbe = await probe.take();
      for (let turn = 0; turn < turns; turn++) {
        for (const path of scrapedPaths) {
          const cost = costs.get(path)!;
          await probe.take();
          const before = threadTimes(pid);
          for (let i = 0; i < requests / turns; i++) cost.bytes = await get(base, path);
          const after = threadTimes(pid);
          cost.probe.push(...await probe.take());
          if (before === undefined || after === undefined) throw new Error('no /proc thread times for the broker');
          cost.loopNs += after.loopRunNs - before.loopRunNs;
          cost.otherNs += after.otherRunNs - before.otherRunNs;
          cost.requests += requests / turns;
        }
      }
    } finally {
      await probe.stop();
      await broker.stop();
    }
  } finally {
    data.remove();
  }
  const rows = [['endpoint', 'bytes', 'event loop ms/request', 'other threads ms/request', 'probe PINGRESP p99 / max (ms)']];
  let loopSum = 0;
  let otherSum = 0;
  for (const [path, cost] of costs) {
    const probe = [...cost.probe].sort((a, b) => a - b);
    loopSum += cost.loopNs / cost.requests / 1e6;
    otherSum += cost.otherNs / cost.requests / 1e6;
    rows.push([path, cost.bytes.toLocaleString('en-US'), fmt(cost.loopNs / cost.requests / 1e6, 3), fmt(cost.otherNs / cost.requests / 1e6, 3), `${fmt(percentile(probe, 99), 3)} / ${fmt(probe.at(-1) ?? NaN, 3)}`]);
  }
  rows.push(['one round (sum)', '', fmt(loopSum, 2), fmt(otherSum, 2), '']);
  const idle = [...idleProbe].sort((a, b) => a - b);
  console.log(`Broker CPU per request over ${queues} queues: ${requests} requests per endpoint in ${turns} turns after ${warmUpRequests} unmeasured${probing ? '' : ', no probe'}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}.`);
  printTable(rows);
  console.log(`PINGRESP with no request running: p50 ${fmt(percentile(idle, 50), 3)} ms, max ${fmt(idle.at(-1) ?? NaN, 3)} ms over ${idle.length} pings.`);
}
