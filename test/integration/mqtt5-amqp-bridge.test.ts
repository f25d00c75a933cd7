/**
 * The MQTT ⇄ AMQP bridge (amq.topic) carries MQTT 5 properties both ways
 * (core/bridge-properties.ts), with MQTT.js at protocolVersion 5 and amqplib
 * on one broker: user properties ⇄ headers, content type ⇄ content_type,
 * correlation data ⇄ correlation_id (non-UTF-8 data in the x-correlation-data
 * header), response topic ⇄ reply_to, message expiry interval ⇄ expiration,
 * payload format indicator ⇄ header x-mqtt-payload-format-indicator. A 3.1.1
 * subscriber gets the message without properties. Message expiry holds where
 * it was not applied before: an MQTT 5 message that expires in an AMQP queue
 * or in a shared-subscription group, and an AMQP expiration in an MQTT
 * session's queue, are never delivered. The broker's clock is a manual one.
 */
import type { ConsumeMessage } from 'amqplib';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import type { IPublishPacket } from 'mqtt-packet';
import { afterEach, expect, it } from 'vitest';
import type { RunningCairn } from '../../src/server.js';
import { RecordKind } from '../../src/projections/records.js';
import { EmbeddedAmqpBroker } from '../support/embedded-amqp-broker.js';
import { until } from '../support/kit.js';
import { ManualClock } from '../support/manual-clock.js';

const embedded = new EmbeddedAmqpBroker();
const clients: MqttClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.end(true);
  await embedded.cleanUp();
});

async function start(clock = new ManualClock()): Promise<RunningCairn> {
  return embedded.start(embedded.dataDirectory(), ['--mqtt-port', '0'], { clock: clock.now, timers: clock });
}

async function mqttClient(cairn: RunningCairn, clientId: string, options: IClientOptions = {}): Promise<MqttClient> {
  const client = mqtt.connect(`mqtt://127.0.0.1:${cairn.mqttPort!}`, { clientId, protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 5_000, ...options });
  clients.push(client);
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', reject);
  });
  return client;
}

function collect(client: MqttClient): IPublishPacket[] {
  const received: IPublishPacket[] = [];
  client.on('message', (_topic, _payload, packet) => received.push(packet));
  return received;
}

const persistentSession: IClientOptions = { clean: false, properties: { sessionExpiryInterval: 3600 } };

/** A persistent session subscribed to `filter` whose client then goes away. */
async function subscribeAndLeave(cairn: RunningCairn, clientId: string, filter: string): Promise<void> {
  const client = await mqttClient(cairn, clientId, persistentSession);
  await client.subscribeAsync(filter, { qos: 1 });
  client.end(true);
}

/** The client of that session back; what it gets from the first packet on (its queue comes right after CONNACK). */
function comeBack(cairn: RunningCairn, clientId: string): IPublishPacket[] {
  const client = mqtt.connect(`mqtt://127.0.0.1:${cairn.mqttPort!}`, { clientId, protocolVersion: 5, reconnectPeriod: 0, ...persistentSession });
  clients.push(client);
  return collect(client);
}

/** A queue bound to amq.topic and the messages an amqplib consumer gets from it. */
async function amqpConsumer(cairn: RunningCairn, queue: string, key: string): Promise<ConsumeMessage[]> {
  const channel = await embedded.channel(cairn);
  await channel.assertQueue(queue, { durable: true });
  await channel.bindQueue(queue, 'amq.topic', key);
  const received: ConsumeMessage[] = [];
  await channel.consume(queue, (message) => { if (message) received.push(message); }, { noAck: true });
  return received;
}

it('an AMQP consumer gets a v5 publish\'s properties as AMQP properties', async () => {
  const cairn = await start();
  const received = await amqpConsumer(cairn, 'requests', 'bridge.#');
  const publisher = await mqttClient(cairn, 'v5-publisher');
  await publisher.publishAsync('bridge/req', '{"q":1}', {
    qos: 1,
    properties: {
      userProperties: { origin: 'sensor-7', tag: ['a', 'b'] }, contentType: 'application/json', correlationData: Buffer.from('req-42'),
      responseTopic: 'replies/here', messageExpiryInterval: 60, payloadFormatIndicator: true,
    },
  });
  await until(() => received.length === 1, 'the bridged message');
  const { properties, fields, content } = received[0]!;
  expect(fields.routingKey).toBe('bridge.req');
  expect(content.toString()).toBe('{"q":1}');
  expect(properties).toMatchObject({
    deliveryMode: 2, contentType: 'application/json', correlationId: 'req-42', replyTo: 'replies.here', expiration: '60000',
    headers: { origin: 'sensor-7', tag: ['a', 'b'], 'x-mqtt-payload-format-indicator': 1 },
  });
});

it('non-UTF-8 correlation data crosses in x-correlation-data and comes back byte for byte (request and reply)', async () => {
  const cairn = await start();
  const channel = await embedded.channel(cairn);
  await channel.assertQueue('service', { durable: false });
  await channel.bindQueue('service', 'amq.topic', 'service.#');
  // The AMQP side answers to reply_to on amq.topic, echoing the correlation as it came.
  await channel.consume('service', (message) => {
    if (!message) return;
    const { replyTo, correlationId, headers } = message.properties as { replyTo: string; correlationId?: string; headers: Record<string, unknown> };
    channel.publish('amq.topic', replyTo, Buffer.from('answer'), { ...(correlationId === undefined ? {} : { correlationId }), headers: { 'x-correlation-data': headers['x-correlation-data'] } });
  }, { noAck: true });
  const requester = await mqttClient(cairn, 'requester');
  await requester.subscribeAsync('answers/requester', { qos: 1 });
  const answers = collect(requester);
  const correlation = Buffer.from([0xff, 0x00, 0xfe, 0x01]);
  await requester.publishAsync('service/ask', 'question', { qos: 1, properties: { responseTopic: 'answers/requester', correlationData: correlation } });
  await until(() => answers.length === 1, 'the answer');
  expect(answers[0]?.topic).toBe('answers/requester');
  expect(Buffer.from(answers[0]!.properties!.correlationData!)).toEqual(correlation);
});

