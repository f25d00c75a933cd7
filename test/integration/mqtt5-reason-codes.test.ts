/**
 * MQTT 5 reason codes and checks beyond the first stages, against the real
 * broker: PUBCOMP 0x92 for a PUBREL whose packet id is unknown, PUBACK/PUBREC
 * 0x10 when nothing matched, PUBACK 0x97 when a full reject-publish queue
 * refused the message, 0x99 for a payload that is not the UTF-8 its
 * Payload Format Indicator says (PUBACK, DISCONNECT for QoS 0, CONNACK for a
 * will), 0x81 for ill-formed UTF-8 or U+0000 inside property strings, and the
 * topic aliases the server sets up towards a client that allows them. Raw
 * packets (mqtt-packet's codec) where the test must choose the bytes; MQTT.js
 * where a real client proves it copes.
 */
import type { MqttClient } from 'mqtt';
import type { IDisconnectPacket, IPublishPacket, Packet } from 'mqtt-packet';
import { afterEach, describe, expect, it } from 'vitest';
import { useInProcessBroker } from '../support/in-process-broker.js';
import { until } from '../support/kit.js';
import { collectPublishes } from '../support/mqtt5-client.js';
import { RawMqttClient } from '../support/raw-mqtt.js';

const cairn = useInProcessBroker('mqtt5-codes');
const raws: RawMqttClient[] = [];

afterEach(() => {
  for (const raw of raws.splice(0)) raw.close();
});

async function open(clientId: string, topicAliasMaximum?: number): Promise<MqttClient> {
  return (await cairn.open(clientId, topicAliasMaximum === undefined ? {} : { properties: { topicAliasMaximum } })).client;
}

async function raw(clientId: string, properties?: Record<string, unknown>, protocolVersion: 4 | 5 = 5): Promise<RawMqttClient> {
  const client = await RawMqttClient.open(cairn.server.port, protocolVersion);
  raws.push(client);
  const connack = await client.connect(clientId, true, properties);
  expect(connack).toMatchObject({ cmd: 'connack' });
  return client;
}

const ackOf = (client: RawMqttClient, cmd: string, messageId: number): Promise<Packet> =>
  client.waitFor((packet) => packet.cmd === cmd && packet.messageId === messageId);

const reasonCodeOf = (packet: Packet): number => (packet as { reasonCode?: number }).reasonCode ?? 0;

function disconnectOf(client: RawMqttClient): Promise<IDisconnectPacket> {
  return client.waitFor((packet) => packet.cmd === 'disconnect') as Promise<IDisconnectPacket>;
}

/** A v5 PUBLISH written by hand: topic `t`, QoS 1 id 1 (or QoS 0), the given property bytes and payload. */
function publishBytes(qos: 0 | 1, properties: Buffer, payload: Buffer): Buffer {
  const topic = Buffer.from('t');
  const id = qos === 1 ? Buffer.from([0, 1]) : Buffer.alloc(0);
  const body = Buffer.concat([Buffer.from([0, topic.length]), topic, id, Buffer.from([properties.length]), properties, payload]);
  return Buffer.concat([Buffer.from([qos === 1 ? 0x32 : 0x30, body.length]), body]);
}

/** A UTF-8 string property: identifier, length, bytes. */
const stringProperty = (identifier: number, bytes: number[]): Buffer => Buffer.from([identifier, 0, bytes.length, ...bytes]);

describe('PUBREL for an unknown packet id: PUBCOMP 0x92 [MQTT-3.7.2.1]', () => {
  it('a known id gets PUBCOMP 0x00, an unknown one 0x92; a 3.1.1 client gets a plain PUBCOMP', async () => {
    const client = await raw('pubrel-v5');
    client.send({ cmd: 'publish', topic: 'q2/x', payload: 'x', qos: 2, messageId: 5 });
    await ackOf(client, 'pubrec', 5);
    client.send({ cmd: 'pubrel', messageId: 5 });
    expect(reasonCodeOf(await ackOf(client, 'pubcomp', 5))).toBe(0);
    client.send({ cmd: 'pubrel', messageId: 6 });
    expect(reasonCodeOf(await ackOf(client, 'pubcomp', 6))).toBe(0x92);
    const old = await raw('pubrel-311', undefined, 4);
    old.send({ cmd: 'pubrel', messageId: 7 });
    expect(await ackOf(old, 'pubcomp', 7)).toMatchObject({ length: 2 });
  });
});

