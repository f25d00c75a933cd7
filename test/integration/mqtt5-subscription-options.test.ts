/**
 * MQTT 5 subscription options [MQTT-3.8.3.1] and Subscription Identifiers
 * [MQTT-3.8.2.1.2], with MQTT.js at protocolVersion 5 against the real broker
 * on the real log: No Local, Retain As Published, Retain Handling 0/1/2, the
 * identifiers on every delivered PUBLISH (one copy per session, with the
 * identifiers of every matching subscription), and all of them kept by a
 * persistent session across a broker restart. A 3.1.1 subscriber keeps
 * 3.1.1's behaviour beside them.
 *
 * Absence is shown by a marker: a message published after the one that must
 * not arrive, on a topic the same subscription gets; once the marker is in,
 * the other would have been too (one connection delivers in order).
 */
import type { IClientOptions, IClientSubscribeOptions, MqttClient } from 'mqtt';
import type { IDisconnectPacket, IPublishPacket } from 'mqtt-packet';
import { describe, expect, it } from 'vitest';
import { RecordKind } from '../../src/projections/records.js';
import { useInProcessBroker } from '../support/in-process-broker.js';
import { until } from '../support/kit.js';
import { collectPublishes } from '../support/mqtt5-client.js';

const cairn = useInProcessBroker('mqtt5-subopts');

async function open(clientId: string, options: IClientOptions = {}, received?: IPublishPacket[]): Promise<MqttClient> {
  return (await cairn.open(clientId, options, received)).client;
}

const collect = collectPublishes;

const payloads = (packets: readonly IPublishPacket[]): string[] => packets.map((packet) => packet.payload.toString());

/** MQTT.js gives one identifier as a number and several as an array. */
function identifiers(packet: IPublishPacket | undefined): number[] {
  const value = packet?.properties?.subscriptionIdentifier;
  return value === undefined ? [] : (Array.isArray(value) ? [...value] : [value]).sort((a, b) => a - b);
}

async function subscribe(client: MqttClient, filter: string, options: IClientSubscribeOptions): Promise<void> {
  const granted = await client.subscribeAsync(filter, options);
  expect(granted.map((grant) => grant.qos)).toEqual([options.qos]);
}

describe('No Local [MQTT-3.8.3-3]', () => {
  it('a message is not sent back to a No Local subscription of the client that published it; others get it', async () => {
    const own = await open('nl-own');
    const ownReceived = collect(own);
    await subscribe(own, 'nl/#', { qos: 1, nl: true });
    const other = await open('nl-other');
    const otherReceived = collect(other);
    await subscribe(other, 'nl/#', { qos: 1 });
    await own.publishAsync('nl/a', 'from own', { qos: 1 });
    await own.publishAsync('nl/a', 'from own, qos 0', { qos: 0 });
    await other.publishAsync('nl/a', 'marker from other', { qos: 1 });
    await until(() => ownReceived.length === 1 && otherReceived.length === 3, 'the marker at both');
    expect(payloads(ownReceived)).toEqual(['marker from other']);
    expect(payloads(otherReceived)).toEqual(['from own', 'from own, qos 0', 'marker from other']);
  });

  it('an overlapping subscription without No Local still gets the own message, once, with only its identifier', async () => {
    const own = await open('nl-overlap');
    const received = collect(own);
    await subscribe(own, 'nlo/#', { qos: 1, nl: true, properties: { subscriptionIdentifier: 3 } });
    await subscribe(own, 'nlo/x', { qos: 1, properties: { subscriptionIdentifier: 4 } });
    await own.publishAsync('nlo/y', 'not back', { qos: 1 });
    await own.publishAsync('nlo/x', 'back once', { qos: 1 });
    await until(() => received.length === 1, 'the own message on the plain subscription');
    const marker = await open('nl-overlap-marker');
    await marker.publishAsync('nlo/y', 'marker', { qos: 1 });
    await until(() => received.length === 2, 'the marker');
    expect(payloads(received)).toEqual(['back once', 'marker']);
    expect(identifiers(received[0])).toEqual([4]);
    expect(identifiers(received[1])).toEqual([3]);
  });

  it('No Local on a shared subscription is a protocol error: DISCONNECT 0x82 [MQTT-3.8.3-4]', async () => {
    const client = await open('nl-shared');
    const disconnect = new Promise<IDisconnectPacket>((resolve) => client.once('disconnect', resolve));
    client.subscribe('$share/g/nls/#', { qos: 1, nl: true });
    expect((await disconnect).reasonCode).toBe(0x82);
  });
});

