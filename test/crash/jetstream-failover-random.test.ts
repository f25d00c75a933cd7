/**
 * Failover under load, many times (issue 17): two `cairn serve --log nats://…`
 * nodes on one three-node nats-server cluster, one writing, one standby. In
 * every round, clients on the writer publish (AMQP confirms into a durable
 * queue, MQTT QoS 1 for an offline persistent session) and consume (an AMQP
 * consumer acking, the persistent session PUBACKing); after a random moment
 * the writer is SIGKILLed, the standby takes over, and the killed node comes
 * back as the next standby. 50 rounds by default (CAIRN_TEST_FAILOVERS).
 *
 * Invariants, checked over every round and a final drain:
 * - every confirmed / PUBACKed publish is delivered at least once;
 * - nothing durably consumed comes back. A consumer's ack (PUBACK) counts as
 *   durable once a publish the same connection sent after it was confirmed
 *   (PUBACKed) — a publish that is written (a durable destination takes it):
 *   the log is one ordered stream, so the ack's record lies before that
 *   publish's record;
 * - nothing is delivered that was never published.
 * Every takeover's duration (SIGKILL to the standby's ready line) is printed.
 * The seed is printed; CAIRN_TEST_SEED replays the schedule.
 */
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsCluster, type NatsCluster } from '../../tools/nats-cluster.js';
import { startBroker, tempDataDir, type BrokerProcess } from '../support/broker-process.js';
import { closeQuietly, sleep } from '../support/crash-amqp-clients.js';
import { announceSeed, seededRandom, until } from '../support/kit.js';

const failovers = Number(process.env['CAIRN_TEST_FAILOVERS'] ?? 50);
const leaseTtl = '1s';
const loadMsMin = 150;
const loadMsSpread = 600;
const stream = 'failover_random';

let cluster: NatsCluster;
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(async () => { cluster = await startNatsCluster(); }, 60_000);
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await cluster?.stop();
});

function serve(lines: string[]): Promise<BrokerProcess> {
  const data = tempDataDir('cairn-failover-random-');
  cleanups.push(() => data.remove());
  const started = startBroker(data.dir, ['--log', `nats://${cluster.servers}/${stream}`, '--lease-ttl', leaseTtl], {}, 120_000, lines);
  started.then((broker) => cleanups.push(() => broker.kill()), () => undefined);
  return started;
}

/** What the clients saw, over all rounds. */
interface Ledger {
  readonly published: Set<string>;
  readonly acknowledged: Set<string>;
  readonly delivered: Set<string>;
  /** Consumed bodies whose ack (PUBACK) is known to be in the log. */
  readonly consumedDurably: Set<string>;
  readonly resurrected: string[];
}

const newLedger = (): Ledger => ({ published: new Set(), acknowledged: new Set(), delivered: new Set(), consumedDurably: new Set(), resurrected: [] });

/** Resolves false once `closed` resolves first: a confirm or PUBACK the dead broker never sends must not hang the round. */
function unlessClosed(acknowledged: Promise<boolean>, closed: Promise<void>): Promise<boolean> {
  return Promise.race([acknowledged, closed.then(() => false)]);
}

function closedPromise(emitter: { once(event: 'close', listener: () => void): unknown }): Promise<void> {
  return new Promise((resolve) => { emitter.once('close', () => resolve()); });
}

const publishWindow = 16;

