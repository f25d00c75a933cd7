/**
 * A trace over a large log does not stop other clients (issue 15: the
 * console's trace read up to a million records in one synchronous block, and
 * every MQTT and AMQP client stalled while it ran).
 *
 * One process holds the broker on a SegmentedLog in a temp directory, its
 * MQTT listener and its HTTP listener. A persistent session subscribed to
 * `traced/#` goes offline, so the one message published there stays pending
 * and its trace reads the whole log after it: 200,000 retained publishes
 * written through the core. A real MQTT.js client then does QoS 1
 * publish/PUBACK round trips back to back while GET /api/log/trace runs.
 *
 * Asserted: the trace answers right (the pending destination, every record
 * after the message examined, not partial), at least 10 round trips complete
 * between the request and its answer, and no gap between two completions in
 * that window reaches two seconds. Run as one synchronous block (before this
 * change) the trace completes no round trip while it runs. Then the caps:
 * with small HttpLimits both endpoints stop early and say `partial: true`
 * and how far they got.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { startHttpServer, type HttpServerHandle } from '../../src/http/server.js';
import { SegmentedLog } from '../../src/log/index.js';
import { silentLogger } from '../../src/logger.js';
import { startMqttServer, type MqttServer } from '../../src/protocols/mqtt/server.js';
import { tempDirectory } from '../support/kit.js';
import { probeRoundTrips, QuietLink, roundTripsDuring } from '../support/responsiveness-probe.js';

const fillerRecords = 200_000;

/** The message to trace (its LSN), queued for an offline persistent session, then the filler behind it. */
async function writeLog(broker: Broker): Promise<number> {
  const watcher = broker.mqtt.connect('watcher', false, new QuietLink());
  await watcher.durable;
  watcher.session.start();
  await watcher.session.subscribe([{ filter: 'traced/#', qos: 1 }]).durable;
  watcher.session.detach();
  const { session, durable } = broker.mqtt.connect('writer', true, new QuietLink());
  await durable;
  session.start();
  const tracedLsn = broker.log.nextLsn;
  await session.publish({ topic: 'traced/one', payload: new TextEncoder().encode('follow me'), qos: 1, retain: false, packetId: 1 }).durable;
  const payload = new TextEncoder().encode('x'.repeat(20));
  for (let first = 0; first < fillerRecords; first += 2000) {
    const batch: Array<Promise<void> | undefined> = [];
    for (let n = first; n < first + 2000; n++) batch.push(session.publish({ topic: `fill/${n % 10}`, payload, qos: 1, retain: true, packetId: (n % 60_000) + 2 }).durable);
    await Promise.all(batch);
  }
  return tracedLsn;
}

describe('a trace over 200,000 records on a SegmentedLog', () => {
  let directory: { path: string; remove(): void };
  let log: SegmentedLog;
  let broker: Broker;
  let mqttServer: MqttServer;
  let http: HttpServerHandle;
  let client: MqttClient;
  let tracedLsn: number;

  beforeAll(async () => {
    directory = tempDirectory('cairn-trace-responsiveness-');
    log = await SegmentedLog.open({ dir: directory.path, logger: silentLogger() });
    broker = Broker.open({ log, logger: silentLogger() });
    tracedLsn = await writeLog(broker);
    mqttServer = await startMqttServer({ core: broker.mqtt, host: '127.0.0.1', port: 0, logger: silentLogger() });
    http = await startHttpServer({ broker, host: '127.0.0.1', port: 0, logger: silentLogger() });
    client = await mqtt.connectAsync(`mqtt://127.0.0.1:${mqttServer.port}`, { clientId: 'probe', clean: true, reconnectPeriod: 0 });
  }, 120_000);

  afterAll(async () => {
    await client?.endAsync();
    await http?.close();
    await mqttServer?.close();
    await log?.close();
    directory?.remove();
  });

  it('answers right while MQTT publish/PUBACK round trips keep completing', async () => {
    const lastLsn = log.durableLsn;
    expect(lastLsn - tracedLsn).toBeGreaterThanOrEqual(fillerRecords);
    const probe = probeRoundTrips(client);
    while (probe.completions.length < 3) await new Promise((resolve) => setImmediate(resolve));
    const started = performance.now();
    const response = await fetch(`http://127.0.0.1:${http.port}/api/log/trace?lsn=${tracedLsn}`);
    const body = await response.json() as Record<string, unknown>;
    const ended = performance.now();
    await probe.stop();

    expect(response.status).toBe(200);
    const during = roundTripsDuring(probe.completions, started, ended);
    const summary = `trace ${(ended - started).toFixed(0)} ms over ${String(body['examined'])} records, ${during.count} round trips during it, longest gap ${during.longestGapMs.toFixed(0)} ms`;
    console.log(summary);
    expect(during.count, summary).toBeGreaterThanOrEqual(10);
    expect(during.longestGapMs, summary).toBeLessThan(2000);
    expect(body).toMatchObject({
      lsn: tracedLsn, topic: 'traced/one', partial: false, examined: lastLsn - tracedLsn + 1, fromLsn: tracedLsn, throughLsn: lastLsn,
      destinations: [{ destination: 'session watcher', seq: 1, status: 'pending', steps: [] }],
    });
  }, 120_000);

  it('a trace and the records stopped by their caps say partial, and how far they got', async () => {
    const capped = await startHttpServer({ broker, host: '127.0.0.1', port: 0, logger: silentLogger(), limits: { traceRecordsExaminedMax: 5_000, logRecordsExaminedMax: 3_000, logChunkRecords: 700 } });
    try {
      const base = `http://127.0.0.1:${capped.port}`;
      const trace = await (await fetch(`${base}/api/log/trace?lsn=${tracedLsn}`)).json() as Record<string, unknown>;
      expect(trace).toMatchObject({ lsn: tracedLsn, partial: true, examined: 5_000, fromLsn: tracedLsn, throughLsn: tracedLsn + 4_999, destinations: [{ status: 'pending' }] });
      expect(trace['reason']).toContain('traceRecordsExaminedMax');

      // The newest 3,000 records hold no msg record for 'traced/#': older ones were not examined, and the answer says so.
      const recent = await (await fetch(`${base}/api/log/records?topic=${encodeURIComponent('traced/#')}`)).json() as Record<string, unknown>;
      expect(recent).toMatchObject({ records: [], partial: true, examined: 3_000, throughLsn: log.durableLsn });
      expect(recent['reason']).toContain('from=');
      // From the message on, the cap stops the scan after it was found.
      const fromTraced = await (await fetch(`${base}/api/log/records?topic=${encodeURIComponent('traced/#')}&from=${tracedLsn}`)).json() as Record<string, unknown>;
      expect(fromTraced).toMatchObject({ records: [{ lsn: tracedLsn, kind: 'msg' }], partial: true, examined: 3_000, fromLsn: tracedLsn, throughLsn: tracedLsn + 2_999 });
      // Enough newest records to fill the limit: complete, though older records were not read.
      const newest = await (await fetch(`${base}/api/log/records?limit=5`)).json() as { records: Array<{ lsn: number }>; partial: boolean };
      expect(newest.partial).toBe(false);
      expect(newest.records.map((record) => record.lsn)).toEqual([4, 3, 2, 1, 0].map((back) => log.durableLsn - back));
    } finally {
      await capped.close();
    }
  }, 60_000);
});
