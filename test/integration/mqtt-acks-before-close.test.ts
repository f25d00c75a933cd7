/**
 * Acks sent right before a close are applied before the session's in-flight
 * messages count as undelivered: a persistent subscriber acknowledges some of
 * what it holds and leaves at once (DISCONNECT, FIN, or a destroyed socket),
 * and what comes back on reconnect — and again after a broker restart on the
 * same data directory — is exactly what it did not acknowledge: nothing acked
 * returns, nothing unacked is lost. Packets of one connection are processed
 * in order, all of them, even when the broker yields between them.
 *
 * The tight cases use a raw socket so that every ack and the DISCONNECT
 * leave in one TCP write, more acks than the broker handles per turn of the
 * event loop (packetsPerTurnMax); MQTT.js covers the ordinary flow.
 */
import mqtt from 'mqtt';
import type { IPublishPacket, Packet } from 'mqtt-packet';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InProcessCairn } from '../../tools/in-process-cairn.js';
import { until } from '../support/kit.js';
import { RawMqttClient } from '../support/raw-mqtt.js';

let cairn: InProcessCairn;
const rawClients: RawMqttClient[] = [];

beforeEach(async () => {
  cairn = await InProcessCairn.start({ logLevel: 'info' });
});

afterEach(async () => {
  for (const client of rawClients.splice(0)) client.close();
  await cairn.stop();
});

const messages = 600;
const acked = 400;

async function openRaw(clientId: string): Promise<RawMqttClient> {
  const client = await RawMqttClient.open(cairn.mqttPort);
  rawClients.push(client);
  await client.connect(clientId, false);
  return client;
}

/** Publish `messages` QoS 1/2 messages, payload = their index, with MQTT.js. */
async function publishAll(topic: string, qos: 1 | 2): Promise<void> {
  const publisher = mqtt.connect(`mqtt://127.0.0.1:${cairn.mqttPort}`, { clientId: 'publisher', protocolVersion: 4, reconnectPeriod: 0 });
  await Promise.all(Array.from({ length: messages }, (_, index) => publisher.publishAsync(topic, String(index), { qos })));
  await publisher.endAsync();
}

/** A persistent subscriber that has received all `messages` and holds them in flight. */
async function subscriberHoldingAll(clientId: string, qos: 1 | 2): Promise<{ client: RawMqttClient; publishes: IPublishPacket[] }> {
  const client = await openRaw(clientId);
  client.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: `${clientId}/#`, qos }] });
  await client.waitFor((packet) => packet.cmd === 'suback');
  await publishAll(`${clientId}/m`, qos);
  await until(() => publishesOf(client.received).length === messages, `${messages} deliveries to ${clientId}`);
  return { client, publishes: publishesOf(client.received) };
}

function publishesOf(packets: readonly Packet[]): IPublishPacket[] {
  return packets.filter((packet): packet is IPublishPacket => packet.cmd === 'publish');
}

const payloadsOf = (publishes: readonly IPublishPacket[]): string[] => publishes.map((publish) => publish.payload.toString()).sort();

/** `cmd` for each packet id, in one buffer: 4 bytes each (type, length 2, id). */
function acksFor(firstByte: number, packetIds: readonly number[], then: Buffer = Buffer.alloc(0)): Buffer {
  const acks = Buffer.alloc(packetIds.length * 4);
  packetIds.forEach((id, index) => acks.writeUInt32BE(((firstByte << 24) | (0x02 << 16) | id) >>> 0, index * 4));
  return Buffer.concat([acks, then]);
}

const disconnect = Buffer.from([0xe0, 0x00]);

type Leave = 'DISCONNECT' | 'DISCONNECT then FIN' | 'FIN' | 'destroy';

/** Write `bytes` in one TCP write and leave the way `leave` says; resolves once the broker has let the session go. */
async function sendAndLeave(client: RawMqttClient, clientId: string, bytes: Buffer, leave: Leave): Promise<void> {
  const withDisconnect = leave.startsWith('DISCONNECT') ? Buffer.concat([bytes, disconnect]) : bytes;
  client.writeRaw(withDisconnect);
  if (leave === 'DISCONNECT then FIN' || leave === 'FIN') client.end();
  if (leave === 'destroy') client.close();
  await until(() => cairn.cairn.broker.sessions.get(clientId)?.link === undefined, `the broker letting ${clientId} go`);
}

/** Reconnect and return what the broker sends before answering a PINGREQ: everything it resends at once. */
async function resentOnReconnect(clientId: string): Promise<Packet[]> {
  const client = await openRaw(clientId);
  client.send({ cmd: 'pingreq' });
  await client.waitFor((packet) => packet.cmd === 'pingresp');
  const connack = client.received.findIndex((packet) => packet.cmd === 'connack');
  const resent = client.received.slice(connack + 1, client.received.findIndex((packet) => packet.cmd === 'pingresp'));
  client.close();
  await until(() => cairn.cairn.broker.sessions.get(clientId)?.link === undefined, `the broker letting ${clientId} go`);
  return resent;
}

