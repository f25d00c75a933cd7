/**
 * MQTT 5 PUBLISH properties end to end, against the real broker on the real
 * log, with MQTT.js at protocolVersion 5: carried from publisher to
 * subscriber live, kept in the msg record for a persistent session across a
 * broker restart, the message expiry interval counted down while a message
 * waits (the remaining interval is sent; an expired message is never
 * delivered, and its drop is a record), retained values with their
 * properties, will properties, and a 3.1.1 subscriber getting the same
 * message without them. The broker's clock is injected so that expiry is a
 * fact the test sets, not a sleep.
 */
import type { IClientOptions, MqttClient } from 'mqtt';
import type { IPublishPacket } from 'mqtt-packet';
import { describe, expect, it } from 'vitest';
import { summarize } from '../../src/inspect/format.js';
import { RecordKind } from '../../src/projections/records.js';
import { useInProcessBroker } from '../support/in-process-broker.js';
import { until } from '../support/kit.js';
import { collectPublishes } from '../support/mqtt5-client.js';

const cairn = useInProcessBroker('mqtt5-props');

async function open(clientId: string, options: IClientOptions = {}): Promise<MqttClient> {
  return (await cairn.open(clientId, options)).client;
}

const collect = collectPublishes;

const allProperties = {
  payloadFormatIndicator: true,
  messageExpiryInterval: 3600,
  contentType: 'application/json',
  responseTopic: 'replies/here',
  correlationData: Buffer.from([1, 2, 3, 250]),
  userProperties: { origin: 'sensor-7', tag: ['a', 'b'] },
};

describe('PUBLISH properties end to end', () => {
  it('carries every property from a v5 publisher to a v5 subscriber, live', async () => {
    const subscriber = await open('live-sub');
    await subscriber.subscribeAsync('props/#', { qos: 1 });
    const received = collect(subscriber);
    const publisher = await open('live-pub');
    await publisher.publishAsync('props/live', '{"v":1}', { qos: 1, properties: allProperties });
    await until(() => received.length === 1, 'the message');
    expect(received[0]?.properties).toMatchObject({ ...allProperties, correlationData: Buffer.from([1, 2, 3, 250]) });
  });

  it('a 3.1.1 subscriber gets the same message without properties', async () => {
    const old = cairn.connect('old-sub', { protocolVersion: 4 });
    await new Promise<void>((resolve) => old.once('connect', () => resolve()));
    await old.subscribeAsync('props/#', { qos: 1 });
    const received = collect(old);
    const publisher = await open('to-old-pub');
    await publisher.publishAsync('props/old', 'plain', { qos: 1, properties: allProperties });
    await until(() => received.length === 1, 'the message');
    expect(received[0]?.payload.toString()).toBe('plain');
  });

  it('keeps the properties in the log: a persistent session gets them after a broker restart', async () => {
    const subscriber = await open('stored-sub', { clean: false, properties: { sessionExpiryInterval: 3600 } });
    await subscriber.subscribeAsync('stored/#', { qos: 1 });
    subscriber.end(true);
    const publisher = await open('stored-pub');
    await publisher.publishAsync('stored/x', 'kept', { qos: 1, properties: allProperties });
    await cairn.restart(600_000); // ten minutes in the log
    const again = cairn.connect('stored-sub', { clean: false, properties: { sessionExpiryInterval: 3600 } });
    const received = collect(again);
    await until(() => received.length === 1, 'the stored message after the restart');
    expect(received[0]?.properties).toMatchObject({ ...allProperties, messageExpiryInterval: 3000 });
    const records = [...cairn.log.read()].filter((record) => record.kind === RecordKind.msg);
    expect(summarize(RecordKind.msg, records.at(-1)?.body)).toContain('mqtt5{payload=utf8 expires=2027-01-15T09:00:00.000Z content-type=application/json response-topic=replies/here correlation=010203fa origin=sensor-7 tag=a tag=b}');
  });
});

