/**
 * Shared subscriptions `$share/{group}/{filter}` (MQTT 5.0 §4.8.2, offered to
 * 3.1.1 clients) driven by MQTT.js over TCP against the real broker on the
 * real segmented log: one member per message in round robin, a full window
 * skipped, in-flight messages of a member that goes handed to another with
 * DUP, persistent groups across a restart, no retained messages on a shared
 * subscription, unsubscribe, a group and a plain subscription side by side,
 * and SUBACK 0x80 for malformed shares.
 */
import mqtt, { type IClientOptions, type IPublishPacket, type MqttClient } from 'mqtt';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { SegmentedLog } from '../../src/log/index.js';
import { silentLogger } from '../../src/logger.js';
import { startMqttServer, type MqttServer } from '../../src/protocols/mqtt/server.js';
import { tempDirectory, until } from '../support/kit.js';
import { RawMqttClient } from '../support/raw-mqtt.js';

let dataDir: { path: string; remove(): void };
let log: SegmentedLog;
let broker: Broker;
let server: MqttServer;
const clients: MqttClient[] = [];
const raws: RawMqttClient[] = [];

async function boot(limits: Partial<Broker['limits']> = {}): Promise<void> {
  log = await SegmentedLog.open({ dir: dataDir.path, logger: silentLogger() });
  broker = Broker.open({ log, logger: silentLogger(), limits });
  server = await startMqttServer({ core: broker.mqtt, host: '127.0.0.1', port: 0, logger: silentLogger() });
}

async function shutDown(): Promise<void> {
  for (const client of clients.splice(0)) client.end(true);
  for (const raw of raws.splice(0)) raw.close();
  await server.close();
  await broker.flush();
  await log.close().catch(() => undefined);
}

beforeEach(async () => {
  dataDir = tempDirectory('cairn-shared-');
  await boot();
});

afterEach(async () => {
  await shutDown();
  dataDir.remove();
});

/** `received` collects every PUBLISH from the start: a resumed session's queue may arrive with the CONNACK. */
const received = new Map<MqttClient, IPublishPacket[]>();

function open(clientId: string, options: IClientOptions = {}): Promise<MqttClient> {
  const client = mqtt.connect(`mqtt://127.0.0.1:${server.port}`, { clientId, protocolVersion: 4, reconnectPeriod: 0, connectTimeout: 5_000, ...options });
  clients.push(client);
  const packets: IPublishPacket[] = [];
  received.set(client, packets);
  client.on('message', (_topic, _payload, packet) => packets.push(packet));
  return new Promise((resolve, reject) => {
    client.once('connect', () => resolve(client));
    client.once('error', reject);
  });
}

/** Every PUBLISH a client received, in order. */
function collect(client: MqttClient): IPublishPacket[] {
  return received.get(client)!;
}

/**
 * A member that receives but never acknowledges: a raw client (MQTT.js stops reading its socket
 * while a PUBACK is withheld, so it cannot hold several).
 */
async function holdingMember(clientId: string, filter: string, clean = true): Promise<{ client: RawMqttClient; held: () => IPublishPacket[] }> {
  const client = await RawMqttClient.open(server.port);
  raws.push(client);
  await client.connect(clientId, clean);
  client.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: filter, qos: 1 }] });
  await client.waitFor((p) => p.cmd === 'suback');
  return { client, held: () => client.received.filter((p): p is IPublishPacket => p.cmd === 'publish') };
}

async function subscribe(client: MqttClient, filter: string, qos: 0 | 1 | 2 = 1): Promise<number> {
  const granted = await client.subscribeAsync(filter, { qos });
  return granted[0]!.qos;
}

async function publishAll(client: MqttClient, topic: string, count: number, qos: 0 | 1 = 1, prefix = 'm'): Promise<void> {
  for (let i = 0; i < count; i++) await client.publishAsync(topic, `${prefix}${i}`, { qos });
}

const payloads = (packets: readonly IPublishPacket[]): string[] => packets.map((p) => p.payload.toString());

