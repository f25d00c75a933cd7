/**
 * A large collection query does not stop other clients (issue 12: a query
 * over 443k in-memory documents blocked every client for seconds).
 *
 * One process holds the broker (a MemoryLog, so that the cost measured is
 * the query's and not the disk's), its MQTT listener and its HTTP listener.
 * 50,000 small documents are ingested through the core's MQTT publish with
 * an ingest route. A real MQTT.js client then does QoS 1 publish/PUBACK
 * round trips back to back while one HTTP query examines every document.
 *
 * The facts asserted are counts, not speeds: the query answers right (50
 * matches out of 50,000 examined, not partial), at least 10 round trips
 * complete between the request and its answer, and no gap between two
 * completions within that window reaches a second. A query run as one
 * synchronous block (before this change) completes no round trip while it
 * runs: its gap is the whole query.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { parseIngestRoutes } from '../../src/core/ingest.js';
import { MemoryLog } from '../../src/core/record-log.js';
import { startHttpServer, type HttpServerHandle } from '../../src/http/server.js';
import { silentLogger } from '../../src/logger.js';
import { startMqttServer, type MqttServer } from '../../src/protocols/mqtt/server.js';
import { probeRoundTrips, QuietLink, roundTripsDuring } from '../support/responsiveness-probe.js';

const documentsTotal = 50_000;
const matchesExpected = documentsTotal / 1000;

async function ingest(broker: Broker): Promise<void> {
  const { session, durable } = broker.mqtt.connect('ingest', true, new QuietLink());
  await durable;
  session.start();
  for (let first = 0; first < documentsTotal; first += 1000) {
    const batch: Array<Promise<void> | undefined> = [];
    for (let n = first; n < first + 1000; n++) {
      const payload = new TextEncoder().encode(JSON.stringify({ n, sensor: n % 100, site: `greenhouse-${n % 7}` }));
      batch.push(session.publish({ topic: `readings/${n % 100}`, payload, qos: 1, retain: false, packetId: (n % 60_000) + 1 }).durable);
    }
    await Promise.all(batch);
  }
}

describe('a collection query over 50,000 documents', () => {
  let broker: Broker;
  let mqttServer: MqttServer;
  let http: HttpServerHandle;
  let client: MqttClient;

  beforeAll(async () => {
    broker = Broker.open({ log: new MemoryLog(), ingestRoutes: parseIngestRoutes('readings/#:readings'), logger: silentLogger() });
    await ingest(broker);
    mqttServer = await startMqttServer({ core: broker.mqtt, host: '127.0.0.1', port: 0, logger: silentLogger() });
    http = await startHttpServer({ broker, host: '127.0.0.1', port: 0, logger: silentLogger(), limits: { queryDocumentsExaminedMax: 1_000_000 } });
    client = await mqtt.connectAsync(`mqtt://127.0.0.1:${mqttServer.port}`, { clientId: 'probe', clean: true, reconnectPeriod: 0 });
  }, 60_000);

  afterAll(async () => {
    await client?.endAsync();
    await http?.close();
    await mqttServer?.close();
  });

  it('answers right while MQTT publish/PUBACK round trips keep completing', async () => {
    expect(broker.state.collections.get('readings')?.documents.size).toBe(documentsTotal);
    const probe = probeRoundTrips(client);
    while (probe.completions.length < 3) await new Promise((resolve) => setImmediate(resolve));
    const filter = encodeURIComponent(JSON.stringify({ n: { $mod: [1000, 7] } }));
    const started = performance.now();
    const response = await fetch(`http://127.0.0.1:${http.port}/api/collections/readings/count?filter=${filter}`);
    const body = await response.json() as Record<string, unknown>;
    const ended = performance.now();
    await probe.stop();

    expect(response.status).toBe(200);
    expect(body).toEqual({ collection: 'readings', count: matchesExpected, examined: documentsTotal, partial: false });
    const during = roundTripsDuring(probe.completions, started, ended);
    const summary = `query ${(ended - started).toFixed(0)} ms, ${during.count} round trips during it, longest gap ${during.longestGapMs.toFixed(0)} ms`;
    console.log(summary);
    expect(during.count, summary).toBeGreaterThanOrEqual(10);
    expect(during.longestGapMs, summary).toBeLessThan(1000);
  }, 60_000);

  it('a sorted, limited documents query over the same documents answers in order', async () => {
    const sort = encodeURIComponent(JSON.stringify({ sensor: -1, n: -1 }));
    const response = await fetch(`http://127.0.0.1:${http.port}/api/collections/readings/documents?sort=${sort}&limit=3&projection=${encodeURIComponent('{"n":1,"_id":0}')}`);
    const body = await response.json() as Record<string, unknown>;
    expect(body).toMatchObject({ count: 3, examined: documentsTotal, partial: false, documents: [{ n: 49_999 }, { n: 49_899 }, { n: 49_799 }] });
  }, 60_000);
});