describe('Retain As Published [MQTT-3.3.1-12] [MQTT-3.3.1-13]', () => {
  it('keeps the RETAIN flag of a forwarded message for a Retain As Published subscription, clears it otherwise', async () => {
    const kept = await open('rap-kept');
    const keptReceived = collect(kept);
    await subscribe(kept, 'rap/#', { qos: 1, rap: true });
    const cleared = await open('rap-cleared');
    const clearedReceived = collect(cleared);
    await subscribe(cleared, 'rap/#', { qos: 0 });
    const old = cairn.connect('rap-311', { protocolVersion: 4 });
    await new Promise<void>((resolve) => old.once('connect', () => resolve()));
    const oldReceived = collect(old);
    await old.subscribeAsync('rap/#', { qos: 1 });
    const publisher = await open('rap-pub');
    await publisher.publishAsync('rap/a', 'retained', { qos: 1, retain: true });
    await publisher.publishAsync('rap/a', 'not retained', { qos: 1 });
    await until(() => keptReceived.length === 2 && clearedReceived.length === 2 && oldReceived.length === 2, 'both messages at all three');
    expect(keptReceived.map((packet) => packet.retain)).toEqual([true, false]);
    expect(clearedReceived.map((packet) => packet.retain)).toEqual([false, false]);
    expect(oldReceived.map((packet) => packet.retain)).toEqual([false, false]);
    // A retained message sent because of a new subscription has RETAIN set whatever the option [MQTT-3.3.1-9].
    const late = await open('rap-late');
    const lateReceived = collect(late);
    await subscribe(late, 'rap/#', { qos: 1, rap: false });
    await until(() => lateReceived.length === 1, 'the retained value');
    expect(lateReceived[0]).toMatchObject({ retain: true, payload: Buffer.from('retained') });
  });
});

describe('Retain Handling [MQTT-3.3.1-9] [MQTT-3.3.1-10] [MQTT-3.3.1-11]', () => {
  it('0 sends the retained messages at every SUBSCRIBE, 1 only when the subscription is new, 2 never', async () => {
    const publisher = await open('rh-pub');
    await publisher.publishAsync('rh/a', 'value', { qos: 1, retain: true });
    const client = await open('rh-sub');
    const received = collect(client);
    const subscribeThenMarker = async (filter: string, rh: 0 | 1 | 2, marker: string): Promise<void> => {
      await subscribe(client, filter, { qos: 1, rh });
      await publisher.publishAsync('rh/marker', marker, { qos: 1 });
      await until(() => payloads(received).includes(marker), `marker ${marker}`);
    };
    await subscribeThenMarker('rh/#', 0, 'm1');
    await subscribeThenMarker('rh/#', 0, 'm2');
    await subscribeThenMarker('rh/+', 1, 'm3');
    await subscribeThenMarker('rh/+', 1, 'm4');
    await subscribeThenMarker('+/a', 2, 'm5');
    // Each marker reaches both rh/# and rh/+ once: one copy per session.
    expect(payloads(received)).toEqual(['value', 'm1', 'value', 'm2', 'value', 'm3', 'm4', 'm5']);
  });
});

