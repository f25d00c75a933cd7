/**
 * Per-message CPU of the core's destination paths, in process over a memory
 * log (no sockets, no disk): `node dist/tools/bench-destination-cpu.js
 * [amqp|persistent|clean …] [messages]`. Each case publishes 100-byte
 * messages in batches of 100 and waits for them to be settled:
 * - amqp: a persistent message into a durable queue, a consumer that acks
 *   (prefetch 100);
 * - persistent: an MQTT QoS 1 publish to a persistent session's subscriber
 *   that PUBACKs each delivery;
 * - clean: the same to a clean session's subscriber.
 * It prints process CPU time (user + system) per message after a warm-up of
 * 5,000. To compare two builds, copy this file into the other tree's tools/,
 * build both, and alternate the runs: the figures are noisy on a loaded
 * machine, only alternating runs compare.
 */
import { Broker } from '../src/core/broker.js';
import type { AmqpConsumer, Durable, MqttClientLink, MqttSessionHandle, QueueDelivery } from '../src/core/api.js';
import { MemoryLog } from '../src/core/record-log.js';
import { encodeProperties } from '../src/protocols/amqp/codec/index.js';

const cases = ['amqp', 'persistent', 'clean'] as const;
type BenchCase = (typeof cases)[number];

const payload = new Uint8Array(100).fill(0x61);
const batch = 100;
const warmUpMessages = 5_000;

/** CPU microseconds per message of `publishOne`, `messages` times after the warm-up. */
async function cpuPerMessage(broker: Broker, messages: number, publishOne: () => Durable): Promise<number> {
  let perMessage = 0;
  for (const count of [warmUpMessages, messages]) {
    const start = process.cpuUsage();
    for (let i = 0; i < count; i += batch) {
      const waits: Durable[] = [];
      for (let j = 0; j < batch; j++) waits.push(publishOne());
      await Promise.all(waits);
      await broker.flush();
    }
    const used = process.cpuUsage(start);
    perMessage = (used.user + used.system) / count;
  }
  return perMessage;
}

async function amqpCase(broker: Broker, messages: number): Promise<number> {
  await broker.amqp.declareQueue('q', { passive: false, durable: true, exclusive: false, autoDelete: false, arguments: {}, owner: 'bench' }).durable;
  let held: QueueDelivery[] = [];
  const consumer: AmqpConsumer = {
    tag: 'bench', noAck: false,
    canAccept: () => held.length < batch,
    deliver(delivery) {
      held.push(delivery);
      // Acks come back a little later, as from a client: all of this tick's at once.
      if (held.length === 1) queueMicrotask(() => {
        const settling = held;
        held = [];
        for (const d of settling) broker.amqp.settle(d, 'ack');
        broker.amqp.dispatch('q');
      });
    },
    cancelledByBroker: () => undefined,
    readFailed: (error) => { throw error; },
  };
  broker.amqp.consume('q', consumer, { exclusive: false, owner: 'bench' });
  const properties = encodeProperties({ deliveryMode: 2 });
  return cpuPerMessage(broker, messages, () => broker.amqp.publish({ exchange: '', routingKey: 'q', body: payload, properties }, { persistent: true, from: 'bench' }).durable);
}

async function mqttCase(broker: Broker, messages: number, clean: boolean): Promise<number> {
  let subscriber: MqttSessionHandle | undefined;
  const link = (acks: boolean): MqttClientLink => ({
    sendPublish(publish) {
      const packetId = publish.packetId;
      if (acks && packetId !== undefined) queueMicrotask(() => subscriber?.puback(packetId));
      return true;
    },
    sendPubrel: () => undefined,
    takenOver: () => undefined,
    readFailed: (error) => { throw error; },
  });
  const subscribed = broker.mqtt.connect('bench-sub', clean, link(true));
  await subscribed.durable;
  subscriber = subscribed.session;
  subscriber.start();
  await subscriber.subscribe([{ filter: 'bench/t', qos: 1 }]).durable;
  const publisher = broker.mqtt.connect('bench-pub', true, link(false));
  await publisher.durable;
  publisher.session.start();
  let id = 0;
  return cpuPerMessage(broker, messages, () => publisher.session.publish({ topic: 'bench/t', payload, qos: 1, retain: false, packetId: (id++ % 60_000) + 1 }).durable);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const count = args.find((arg) => /^[0-9]+$/.test(arg));
  const messages = count === undefined ? 60_000 : Number(count);
  const requested = args.filter((arg) => arg !== count);
  const unknown = requested.filter((arg) => !(cases as readonly string[]).includes(arg));
  if (unknown.length > 0) {
    console.error(`unknown case(s): ${unknown.join(', ')}; known: ${cases.join(', ')}`);
    process.exitCode = 2;
    return;
  }
  for (const name of requested.length === 0 ? cases : (requested as BenchCase[])) {
    // A fresh broker per case, so one case's garbage is not the next one's.
    const broker = Broker.open({ log: new MemoryLog(), limits: { snapshotEveryRecords: 0 } });
    const perMessage = name === 'amqp' ? await amqpCase(broker, messages) : await mqttCase(broker, messages, name === 'clean');
    console.log(`${name.padEnd(10)} ${perMessage.toFixed(2)} us CPU/msg (${messages} x ${payload.byteLength} B, in process, memory log)`);
  }
}

await main();