/** Publishes `${prefix}-${i}` with `send` until stopped or a publish fails, at most publishWindow unacknowledged. */
async function publishWindowed(ledger: Ledger, prefix: string, send: (body: string) => Promise<boolean>, stopped: () => boolean): Promise<void> {
  const inFlight = new Set<Promise<boolean>>();
  let failed = false;
  for (let i = 0; !stopped() && !failed; i++) {
    const body = `${prefix}-${i}`;
    ledger.published.add(body);
    const acknowledged = send(body).then((ok) => {
      if (ok) ledger.acknowledged.add(body);
      else failed = true;
      return ok;
    });
    inFlight.add(acknowledged);
    void acknowledged.then(() => inFlight.delete(acknowledged));
    if (inFlight.size >= publishWindow) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
}

function receive(ledger: Ledger, body: string): void {
  if (ledger.consumedDurably.has(body)) ledger.resurrected.push(body);
  ledger.delivered.add(body);
}

/** AMQP: a publisher into `work` and a consumer that acks, each ack made durable by the consumer connection's next confirmed marker. */
async function amqpRound(port: number, round: number, ledger: Ledger, stopped: () => boolean): Promise<void> {
  const models: ChannelModel[] = [];
  try {
    const publisherModel = await amqp.connect(`amqp://127.0.0.1:${port}`, { noDelay: true });
    models.push(publisherModel);
    publisherModel.on('error', () => undefined);
    const publisherClosed = closedPromise(publisherModel);
    const publisher = await publisherModel.createConfirmChannel();
    publisher.on('error', () => undefined);
    await publisher.assertQueue('work', { durable: true });
    await publisher.assertQueue('markers', { durable: true });
    const consumerModel = await amqp.connect(`amqp://127.0.0.1:${port}`, { noDelay: true });
    models.push(consumerModel);
    consumerModel.on('error', () => undefined);
    const consumerClosed = closedPromise(consumerModel);
    const consumer: ConfirmChannel = await consumerModel.createConfirmChannel();
    consumer.on('error', () => undefined);
    await consumer.prefetch(8);
    let ackedSinceMarker: string[] = [];
    await consumer.consume('work', (message) => {
      if (message === null) return;
      const body = message.content.toString();
      receive(ledger, body);
      try {
        consumer.ack(message);
        ackedSinceMarker.push(body);
      } catch { /* the broker is gone */ }
    });
    const marking = (async () => {
      for (let i = 0; !stopped(); i++) {
        const acked = ackedSinceMarker;
        ackedSinceMarker = [];
        const confirmed = await unlessClosed(new Promise<boolean>((resolve) => {
          try {
            consumer.sendToQueue('markers', Buffer.from(`marker-${round}-${i}`), { persistent: true }, (error: unknown) => resolve(error == null));
          } catch { resolve(false); }
        }), consumerClosed);
        if (!confirmed) return;
        for (const body of acked) ledger.consumedDurably.add(body);
      }
    })();
    await publishWindowed(ledger, `amqp-${round}`, (body) => unlessClosed(new Promise<boolean>((resolve) => {
      try {
        publisher.sendToQueue('work', Buffer.from(body), { persistent: true }, (error: unknown) => resolve(error == null));
      } catch { resolve(false); }
    }), publisherClosed), stopped);
    await Promise.race([marking, sleep(500)]);
  } catch {
    // The broker died under the round's set-up: what was confirmed so far is recorded.
  } finally {
    await Promise.all(models.map((model) => closeQuietly(model)));
  }
}

/** MQTT: QoS 1 publishes for the persistent session `auditor`, which PUBACKs them; its own QoS 1 marker publishes make its PUBACKs durable. */
async function mqttRound(port: number, round: number, ledger: Ledger, stopped: () => boolean): Promise<void> {
  const clients: mqtt.MqttClient[] = [];
  const connect = async (clientId: string, clean: boolean): Promise<mqtt.MqttClient> => {
    const client = mqtt.connect({ host: '127.0.0.1', port, clientId, clean, reconnectPeriod: 0, protocolVersion: 4, connectTimeout: 5_000 });
    clients.push(client);
    client.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => { client.once('connect', () => resolve()); client.once('close', () => reject(new Error('closed'))); });
    return client;
  };
  try {
    let pubackedSinceMarker: string[] = [];
    const auditor = mqtt.connect({ host: '127.0.0.1', port, clientId: 'auditor', clean: false, reconnectPeriod: 0, protocolVersion: 4, connectTimeout: 5_000 });
    clients.push(auditor);
    auditor.on('error', () => undefined);
    const auditorClosed = closedPromise(auditor);
    // MQTT.js PUBACKs after the handler returns: the body counts as acked from the next marker on.
    auditor.on('message', (topic, payload) => {
      if (topic !== 'audit/event') return;
      const body = payload.toString();
      receive(ledger, body);
      pubackedSinceMarker.push(body);
    });
    await new Promise<void>((resolve, reject) => { auditor.once('connect', () => resolve()); auditor.once('close', () => reject(new Error('closed'))); });
    // Subscribed to its own markers too: a marker with no durable destination would be PUBACKed without a
    // record, and its PUBACK would say nothing about the acks before it.
    await auditor.subscribeAsync(['audit/event', 'audit/markers'], { qos: 1 });
    const publisher = await connect(`publisher-${round}`, true);
    const publisherClosed = closedPromise(publisher);
    const marking = (async () => {
      for (let i = 0; !stopped(); i++) {
        const acked = pubackedSinceMarker;
        pubackedSinceMarker = [];
        const pubacked = auditor.publishAsync('audit/markers', `marker-${round}-${i}`, { qos: 1 }).then(() => true, () => false);
        if (!(await unlessClosed(pubacked, auditorClosed))) return;
        for (const body of acked) ledger.consumedDurably.add(body);
      }
    })();
    await publishWindowed(ledger, `mqtt-${round}`, (body) => unlessClosed(publisher.publishAsync('audit/event', body, { qos: 1 }).then(() => true, () => false), publisherClosed), stopped);
    await Promise.race([marking, sleep(500)]);
  } catch {
    // The broker died under the round's set-up.
  } finally {
    for (const client of clients) client.end(true);
  }
}