describe('Subscription Identifiers [MQTT-3.3.4-3] [MQTT-3.3.4-4]', () => {
  it('a delivery carries the identifiers of every matching subscription; retained and shared deliveries carry theirs', async () => {
    const publisher = await open('ids-pub');
    await publisher.publishAsync('ids/r', 'retained', { qos: 1, retain: true });
    const client = await open('ids-sub');
    const received = collect(client);
    await subscribe(client, 'ids/#', { qos: 1, properties: { subscriptionIdentifier: 5 } });
    await until(() => received.length === 1, 'the retained value');
    await subscribe(client, 'ids/+/x', { qos: 0, properties: { subscriptionIdentifier: 268_435_455 } });
    await subscribe(client, 'ids/b', { qos: 1 });
    await subscribe(client, '$share/grp/ids/s', { qos: 1, properties: { subscriptionIdentifier: 77 } });
    await publisher.publishAsync('ids/a/x', 'two', { qos: 1 });
    await publisher.publishAsync('ids/b', 'one', { qos: 1 });
    await publisher.publishAsync('ids/s', 'shared', { qos: 1 });
    await until(() => received.length === 5, 'four deliveries after the retained one');
    const byPayload = new Map(received.map((packet) => [packet.payload.toString(), packet]));
    expect(identifiers(byPayload.get('retained'))).toEqual([5]);
    expect(identifiers(byPayload.get('two'))).toEqual([5, 268_435_455]);
    expect(byPayload.get('two')?.qos).toBe(1);
    expect(identifiers(byPayload.get('one'))).toEqual([5]);
    // The plain ids/# copy and the shared group's copy are separate deliveries, each with its own subscription's identifier.
    const shared = received.filter((packet) => packet.payload.toString() === 'shared');
    expect(shared.map(identifiers).sort()).toEqual([[5], [77]]);
  });

  it('a re-SUBSCRIBE without an identifier removes it; a 3.1.1 subscriber gets none', async () => {
    const client = await open('ids-replace');
    const received = collect(client);
    await subscribe(client, 'idr/#', { qos: 1, properties: { subscriptionIdentifier: 9 } });
    await subscribe(client, 'idr/#', { qos: 1 });
    const publisher = await open('ids-replace-pub');
    await publisher.publishAsync('idr/a', 'x', { qos: 1 });
    await until(() => received.length === 1, 'the message');
    expect(received[0]?.properties?.subscriptionIdentifier).toBeUndefined();
  });
});

describe('options across a broker restart', () => {
  it('a persistent session keeps No Local, Retain As Published, Retain Handling and its identifier (the sub record, replayed)', async () => {
    const sessionOptions: IClientOptions = { clean: false, properties: { sessionExpiryInterval: 3600 } };
    const first = await open('kept-opts', sessionOptions);
    await subscribe(first, 'keep/#', { qos: 1, nl: true, rap: true, rh: 1, properties: { subscriptionIdentifier: 42 } });
    await cairn.restart();
    const publisher = await open('kept-opts-pub');
    await publisher.publishAsync('keep/r', 'retained', { qos: 1, retain: true });
    const received: IPublishPacket[] = [];
    const again = await open('kept-opts', sessionOptions, received);
    // Retain As Published and the identifier, from the log.
    await until(() => received.length === 1, 'the message queued while away');
    expect(received[0]).toMatchObject({ retain: true, payload: Buffer.from('retained') });
    expect(identifiers(received[0])).toEqual([42]);
    // No Local, from the log.
    await again.publishAsync('keep/own', 'own', { qos: 1 });
    // Retain Handling 1: the subscription exists, so no retained message on this SUBSCRIBE.
    await subscribe(again, 'keep/#', { qos: 1, nl: true, rap: true, rh: 1, properties: { subscriptionIdentifier: 42 } });
    await publisher.publishAsync('keep/marker', 'marker', { qos: 1 });
    await until(() => received.length === 2, 'the marker');
    expect(payloads(received)).toEqual(['retained', 'marker']);
    await cairn.broker.flush();
    const subs = [...cairn.log.read()].filter((record) => record.kind === RecordKind.sub).map((record) => record.body);
    expect(subs[0]).toEqual({ c: 'kept-opts', f: 'keep/#', qos: 1, nl: true, rap: true, rh: 1, id: 42 });
  });
});