it('a v5 subscriber gets an AMQP publish\'s properties; a 3.1.1 subscriber the same message without them', async () => {
  const cairn = await start();
  const v5 = await mqttClient(cairn, 'v5-sub');
  await v5.subscribeAsync('bridge/#', { qos: 1 });
  const v5Received = collect(v5);
  const old = await mqttClient(cairn, 'old-sub', { protocolVersion: 4 });
  await old.subscribeAsync('bridge/#', { qos: 1 });
  const oldReceived = collect(old);
  const channel = await embedded.confirmChannel(cairn);
  channel.publish('amq.topic', 'bridge.resp', Buffer.from('reply'), {
    persistent: true, contentType: 'text/plain', correlationId: 'req-42', replyTo: 'replies.back', expiration: '30000',
    headers: { origin: 'svc', n: 5, tag: ['a', 'b'], 'x-mqtt-payload-format-indicator': 1, nested: { no: 'tables' } },
  });
  await channel.waitForConfirms();
  await until(() => v5Received.length === 1 && oldReceived.length === 1, 'the message on both subscribers');
  expect(v5Received[0]?.topic).toBe('bridge/resp');
  expect(v5Received[0]?.properties).toMatchObject({
    contentType: 'text/plain', correlationData: Buffer.from('req-42'), responseTopic: 'replies/back', messageExpiryInterval: 30,
    payloadFormatIndicator: true, userProperties: { origin: 'svc', n: '5', tag: ['a', 'b'] },
  });
  expect(v5Received[0]?.properties?.userProperties).not.toHaveProperty('nested');
  expect(oldReceived[0]?.payload.toString()).toBe('reply');
  expect(oldReceived[0]?.properties).toBeUndefined();
});

it('a v5 message that expires in an AMQP queue is never delivered; the queue\'s TTL machinery drops it', async () => {
  const clock = new ManualClock();
  const cairn = await start(clock);
  const channel = await embedded.channel(cairn);
  await channel.assertQueue('held', { durable: true });
  await channel.bindQueue('held', 'amq.topic', 'held.#');
  const publisher = await mqttClient(cairn, 'held-pub');
  await publisher.publishAsync('held/a', 'short-lived', { qos: 1, properties: { messageExpiryInterval: 5 } });
  await publisher.publishAsync('held/a', 'long-lived', { qos: 1, properties: { messageExpiryInterval: 600 } });
  clock.advance(5_001);
  const first = await channel.get('held', { noAck: true });
  expect(first && first.content.toString()).toBe('long-lived');
  expect(first && first.properties.expiration).toBe('600000');
  expect(await channel.get('held', { noAck: true })).toBe(false);
});

it('an AMQP expiration expires the message in an MQTT session\'s queue: never delivered, dropped as expired', async () => {
  const clock = new ManualClock();
  const cairn = await start(clock);
  await subscribeAndLeave(cairn, 'away', 'timed/#');
  const channel = await embedded.confirmChannel(cairn);
  channel.publish('amq.topic', 'timed.a', Buffer.from('short-lived'), { persistent: true, expiration: '5000' });
  channel.publish('amq.topic', 'timed.a', Buffer.from('long-lived'), { persistent: true, expiration: '600000' });
  await channel.waitForConfirms();
  clock.advance(6_000);
  const received = comeBack(cairn, 'away');
  await until(() => received.length === 1, 'the unexpired message');
  const drops = [...cairn.broker.log.read()].filter((record) => record.kind === RecordKind.drop).map((record) => record.body);
  expect(drops).toContainEqual({ c: 'away', s: [1], why: 'expired' });
  expect(received.map((packet) => packet.payload.toString())).toEqual(['long-lived']);
  expect(received[0]?.properties?.messageExpiryInterval).toBe(594);
});

it('a v5 message that expires in a shared-subscription group is never delivered to a member', async () => {
  const clock = new ManualClock();
  const cairn = await start(clock);
  await subscribeAndLeave(cairn, 'member', '$share/g/jobs/#');
  const publisher = await mqttClient(cairn, 'jobs-pub');
  await publisher.publishAsync('jobs/a', 'short-lived', { qos: 1, properties: { messageExpiryInterval: 5 } });
  await publisher.publishAsync('jobs/a', 'long-lived', { qos: 1, properties: { messageExpiryInterval: 600 } });
  clock.advance(6_000);
  const received = comeBack(cairn, 'member');
  await until(() => received.length === 1, 'the unexpired message');
  await publisher.publishAsync('jobs/a', 'marker', { qos: 1 });
  await until(() => received.length === 2, 'a marker after it');
  expect(received.map((packet) => packet.payload.toString())).toEqual(['long-lived', 'marker']);
  // The remaining interval by the broker's clock, not the machine's.
  expect(received[0]?.properties?.messageExpiryInterval).toBe(594);
  const drops = [...cairn.broker.log.read()].filter((record) => record.kind === RecordKind.drop).map((record) => record.body);
  expect(drops).toContainEqual({ g: '$share/g/jobs/#', s: [1], why: 'expired' });
});
