/**
 * Collections benchmark: what a large ingested collection costs the broker
 * (issue 12 measured 443k documents holding 403 MB of RAM, a 12 s restart,
 * and a query that blocked every client for seconds).
 *
 * First, in this process: the heap the collection projection keeps per
 * document (doc records applied to an empty state, heapUsed after a full gc
 * before and after, the records themselves dropped).
 *
 * `cairn serve --ingest 'bench/#:readings'` runs as a child process; one
 * MQTT.js client publishes CAIRN_BENCH_DOCUMENTS (default 200,000) small JSON
 * payloads at QoS 1 (1,000 in flight), each becoming a document. Printed:
 * the ingest rate, the broker's RSS after the ingest, a count query that must
 * read every document and a sorted documents query (their time, and how many
 * MQTT publish/PUBACK round trips another client completed meanwhile, with
 * the longest gap between two of them), then SIGKILL, restart (spawn → ready,
 * HTTP answering) and the RSS after the restart. The queries may examine every
 * document (CAIRN_QUERY_DOCUMENTS_MAX is set to their number).
 * Data lives in a temp dir (CAIRN_BENCH_DIR picks the disk), removed afterwards.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import mqtt, { type MqttClient } from 'mqtt';
import { apply } from '../src/projections/apply.js';
import { RecordKind } from '../src/projections/records.js';
import { initialState } from '../src/projections/state.js';
import { tempDir } from './bench-mqtt.js';
import { startCairnProcess, type CairnProcess } from './cairn-process.js';

const documentsDefault = 200_000;
const publishesInFlight = 1000;
/** A query that has not answered by then is reported as such, and the bench goes on. */
const queryTimeoutMs = 120_000;

export async function benchCollections(): Promise<void> {
  const documentsTotal = Number(process.env['CAIRN_BENCH_DOCUMENTS'] ?? documentsDefault);
  console.log(`projection: ${projectionBytesPerDocument(documentsTotal).toFixed(1)} bytes of heap per document (${documentsTotal.toLocaleString('en')} doc records applied)`);
  const { dir, remove } = tempDir('cairn-bench-collections-');
  const flags = ['--ingest', 'bench/#:readings', '--amqp-port', 'off'];
  // Through the environment, which a Cairn without that setting ignores (a flag would stop it): the queries read every document.
  const env = { CAIRN_QUERY_DOCUMENTS_MAX: String(documentsTotal) };
  let cairn: CairnProcess | undefined;
  try {
    cairn = await startCairnProcess(dir, flags, env);
    console.log(`RSS at start (empty): ${rssMegabytes(cairn)} MB`);
    const ingestMs = await ingest(cairn.mqttPort, documentsTotal);
    console.log(`ingest: ${documentsTotal.toLocaleString('en')} documents in ${(ingestMs / 1000).toFixed(1)} s = ${Math.round(documentsTotal / (ingestMs / 1000)).toLocaleString('en')} docs/s`);
    console.log(`RSS after ingest: ${rssMegabytes(cairn)} MB; data directory: ${megabytes(directoryBytes(dir, ''))} MB, of which snapshots ${(directoryBytes(dir, '.snap') / 1024).toFixed(0)} KiB`);
    await queryWhileProbing(cairn, 'count, filter {"sensor": 42} (reads every document)', `/api/collections/readings/count?filter=${encodeURIComponent('{"sensor":42}')}`);
    await queryWhileProbing(cairn, 'documents, sort {"v": -1}, limit 10', `/api/collections/readings/documents?sort=${encodeURIComponent('{"v":-1}')}&limit=10`);
    await cairn.kill();
    const restartStarted = performance.now();
    cairn = await startCairnProcess(dir, flags, env);
    const restartMs = performance.now() - restartStarted;
    const replayed = cairn.output.map((line) => parseLine(line)).find((entry) => String(entry?.['msg'] ?? '').startsWith('log replayed'));
    console.log(`restart after SIGKILL (spawn → ready, HTTP answering): ${restartMs.toFixed(0)} ms; ${String(replayed?.['msg'] ?? 'no replay line')}`);
    console.log(`RSS after restart: ${rssMegabytes(cairn)} MB`);
    const documents = await (await fetch(`http://127.0.0.1:${cairn.httpPort}/api/collections`)).json() as unknown;
    console.log(`collections after restart: ${JSON.stringify(documents)}`);
  } finally {
    await cairn?.kill();
    remove();
  }
}