describe('No matching subscribers: PUBACK/PUBREC 0x10', () => {
  it('says 0x10 when nothing took the message and 0x00 when a subscriber did; MQTT.js takes both as success', async () => {
    const client = await raw('nomatch');
    client.send({ cmd: 'publish', topic: 'nobody/here', payload: 'x', qos: 1, messageId: 1 });
    expect(reasonCodeOf(await ackOf(client, 'puback', 1))).toBe(0x10);
    client.send({ cmd: 'publish', topic: 'nobody/here', payload: 'x', qos: 2, messageId: 2 });
    expect(reasonCodeOf(await ackOf(client, 'pubrec', 2))).toBe(0x10);
    const subscriber = await open('nomatch-sub');
    await subscriber.subscribeAsync('somebody/#', { qos: 1 });
    client.send({ cmd: 'publish', topic: 'somebody/here', payload: 'x', qos: 1, messageId: 3 });
    expect(reasonCodeOf(await ackOf(client, 'puback', 3))).toBe(0);
    const publisher = await open('nomatch-mqttjs');
    // Resolves (0x10 is not an error to it): a rejection would fail the test.
    await publisher.publishAsync('nobody/at/all', 'x', { qos: 1 });
    await publisher.publishAsync('nobody/at/all', 'x', { qos: 2 });
  });
});

describe('Quota exceeded: PUBACK 0x97', () => {
  it('a QoS 1 message that a full reject-publish queue bound to amq.topic refuses gets 0x97; the subscribers still get it', async () => {
    const amqp = cairn.broker.amqp;
    amqp.declareQueue('quota-q', { passive: false, durable: false, exclusive: false, autoDelete: false, arguments: { 'x-max-length': 1, 'x-overflow': 'reject-publish' }, owner: 'test' });
    await amqp.bindQueue('quota-q', 'amq.topic', 'quota.t', 'test');
    const subscriber = await open('quota-sub');
    await subscriber.subscribeAsync('quota/t', { qos: 1 });
    const received = collectPublishes(subscriber);
    const client = await raw('quota-pub');
    client.send({ cmd: 'publish', topic: 'quota/t', payload: 'first', qos: 1, messageId: 1 });
    expect(reasonCodeOf(await ackOf(client, 'puback', 1))).toBe(0);
    client.send({ cmd: 'publish', topic: 'quota/t', payload: 'second', qos: 1, messageId: 2 });
    expect(reasonCodeOf(await ackOf(client, 'puback', 2))).toBe(0x97);
    await until(() => received.length === 2, 'both messages at the subscriber');
  });
});

describe('Payload Format Indicator 1 with a payload that is not UTF-8: 0x99', () => {
  const formatUtf8 = Buffer.from([0x01, 0x01]);

  it('QoS 1: PUBACK 0x99 and the message goes nowhere; a UTF-8 one goes through', async () => {
    const subscriber = await open('pfi-sub');
    await subscriber.subscribeAsync('t', { qos: 1 });
    const received = collectPublishes(subscriber);
    const client = await raw('pfi-pub');
    client.writeRaw(publishBytes(1, formatUtf8, Buffer.from([0x61, 0xff, 0x62])));
    expect(reasonCodeOf(await ackOf(client, 'puback', 1))).toBe(0x99);
    client.writeRaw(publishBytes(1, formatUtf8, Buffer.from('h\u00e9 \u2713', 'utf8')));
    await until(() => received.length === 1, 'the UTF-8 message');
    expect(received[0]?.payload.toString()).toBe('h\u00e9 \u2713');
  });

  it('QoS 0: DISCONNECT 0x99', async () => {
    const client = await raw('pfi-qos0');
    client.writeRaw(publishBytes(0, formatUtf8, Buffer.from([0xc3, 0x28])));
    expect((await disconnectOf(client)).reasonCode).toBe(0x99);
  });

  it('a will that says UTF-8 but is not: CONNACK 0x99', async () => {
    const client = await RawMqttClient.open(cairn.server.port, 5);
    raws.push(client);
    client.send({
      cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clean: true, clientId: 'pfi-will', keepalive: 60,
      will: { topic: 'w', payload: Buffer.from([0xff]), qos: 0, retain: false, properties: { payloadFormatIndicator: true } },
    });
    expect(await client.waitFor((packet) => packet.cmd === 'connack')).toMatchObject({ reasonCode: 0x99 });
  });
});

