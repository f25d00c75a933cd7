/**
 * MQTT 5 beside 3.1.1 on the same listener, against the real broker on the
 * real log: MQTT.js with protocolVersion 5 (a real client) for CONNACK's
 * properties, reason codes on the acknowledgements, topic aliases and the
 * server's DISCONNECT on takeover; a raw v5 client (mqtt-packet's encoder)
 * for what MQTT.js will not send: a duplicate or misplaced property, a bad
 * topic alias, AUTH, too many unacknowledged PUBLISHes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import type { IConnackPacket, IDisconnectPacket, IPublishPacket, Packet } from 'mqtt-packet';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { SegmentedLog } from '../../src/log/index.js';
import { silentLogger } from '../../src/logger.js';
import type { MqttLimits } from '../../src/protocols/mqtt/limits.js';
import { startMqttServer, type MqttServer } from '../../src/protocols/mqtt/server.js';
import { RawMqttClient } from '../support/raw-mqtt.js';
import { until } from '../support/kit.js';

let dataDir: string;
let log: SegmentedLog;
let broker: Broker;
let server: MqttServer;
const clients: MqttClient[] = [];
const raws: RawMqttClient[] = [];

async function boot(limits: Partial<MqttLimits> = {}): Promise<void> {
  log = await SegmentedLog.open({ dir: dataDir, logger: silentLogger() });
  broker = Broker.open({ log, logger: silentLogger() });
  server = await startMqttServer({ core: broker.mqtt, host: '127.0.0.1', port: 0, logger: silentLogger(), limits });
}

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'cairn-mqtt5-'));
  await boot();
});

afterEach(async () => {
  for (const client of clients.splice(0)) client.end(true);
  for (const raw of raws.splice(0)) raw.close();
  await server.close();
  await broker.flush();
  await log.close().catch(() => undefined);
  await rm(dataDir, { recursive: true, force: true });
});

function open(clientId: string, options: IClientOptions = {}): Promise<{ client: MqttClient; connack: IConnackPacket }> {
  const client = mqtt.connect(`mqtt://127.0.0.1:${server.port}`, { clientId, protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 5_000, ...options });
  clients.push(client);
  return new Promise((resolve, reject) => {
    client.once('connect', (connack) => resolve({ client, connack }));
    client.once('error', reject);
  });
}

async function raw(clientId = 'raw5', properties?: Record<string, unknown>): Promise<{ client: RawMqttClient; connack: Packet }> {
  const client = await RawMqttClient.open(server.port, 5);
  raws.push(client);
  const connack = await client.connect(clientId, true, properties);
  return { client, connack };
}

function disconnectOf(client: RawMqttClient): Promise<IDisconnectPacket> {
  return client.waitFor((packet) => packet.cmd === 'disconnect') as Promise<IDisconnectPacket>;
}

describe('MQTT 5 CONNECT on the 3.1.1 listener', () => {
  it('accepts MQTT.js v5 and answers CONNACK 0 with the broker bounds and what it supports [MQTT-3.2.2.3]', async () => {
    const { connack } = await open('v5-props');
    expect(connack.reasonCode).toBe(0);
    expect(connack.properties).toMatchObject({
      receiveMaximum: 1024, maximumPacketSize: 1024 * 1024, topicAliasMaximum: 64, retainAvailable: true,
      wildcardSubscriptionAvailable: true, subscriptionIdentifiersAvailable: true, sharedSubscriptionAvailable: true,
    });
    expect(connack.properties?.assignedClientIdentifier).toBeUndefined();
  });

  it('assigns a client identifier to an empty one and says which [MQTT-3.2.2-16]', async () => {
    const { client, connack } = await raw('');
    expect(connack).toMatchObject({ cmd: 'connack', reasonCode: 0 });
    expect((connack as IConnackPacket).properties?.assignedClientIdentifier).toMatch(/^cairn-/);
    client.close();
  });

  it('still serves a 3.1.1 client beside a v5 one, and messages cross between them', async () => {
    const { client: subscriber } = await open('v5-sub');
    await subscriber.subscribeAsync('mixed/#', { qos: 1 });
    const old = mqtt.connect(`mqtt://127.0.0.1:${server.port}`, { clientId: 'v4-pub', protocolVersion: 4, reconnectPeriod: 0 });
    clients.push(old);
    const received = new Promise<IPublishPacket>((resolve) => subscriber.on('message', (_topic, _payload, packet) => resolve(packet)));
    await old.publishAsync('mixed/a', 'from 3.1.1', { qos: 1 });
    const packet = await received;
    expect(packet.topic).toBe('mixed/a');
    expect(packet.payload.toString()).toBe('from 3.1.1');
  });

  it('refuses enhanced authentication with CONNACK 0x8C [MQTT-4.12.0-1]', async () => {
    const client = await RawMqttClient.open(server.port, 5);
    raws.push(client);
    const connack = await client.connect('auth-method', true, { authenticationMethod: 'SCRAM-SHA-1' });
    expect(connack).toMatchObject({ cmd: 'connack', reasonCode: 0x8c });
    await client.waitClosed();
  });

  it('answers AUTH after a CONNECT without an authentication method with DISCONNECT 0x82 and closes', async () => {
    const { client } = await raw('auth-packet');
    client.send({ cmd: 'auth', reasonCode: 0x18, properties: { authenticationMethod: 'x' } });
    expect((await disconnectOf(client)).reasonCode).toBe(0x82);
    await client.waitClosed();
  });

  it('tells the old connection DISCONNECT 0x8E when a new one takes the client id [MQTT-3.1.4-3]', async () => {
    const { client: first } = await raw('taken');
    const disconnect = disconnectOf(first);
    await raw('taken');
    expect((await disconnect).reasonCode).toBe(0x8e);
    await first.waitClosed();
  });
});

describe('MQTT 5 reason codes on acknowledgements', () => {
  it('SUBACK carries a reason code per filter: granted QoS, 0x8F for an invalid filter', async () => {
    const { client } = await raw('suback');
    client.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'good/+', qos: 2 }, { topic: 'bad/#/x', qos: 1 }, { topic: 'ok', qos: 0 }] });
    expect(await client.waitFor((packet) => packet.cmd === 'suback')).toMatchObject({ granted: [2, 0x8f, 0] });
  });

  it('UNSUBACK says 0x00 for a subscribed filter and 0x11 for one that was not [MQTT-3.11.3]', async () => {
    const { client } = await raw('unsuback');
    client.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'x/y', qos: 1 }] });
    await client.waitFor((packet) => packet.cmd === 'suback');
    client.send({ cmd: 'unsubscribe', messageId: 2, unsubscriptions: ['x/y', 'never/subscribed'] });
    expect(await client.waitFor((packet) => packet.cmd === 'unsuback')).toMatchObject({ messageId: 2, granted: [0x00, 0x11] });
  });

  it('PUBACK and PUBREC/PUBCOMP succeed with reason code 0 for MQTT.js', async () => {
    const { client } = await open('acks');
    const puback = await client.publishAsync('acks/q1', 'one', { qos: 1 });
    expect((puback as { reasonCode?: number } | undefined)?.reasonCode ?? 0).toBe(0);
    await client.publishAsync('acks/q2', 'two', { qos: 2 });
  });
});

describe('MQTT 5 topic aliases, client to server', () => {
  it('a PUBLISH with an empty topic and a known alias goes to the aliased topic [MQTT-3.3.2-12]', async () => {
    const { client: subscriber } = await open('alias-sub');
    await subscriber.subscribeAsync('alias/#', { qos: 1 });
    const topics: string[] = [];
    subscriber.on('message', (topic) => topics.push(topic));
    const { client } = await raw('alias-pub');
    client.send({ cmd: 'publish', topic: 'alias/long/topic', payload: 'first', qos: 1, messageId: 1, properties: { topicAlias: 3 } });
    client.send({ cmd: 'publish', topic: '', payload: 'second', qos: 1, messageId: 2, properties: { topicAlias: 3 } });
    await client.waitFor((packet) => packet.cmd === 'puback' && packet.messageId === 2);
    await until(() => topics.length === 2, 'both aliased messages delivered');
    expect(topics).toEqual(['alias/long/topic', 'alias/long/topic']);
  });

  it('MQTT.js with automatic topic aliases publishes through them', async () => {
    const { client: subscriber } = await open('auto-alias-sub');
    await subscriber.subscribeAsync('auto/alias', { qos: 1 });
    let count = 0;
    subscriber.on('message', () => (count += 1));
    const { client } = await open('auto-alias-pub', { autoUseTopicAlias: true });
    for (let i = 0; i < 3; i++) await client.publishAsync('auto/alias', `m${i}`, { qos: 1 });
    await until(() => count === 3, 'three messages through one alias');
  });

  it('an alias above the announced maximum gets DISCONNECT 0x94 [MQTT-3.3.2-9]', async () => {
    const { client } = await raw('alias-high');
    client.send({ cmd: 'publish', topic: 't', payload: 'x', qos: 0, properties: { topicAlias: 65 } });
    expect((await disconnectOf(client)).reasonCode).toBe(0x94);
    await client.waitClosed();
  });

  it('alias 0 gets DISCONNECT 0x94 [MQTT-3.3.2-8]', async () => {
    const { client } = await raw('alias-zero');
    client.send({ cmd: 'publish', topic: 't', payload: 'x', qos: 0, properties: { topicAlias: 0 } });
    expect((await disconnectOf(client)).reasonCode).toBe(0x94);
  });

  it('an empty topic with an alias never set is a protocol error 0x82', async () => {
    const { client } = await raw('alias-unset');
    client.send({ cmd: 'publish', topic: '', payload: 'x', qos: 0, properties: { topicAlias: 5 } });
    expect((await disconnectOf(client)).reasonCode).toBe(0x82);
  });
});

describe('bad MQTT 5 input gets its reason code and a close', () => {
  it('a property repeated on PUBLISH: DISCONNECT 0x82 Protocol Error', async () => {
    const { client } = await raw('dup-prop');
    // Two Message Expiry Interval properties (0x02), written by hand: mqtt-packet would not repeat one.
    const topic = Buffer.from('t');
    const properties = Buffer.from([0x0a, 0x02, 0, 0, 0, 5, 0x02, 0, 0, 0, 6]);
    const body = Buffer.concat([Buffer.from([0, topic.length]), topic, properties, Buffer.from('x')]);
    client.writeRaw(Buffer.concat([Buffer.from([0x30, body.length]), body]));
    expect((await disconnectOf(client)).reasonCode).toBe(0x82);
    await client.waitClosed();
  });

  it('a property not allowed on the packet (Session Expiry on PUBLISH): DISCONNECT 0x81 Malformed Packet', async () => {
    const { client } = await raw('wrong-prop');
    const topic = Buffer.from('t');
    const properties = Buffer.from([0x05, 0x11, 0, 0, 0, 5]);
    const body = Buffer.concat([Buffer.from([0, topic.length]), topic, properties, Buffer.from('x')]);
    client.writeRaw(Buffer.concat([Buffer.from([0x30, body.length]), body]));
    expect((await disconnectOf(client)).reasonCode).toBe(0x81);
  });

  it('a subscription identifier on a client PUBLISH: DISCONNECT 0x82 [MQTT-3.3.4-6]', async () => {
    const { client } = await raw('sub-id-publish');
    const topic = Buffer.from('t');
    const properties = Buffer.from([0x02, 0x0b, 0x01]);
    const body = Buffer.concat([Buffer.from([0, topic.length]), topic, properties, Buffer.from('x')]);
    client.writeRaw(Buffer.concat([Buffer.from([0x30, body.length]), body]));
    expect((await disconnectOf(client)).reasonCode).toBe(0x82);
  });

  it('a malformed v5 CONNECT (a property not valid on CONNECT) gets CONNACK 0x81 and a close', async () => {
    const client = await RawMqttClient.open(server.port, 5);
    raws.push(client);
    const connack = await client.connect('bad-connect', true, { topicAlias: 3 });
    expect(connack).toMatchObject({ cmd: 'connack', reasonCode: 0x81 });
    await client.waitClosed();
  });

  it('a packet above the maximum packet size: DISCONNECT 0x95', async () => {
    await server.close();
    await boot({ packetBytesMax: 1024 });
    const { client } = await raw('too-large');
    client.send({ cmd: 'publish', topic: 'big', payload: Buffer.alloc(2048), qos: 0 });
    expect((await disconnectOf(client)).reasonCode).toBe(0x95);
  });

  it('more unfinished QoS 2 PUBLISHes than the Receive Maximum: DISCONNECT 0x93 [MQTT-3.3.4-9]', async () => {
    await server.close();
    await boot({ inboundAcksPendingMax: 4 });
    const { client, connack } = await raw('flood');
    expect((connack as IConnackPacket).properties?.receiveMaximum).toBe(4);
    // A QoS 2 flow counts until its PUBCOMP: five PUBLISHes and no PUBREL is one too many.
    for (const messageId of [1, 2, 3, 4]) {
      client.send({ cmd: 'publish', topic: 'flood', payload: 'x', qos: 2, messageId });
      await client.waitFor((packet) => packet.cmd === 'pubrec' && packet.messageId === messageId);
    }
    client.send({ cmd: 'publish', topic: 'flood', payload: 'x', qos: 2, messageId: 5 });
    expect((await disconnectOf(client)).reasonCode).toBe(0x93);
  });
});

describe('MQTT 5 flow control, server to client', () => {
  it('never has more QoS 1 deliveries unacknowledged than the client\'s Receive Maximum [MQTT-4.9.0-1]', async () => {
    const { client: publisher } = await open('window-pub');
    const subscriber = await RawMqttClient.open(server.port, 5);
    raws.push(subscriber);
    await subscriber.connect('window-sub', true, { receiveMaximum: 2 });
    subscriber.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'window', qos: 1 }] });
    await subscriber.waitFor((packet) => packet.cmd === 'suback');
    for (let i = 0; i < 5; i++) await publisher.publishAsync('window', `m${i}`, { qos: 1 });
    const publishes = () => subscriber.received.filter((packet) => packet.cmd === 'publish') as IPublishPacket[];
    await until(() => publishes().length === 2, 'two deliveries');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(publishes()).toHaveLength(2);
    for (const packet of publishes()) subscriber.send({ cmd: 'puback', messageId: packet.messageId });
    await until(() => publishes().length === 4, 'two more after the PUBACKs');
    expect(publishes().map((packet) => packet.payload.toString())).toEqual(['m0', 'm1', 'm2', 'm3']);
  });

  it('discards a PUBLISH larger than the client\'s Maximum Packet Size and delivers the next [MQTT-3.1.2-25]', async () => {
    const { client: publisher } = await open('small-pub');
    const subscriber = await RawMqttClient.open(server.port, 5);
    raws.push(subscriber);
    await subscriber.connect('small-sub', true, { maximumPacketSize: 200, receiveMaximum: 1 });
    subscriber.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'small', qos: 1 }] });
    await subscriber.waitFor((packet) => packet.cmd === 'suback');
    await publisher.publishAsync('small', Buffer.alloc(500, 1), { qos: 1 });
    await publisher.publishAsync('small', 'fits', { qos: 1 });
    const packet = (await subscriber.waitFor((candidate) => candidate.cmd === 'publish')) as IPublishPacket;
    expect(packet.payload.toString()).toBe('fits');
  });
});