function projectionBytesPerDocument(total: number): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  const before = process.memoryUsage().heapUsed;
  const state = initialState();
  for (let i = 0; i < total; i++) {
    const doc = { sensor: i % 100, v: i, site: `greenhouse-${i % 7}`, ok: i % 3 === 0, _topic: `bench/${i % 100}`, _received_at: 1_790_000_000_000 + i };
    apply(state, { lsn: 1_000 + i, timestamp: 1_790_000_000_000 + i, kind: RecordKind.doc, body: { col: 'readings', id: i + 1, doc } });
  }
  gc();
  const bytes = (process.memoryUsage().heapUsed - before) / total;
  if (state.collections.size !== 1) throw new Error('the projection lost its collection');
  return bytes;
}

async function ingest(port: number, total: number): Promise<number> {
  const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { clientId: 'bench-ingest', clean: true, reconnectPeriod: 0 });
  const started = performance.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < total) {
      const i = next++;
      const payload = JSON.stringify({ sensor: i % 100, v: i, site: `greenhouse-${i % 7}`, ok: i % 3 === 0 });
      await client.publishAsync(`bench/${i % 100}`, payload, { qos: 1 });
    }
  };
  await Promise.all(Array.from({ length: publishesInFlight }, worker));
  const elapsed = performance.now() - started;
  await client.endAsync();
  return elapsed;
}

/** Runs one HTTP query while another client does QoS 1 publish/PUBACK round trips back to back. */
async function queryWhileProbing(cairn: CairnProcess, what: string, path: string): Promise<void> {
  const probe = await mqtt.connectAsync(`mqtt://127.0.0.1:${cairn.mqttPort}`, { clientId: 'bench-probe', clean: true, reconnectPeriod: 0 });
  let querying = true;
  const roundTrips = probeRoundTrips(probe, () => querying);
  const started = performance.now();
  const body: Record<string, unknown> = await fetch(`http://127.0.0.1:${cairn.httpPort}${path}`, { signal: AbortSignal.timeout(queryTimeoutMs) })
    .then(async (response) => await response.json() as Record<string, unknown>)
    .catch((error: unknown) => ({ error: `no answer: ${error instanceof Error ? error.message : String(error)}` }));
  const queryMs = performance.now() - started;
  querying = false;
  const { count, maxGapMs } = await roundTrips;
  await probe.endAsync(true);
  const { documents: _documents, ...summary } = body;
  console.log(`query ${what}: ${queryMs.toFixed(0)} ms, answer ${JSON.stringify(summary).slice(0, 200)}; meanwhile ${count} MQTT round trips, longest gap ${maxGapMs.toFixed(0)} ms`);
}

async function probeRoundTrips(client: MqttClient, going: () => boolean): Promise<{ count: number; maxGapMs: number }> {
  let count = 0;
  let maxGapMs = 0;
  let last = performance.now();
  while (going()) {
    await client.publishAsync('probe/ping', 'x', { qos: 1 });
    const now = performance.now();
    maxGapMs = Math.max(maxGapMs, now - last);
    last = now;
    count++;
  }
  return { count, maxGapMs };
}

function rssMegabytes(cairn: CairnProcess): string {
  const status = readFileSync(`/proc/${cairn.child.pid!}/status`, 'utf8');
  const kilobytes = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return (kilobytes / 1024).toFixed(0);
}

/** Bytes of the files in `dir` whose names end with `suffix`. */
function directoryBytes(dir: string, suffix: string): number {
  return readdirSync(dir).filter((name) => name.endsWith(suffix)).reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
}

function megabytes(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(0);
}

function parseLine(line: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}