describe('JetStream failover under mixed load, many times', () => {
  it(`randomized: ${failovers} SIGKILLed writers, nothing acknowledged lost, nothing consumed resurrected`, { timeout: 600_000 }, async () => {
    const seed = announceSeed('jetstream random failover');
    const random = seededRandom(seed);
    const ledger = newLedger();
    const takeovers: number[] = [];

    let writerLines: string[] = [];
    let writer = await serve(writerLines);
    let standbyLines: string[] = [];
    let standby = serve(standbyLines);
    let unplanned = 0;
    for (let round = 0; takeovers.length < failovers; round++) {
      if (round >= failovers * 2) throw new Error(`only ${takeovers.length} of ${round} rounds ended with a SIGKILL: the writers kept stopping on their own`);
      // On a starved machine a writer may miss its lease renewals and stop on its own (exit 74): then the
      // standby takes over before it printed that it waits. That is a failover too; the next standby is started.
      const waiting = standbyLines;
      const tookOver = await Promise.race([
        until(() => waiting.some((line) => line.includes('standby: another node writes the log')), `round ${round}: the standby waiting`, 60_000).then(() => false),
        standby.then(() => true),
      ]).catch((error: unknown) => { throw new Error(`${String(error)}; the standby printed:\n${waiting.slice(-15).join('\n')}\nthe writer printed:\n${writerLines.slice(-15).join('\n')}`); });
      if (!tookOver) {
        let stop = false;
        const load = Promise.all([amqpRound(writer.amqpPort, round, ledger, () => stop), mqttRound(writer.mqttPort, round, ledger, () => stop)]);
        await sleep(loadMsMin + random() * loadMsSpread);
        const killedAt = performance.now();
        await writer.kill();
        stop = true;
        await standby;
        takeovers.push(performance.now() - killedAt);
        await load;
      } else {
        unplanned++;
        await writer.kill();
      }
      writer = await standby;
      writerLines = standbyLines;
      standbyLines = [];
      standby = serve(standbyLines);
    }

    // The final drain, on the last writer.
    const drainedBefore = ledger.delivered.size;
    const connection = await amqp.connect(`amqp://127.0.0.1:${writer.amqpPort}`);
    cleanups.push(() => closeQuietly(connection));
    const channel = await connection.createChannel();
    await channel.consume('work', (message) => { if (message !== null) receive(ledger, message.content.toString()); }, { noAck: true });
    const auditor = mqtt.connect({ host: '127.0.0.1', port: writer.mqttPort, clientId: 'auditor', clean: false, reconnectPeriod: 0, protocolVersion: 4 });
    cleanups.push(() => auditor.endAsync(true));
    auditor.on('message', (topic, payload) => { if (topic === 'audit/event') receive(ledger, payload.toString()); });
    const missing = (): string[] => [...ledger.acknowledged].filter((body) => !ledger.delivered.has(body));
    await until(() => missing().length === 0, `every acknowledged publish delivered (missing: ${missing().slice(0, 5).join(', ')})`, 60_000);

    const sorted = [...takeovers].sort((a, b) => a - b);
    console.log(`jetstream random failover: ${takeovers.length} takeovers after SIGKILL (${unplanned} writers stopped on their own), p50 ${Math.round(sorted[Math.floor(sorted.length / 2)]!)} ms, max ${Math.round(sorted[sorted.length - 1]!)} ms (lease TTL ${leaseTtl}); `
      + `${ledger.acknowledged.size} acknowledged of ${ledger.published.size} published, ${ledger.consumedDurably.size} consumed durably, ${ledger.delivered.size - drainedBefore} left for the final drain`);
    expect([...ledger.delivered].filter((body) => !ledger.published.has(body)), 'delivered but never published').toEqual([]);
    expect(ledger.resurrected, 'durably consumed bodies delivered again').toEqual([]);
    expect(missing(), 'acknowledged publishes never delivered').toEqual([]);
    expect(ledger.consumedDurably.size).toBeGreaterThan(0);
    expect(sorted[sorted.length - 1]!).toBeLessThan(15_000);
  });
});