describe('UTF-8 inside property strings [MQTT-1.5.4-1] [MQTT-1.5.4-2]', () => {
  it('an ill-formed Content Type: DISCONNECT 0x81', async () => {
    const client = await raw('prop-utf8');
    client.writeRaw(publishBytes(1, stringProperty(0x03, [0x74, 0xff]), Buffer.from('x')));
    expect((await disconnectOf(client)).reasonCode).toBe(0x81);
  });

  it('U+0000 in a Response Topic: DISCONNECT 0x81', async () => {
    const client = await raw('prop-null');
    client.writeRaw(publishBytes(0, stringProperty(0x08, [0x72, 0x00]), Buffer.from('x')));
    expect((await disconnectOf(client)).reasonCode).toBe(0x81);
  });

  it('an ill-formed user property value on SUBSCRIBE: DISCONNECT 0x81', async () => {
    const client = await raw('prop-user');
    const pair = Buffer.from([0x26, 0, 1, 0x6b, 0, 2, 0xe2, 0x82]);
    const filter = Buffer.from('f');
    const body = Buffer.concat([Buffer.from([0, 9, pair.length]), pair, Buffer.from([0, filter.length]), filter, Buffer.from([1])]);
    client.writeRaw(Buffer.concat([Buffer.from([0x82, body.length]), body]));
    expect((await disconnectOf(client)).reasonCode).toBe(0x81);
  });

  it('an ill-formed user property on CONNECT: CONNACK 0x81', async () => {
    const client = await RawMqttClient.open(cairn.server.port, 5);
    raws.push(client);
    const name = Buffer.from('MQTT');
    const clientId = Buffer.from('c');
    const properties = Buffer.from([0x26, 0, 1, 0xff, 0, 1, 0x76]);
    const body = Buffer.concat([Buffer.from([0, name.length]), name, Buffer.from([5, 0x02, 0, 60, properties.length]), properties, Buffer.from([0, clientId.length]), clientId]);
    client.writeRaw(Buffer.concat([Buffer.from([0x10, body.length]), body]));
    expect(await client.waitFor((packet) => packet.cmd === 'connack')).toMatchObject({ reasonCode: 0x81 });
  });

  it('a real U+FFFD in a property string is well-formed and travels', async () => {
    const subscriber = await open('prop-fffd-sub');
    await subscriber.subscribeAsync('t', { qos: 1 });
    const received = collectPublishes(subscriber);
    const client = await raw('prop-fffd');
    client.writeRaw(publishBytes(1, stringProperty(0x03, [...Buffer.from('a\ufffdb', 'utf8')]), Buffer.from('x')));
    await until(() => received.length === 1, 'the message');
    expect(received[0]?.properties?.contentType).toBe('a\ufffdb');
  });
});

describe('topic aliases, server to client [MQTT-3.3.2.3.4]', () => {
  it('names a topic with its alias the first time, then the alias alone; the least recently used alias is rebound', async () => {
    const client = await raw('alias-out', { topicAliasMaximum: 2 });
    client.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'al/#', qos: 0 }] });
    await ackOf(client, 'suback', 1);
    const publisher = await open('alias-out-pub');
    for (const topic of ['al/a', 'al/b', 'al/a', 'al/c', 'al/b']) await publisher.publishAsync(topic, topic, { qos: 0 });
    const publishes = (): IPublishPacket[] => client.received.filter((packet): packet is IPublishPacket => packet.cmd === 'publish');
    await until(() => publishes().length === 5, 'five deliveries');
    expect(publishes().map((packet) => packet.payload.toString())).toEqual(['al/a', 'al/b', 'al/a', 'al/c', 'al/b']);
    expect(publishes().map((packet) => [packet.topic, packet.properties?.topicAlias])).toEqual([
      ['al/a', 1], ['al/b', 2], ['', 1], ['al/c', 2], ['al/b', 1],
    ]);
  });

  it('MQTT.js with a Topic Alias Maximum receives every message under its right topic', async () => {
    const subscriber = await open('alias-mqttjs', 3);
    const topics: string[] = [];
    subscriber.on('message', (topic) => topics.push(topic));
    await subscriber.subscribeAsync('am/#', { qos: 1 });
    const publisher = await open('alias-mqttjs-pub');
    const sent = ['am/1', 'am/2', 'am/1', 'am/3', 'am/4', 'am/1', 'am/2', 'am/2', 'am/5', 'am/3'];
    for (const topic of sent) await publisher.publishAsync(topic, topic, { qos: 1 });
    await until(() => topics.length === sent.length, 'every message');
    expect(topics).toEqual(sent);
  });
});