describe('QoS 1: PUBACKs right before leaving are applied before the in-flight messages are requeued', () => {
  it.each<Leave>(['DISCONNECT', 'DISCONNECT then FIN', 'FIN', 'destroy'])('%s in the same write as the PUBACKs', async (leave) => {
    const clientId = `acker-${leave.replace(/\W+/g, '-').toLowerCase()}`;
    const { client, publishes } = await subscriberHoldingAll(clientId, 1);
    const ackedPublishes = publishes.slice(0, acked);
    const unacked = payloadsOf(publishes.slice(acked));
    await sendAndLeave(client, clientId, acksFor(0x40, ackedPublishes.map((publish) => publish.messageId ?? 0)), leave);

    expect(cairn.cairn.broker.state.sessions.get(clientId)?.pending.size).toBe(messages - acked);
    expect(payloadsOf(publishesOf(await resentOnReconnect(clientId)))).toEqual(unacked);
    await cairn.restart();
    expect(payloadsOf(publishesOf(await resentOnReconnect(clientId)))).toEqual(unacked);
  });
});

describe('QoS 2: PUBRECs, then PUBCOMPs, right before leaving are applied', () => {
  it.each<Leave>(['DISCONNECT', 'FIN'])('%s in the same write as the acks', async (leave) => {
    const clientId = `qos2-${leave.toLowerCase()}`;
    const { client, publishes } = await subscriberHoldingAll(clientId, 2);
    const received = publishes.slice(0, acked).map((publish) => publish.messageId ?? 0);
    const unacked = payloadsOf(publishes.slice(acked));
    await sendAndLeave(client, clientId, acksFor(0x50, received), leave);

    // PUBREC'd: the broker owes a PUBREL for each, and resends only the rest [MQTT-4.3.3-1].
    const afterPubrec = await resentOnReconnect(clientId);
    expect(afterPubrec.filter((packet) => packet.cmd === 'pubrel').map((packet) => packet.messageId).sort()).toEqual([...received].sort());
    expect(payloadsOf(publishesOf(afterPubrec))).toEqual(unacked);

    const again = await openRaw(clientId);
    await again.waitFor((packet) => packet.cmd === 'pubrel');
    await sendAndLeave(again, clientId, acksFor(0x70, received), leave);
    await cairn.restart();
    const afterPubcomp = await resentOnReconnect(clientId);
    expect(afterPubcomp.filter((packet) => packet.cmd === 'pubrel')).toEqual([]);
    expect(payloadsOf(publishesOf(afterPubcomp))).toEqual(unacked);
  });
});

describe('MQTT.js: every PUBACK it sent before end() is applied', () => {
  it('redelivers, after reconnect and after a restart, only messages it did not acknowledge', async () => {
    const clientId = 'mqttjs-acker';
    const subscriber = mqtt.connect(`mqtt://127.0.0.1:${cairn.mqttPort}`, { clientId, clean: false, protocolVersion: 4, reconnectPeriod: 0 });
    await subscriber.subscribeAsync(`${clientId}/#`, { qos: 1 });
    const payloadById = new Map<number, string>();
    const ackedPayloads = new Set<string>();
    let disconnectSent = false;
    subscriber.on('message', (_topic, payload, packet) => payloadById.set(packet.messageId ?? 0, payload.toString()));
    subscriber.on('packetsend', (packet: Packet) => {
      // MQTT.js may still write a PUBACK after its DISCONNECT; nothing after DISCONNECT counts [MQTT-3.14.4-2].
      if (packet.cmd === 'disconnect') disconnectSent = true;
      if (packet.cmd === 'puback' && !disconnectSent) ackedPayloads.add(payloadById.get(packet.messageId ?? 0) ?? '?');
    });
    // Leave as soon as a third of the messages is in: MQTT.js acks in its 'message' path and sends DISCONNECT on end().
    let left: Promise<void> | undefined;
    subscriber.on('message', () => {
      if (payloadById.size >= messages / 3) left ??= subscriber.endAsync();
    });
    await publishAll(`${clientId}/m`, 1);
    await until(() => left !== undefined, 'a third of the messages at MQTT.js');
    await left;
    await until(() => cairn.cairn.broker.sessions.get(clientId)?.link === undefined, `the broker letting ${clientId} go`);

    const allPayloads = Array.from({ length: messages }, (_, index) => String(index));
    const unacked = allPayloads.filter((payload) => !ackedPayloads.has(payload)).sort();
    expect(ackedPayloads.size).toBeGreaterThan(messages / 4);
    expect(payloadsOf(publishesOf(await resentOnReconnect(clientId)))).toEqual(unacked);
    await cairn.restart();
    expect(payloadsOf(publishesOf(await resentOnReconnect(clientId)))).toEqual(unacked);
  });
});