describe('shared subscriptions $share/{group}/{filter}', () => {
  it('gives each message to one member, in round robin over three members', async () => {
    const members = await Promise.all(['m1', 'm2', 'm3'].map((id) => open(id)));
    const received = members.map(collect);
    for (const member of members) expect(await subscribe(member, '$share/workers/jobs/+')).toBe(1);
    const publisher = await open('pub');
    await publishAll(publisher, 'jobs/a', 30);
    await until(() => received.reduce((n, r) => n + r.length, 0) === 30, '30 deliveries');
    expect(received.map((r) => r.length)).toEqual([10, 10, 10]);
    const all = received.flatMap(payloads).sort();
    expect(new Set(all).size).toBe(30);
    expect(received.flat().every((p) => p.qos === 1 && !p.dup && !p.retain)).toBe(true);
  });

  it('QoS 2: each message to one member, at the lower of the publish and subscription QoS, exactly once through PUBCOMP', async () => {
    const two = await open('two');
    const one = await open('one');
    await subscribe(two, '$share/g/q2', 2);
    await subscribe(one, '$share/g/q2', 1);
    const publisher = await open('pub');
    for (let i = 0; i < 6; i++) await publisher.publishAsync('q2', `m${i}`, { qos: 2 });
    await until(() => collect(two).length + collect(one).length === 6, 'six deliveries');
    expect(collect(two).map((p) => p.qos)).toEqual([2, 2, 2]);
    expect(collect(one).map((p) => p.qos)).toEqual([1, 1, 1]);
    expect([...payloads(collect(two)), ...payloads(collect(one))].sort()).toEqual(['m0', 'm1', 'm2', 'm3', 'm4', 'm5']);
    // PUBREC, PUBREL, PUBCOMP done: the member owes nothing and the group holds nothing.
    await until(() => broker.sessions.get('two')!.state.rel.size === 0 && broker.shared.groups.get('$share/g/q2')!.unacked.size === 0, 'the QoS 2 handshakes finished');
  });

  it('MQTT 5: CONNACK offers shared subscriptions; v5 members share a group with a 3.1.1 one; Receive Maximum narrows a member\'s window; a malformed share is 0x8F', async () => {
    // A raw v5 member that takes one unacknowledged message at a time (Receive Maximum 1) and never acknowledges.
    const narrow = await RawMqttClient.open(server.port, 5);
    raws.push(narrow);
    expect(await narrow.connect('narrow', true, { receiveMaximum: 1 })).toMatchObject({ properties: { sharedSubscriptionAvailable: true } });
    narrow.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: '$share/mixed/v/#', qos: 1 }, { topic: '$share//t', qos: 1 }, { topic: '$share/g', qos: 1 }] });
    expect(await narrow.waitFor((p) => p.cmd === 'suback')).toMatchObject({ granted: [1, 0x8f, 0x8f] });
    const v5 = await open('v5', { protocolVersion: 5 });
    const v3 = await open('v3');
    for (const member of [v5, v3]) expect(await subscribe(member, '$share/mixed/v/#')).toBe(1);
    const publisher = await open('pub', { protocolVersion: 5 });
    await publishAll(publisher, 'v/1', 9);
    const narrowGot = (): number => narrow.received.filter((p) => p.cmd === 'publish').length;
    await until(() => narrowGot() + collect(v5).length + collect(v3).length === 9, 'nine deliveries');
    expect(narrowGot()).toBe(1);
    expect(collect(v5).length).toBe(4);
    expect(collect(v3).length).toBe(4);
  });

  it('two groups on the same filter each get every message; a group member with a plain subscription gets both', async () => {
    const a1 = await open('a1');
    const a2 = await open('a2');
    const b1 = await open('b1');
    const [ra1, ra2, rb1] = [collect(a1), collect(a2), collect(b1)];
    await subscribe(a1, '$share/a/t');
    await subscribe(a2, '$share/a/t');
    await subscribe(b1, '$share/b/t');
    await subscribe(a1, 't');
    const publisher = await open('pub');
    await publishAll(publisher, 't', 4);
    await until(() => rb1.length === 4 && ra1.length + ra2.length === 8, 'all deliveries');
    expect(payloads(rb1)).toEqual(['m0', 'm1', 'm2', 'm3']);
    // a1: its plain subscription's 4, and half of group a's.
    expect(ra1.length).toBe(6);
    expect(ra2.length).toBe(2);
    expect([...payloads(ra1), ...payloads(ra2)].sort()).toEqual(['m0', 'm0', 'm1', 'm1', 'm2', 'm2', 'm3', 'm3']);
  });

  it('skips a member whose in-flight window is full', async () => {
    await shutDown();
    await boot({ sessionInflightMessagesMax: 2 });
    const slow = await holdingMember('slow', '$share/g/w');
    const fast = await open('fast');
    const got = collect(fast);
    await subscribe(fast, '$share/g/w');
    const publisher = await open('pub');
    await publishAll(publisher, 'w', 10);
    await until(() => slow.held().length + got.length === 10, 'ten deliveries');
    expect(slow.held().length).toBe(2);
    expect(got.length).toBe(8);
  });

  it('hands the QoS 1 messages a persistent member had in flight to another member, with DUP, when it disconnects', async () => {
    // A persistent member: it stays in the group while offline, but what it had in flight is not left waiting for it.
    const leaving = await holdingMember('leaving', '$share/g/work', false);
    const staying = await open('staying');
    const got = collect(staying);
    await subscribe(staying, '$share/g/work');
    const publisher = await open('pub');
    await publishAll(publisher, 'work', 6);
    await until(() => leaving.held().length === 3 && got.length === 3, 'three each');
    const held = leaving.held();
    leaving.client.close();
    await until(() => got.length === 6, 'the three held ones redelivered to the other member');
    const redelivered = got.slice(3);
    expect(payloads(redelivered).sort()).toEqual(payloads(held).sort());
    expect(redelivered.every((p) => p.dup)).toBe(true);
    expect(got.slice(0, 3).every((p) => !p.dup)).toBe(true);
  });

  it('keeps a persistent group\'s undelivered messages across a restart, and redelivers what was in flight', async () => {
    const member = await holdingMember('member', '$share/g/jobs/#', false);
    const publisher = await open('pub');
    await publishAll(publisher, 'jobs/x', 3, 1, 'a');
    await until(() => member.held().length === 3, 'three held');
    member.client.close();
    await until(() => broker.sessions.get('member')?.link === undefined, 'member offline');
    await publishAll(publisher, 'jobs/x', 2, 1, 'b');
    await shutDown();
    await boot();
    expect(broker.state.groups.get('$share/g/jobs/#')?.pending.size).toBe(5);
    const again = await open('member', { clean: false });
    const got = collect(again);
    await until(() => got.length === 5, 'five after the restart');
    expect(payloads(got)).toEqual(['a0', 'a1', 'a2', 'b0', 'b1']);
    expect(got.map((p) => p.dup)).toEqual([true, true, true, false, false]);
    await until(() => broker.state.groups.get('$share/g/jobs/#')?.pending.size === 0, 'all acknowledged');
  });

  it('does not send retained messages on a shared subscription', async () => {
    const publisher = await open('pub');
    await publisher.publishAsync('r/1', 'kept', { qos: 1, retain: true });
    const member = await open('member');
    const got = collect(member);
    const plain = await open('plain');
    const plainGot = collect(plain);
    await subscribe(member, '$share/g/r/#');
    await subscribe(plain, 'r/#');
    await until(() => plainGot.length === 1, 'the plain subscriber gets the retained value');
    await publisher.publishAsync('r/1', 'live', { qos: 1 });
    await until(() => got.length === 1, 'the live message');
    expect(payloads(got)).toEqual(['live']);
    expect(got[0]!.retain).toBe(false);
  });

  it('stops delivering after UNSUBSCRIBE; the remaining member gets everything', async () => {
    const one = await open('one');
    const two = await open('two');
    const [got1, got2] = [collect(one), collect(two)];
    await subscribe(one, '$share/g/u');
    await subscribe(two, '$share/g/u');
    await one.unsubscribeAsync('$share/g/u');
    const publisher = await open('pub');
    await publishAll(publisher, 'u', 4);
    await until(() => got2.length === 4, 'four to the remaining member');
    expect(got1.length).toBe(0);
  });

  it('answers SUBACK 0x80 to malformed shares [MQTT-4.8.2-1] [MQTT-4.8.2-2]', async () => {
    // MQTT.js refuses to send some of these forms itself ('$share/g+/t'), so a raw client sends them.
    const client = await RawMqttClient.open(server.port);
    raws.push(client);
    await client.connect('c', true);
    const filters = ['$share//t', '$share/g+/t', '$share/+/t', '$share/#/t', '$share/g', '$share/g/', '$share/g/a#', '$share/g/t'];
    client.send({ cmd: 'subscribe', messageId: 7, subscriptions: filters.map((topic) => ({ topic, qos: 2 })) });
    const suback = await client.waitFor((p) => p.cmd === 'suback');
    expect((suback as unknown as { granted: number[] }).granted).toEqual([128, 128, 128, 128, 128, 128, 128, 2]);
  });
});