describe('message expiry [MQTT-3.3.2-5]', () => {
  it('a message that expires while queued is never delivered; its drop is a record; the next one is', async () => {
    const subscriber = await open('expiry-sub', { clean: false, properties: { sessionExpiryInterval: 3600 } });
    await subscriber.subscribeAsync('expiry/#', { qos: 1 });
    subscriber.end(true);
    const publisher = await open('expiry-pub');
    await publisher.publishAsync('expiry/a', 'short-lived', { qos: 1, properties: { messageExpiryInterval: 5 } });
    await publisher.publishAsync('expiry/a', 'long-lived', { qos: 1, properties: { messageExpiryInterval: 60 } });
    cairn.clock.advance(10_000);
    const again = cairn.connect('expiry-sub', { clean: false, properties: { sessionExpiryInterval: 3600 } });
    const received = collect(again);
    await until(() => received.length === 1, 'the unexpired message');
    await publisher.publishAsync('expiry/a', 'marker', { qos: 1 });
    await until(() => received.length === 2, 'a marker after it');
    expect(received.map((packet) => packet.payload.toString())).toEqual(['long-lived', 'marker']);
    expect(received[0]?.properties?.messageExpiryInterval).toBe(50);
    await cairn.broker.flush();
    const drops = [...cairn.log.read()].filter((record) => record.kind === RecordKind.drop).map((record) => record.body);
    expect(drops).toContainEqual(expect.objectContaining({ c: 'expiry-sub', why: 'expired' }));
  });

  it('an expired retained value is not sent to a new subscriber; an unexpired one is, with what is left', async () => {
    const publisher = await open('retain-pub');
    await publisher.publishAsync('retained/short', 'gone', { qos: 1, retain: true, properties: { messageExpiryInterval: 5, contentType: 'text/plain' } });
    await publisher.publishAsync('retained/long', 'here', { qos: 1, retain: true, properties: { messageExpiryInterval: 100, contentType: 'text/plain' } });
    cairn.clock.advance(20_000);
    const subscriber = await open('retain-sub');
    const received = collect(subscriber);
    await subscriber.subscribeAsync('retained/#', { qos: 1 });
    await until(() => received.length === 1, 'the unexpired retained value');
    await publisher.publishAsync('retained/marker', 'm', { qos: 1 });
    await until(() => received.length === 2, 'a marker after it');
    expect(received[0]).toMatchObject({ topic: 'retained/long', retain: true, properties: { messageExpiryInterval: 80, contentType: 'text/plain' } });
  });
});

describe('will properties', () => {
  it('a v5 will carries its properties to the subscribers when the connection dies', async () => {
    const subscriber = await open('will-sub');
    await subscriber.subscribeAsync('wills/#', { qos: 1 });
    const received = collect(subscriber);
    const dying = await open('will-owner', {
      will: { topic: 'wills/owner', payload: Buffer.from('gone'), qos: 1, retain: false, properties: { contentType: 'text/plain', userProperties: { why: 'crash' } } },
    });
    (dying as unknown as { stream: { destroy(): void } }).stream.destroy();
    await until(() => received.length === 1, 'the will');
    expect(received[0]?.properties).toMatchObject({ contentType: 'text/plain', userProperties: { why: 'crash' } });
  });

  it('DISCONNECT with reason 0x04 publishes the will [MQTT-3.14.2.1]', async () => {
    const subscriber = await open('will4-sub');
    await subscriber.subscribeAsync('wills4/#', { qos: 1 });
    const received = collect(subscriber);
    const leaving = await open('will4-owner', { will: { topic: 'wills4/owner', payload: Buffer.from('bye'), qos: 1, retain: false } });
    await new Promise<void>((resolve) => leaving.end(false, { reasonCode: 0x04 }, () => resolve()));
    await until(() => received.length === 1, 'the will after DISCONNECT 0x04');
    expect(received[0]?.payload.toString()).toBe('bye');
  });
});
