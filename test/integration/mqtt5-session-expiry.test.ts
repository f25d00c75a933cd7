/**
 * MQTT 5 session expiry [MQTT-3.1.2-23] against the real broker on the real
 * log, with MQTT.js at protocolVersion 5 and the broker's clock injected (the
 * interval passing is a fact the test sets): a session lives its interval
 * after the client leaves and is resumed within it; past it the session is
 * gone and its end is one `session end` record; interval 0 ends it at the
 * disconnect; a DISCONNECT may change the interval; a restart after the
 * interval ends the session once, from the `offline` record. 3.1.1's
 * clean_session=0 still never expires.
 */
import type { IClientOptions, MqttClient } from 'mqtt';
import type { IPublishPacket } from 'mqtt-packet';
import { expect, it } from 'vitest';
import { RecordKind, type SessionBody } from '../../src/projections/records.js';
import { testStartTime, useInProcessBroker } from '../support/in-process-broker.js';
import { until } from '../support/kit.js';

const cairn = useInProcessBroker('mqtt5-expiry');

/** `received` collects messages from the first packet on (a session's queue arrives right after CONNACK). */
async function open(clientId: string, options: IClientOptions = {}, received?: IPublishPacket[]): Promise<{ client: MqttClient; sessionPresent: boolean }> {
  const { client, connack } = await cairn.open(clientId, options, received);
  return { client, sessionPresent: connack.sessionPresent };
}

function leave(client: MqttClient, properties?: { sessionExpiryInterval: number }): Promise<void> {
  return new Promise((resolve) => client.end(false, properties ? { properties } : {}, () => resolve()));
}

function sessionRecords(clientId: string): SessionBody[] {
  return [...cairn.log.read()].filter((record) => record.kind === RecordKind.session).map((record) => record.body as SessionBody).filter((body) => body.c === clientId);
}

const persistent = (interval: number): IClientOptions => ({ clean: false, properties: { sessionExpiryInterval: interval } });

it('a session is resumed within its expiry interval, with what was queued for it', async () => {
  const { client } = await open('within', persistent(60));
  await client.subscribeAsync('within/#', { qos: 1 });
  await leave(client);
  const { client: publisher } = await open('within-pub');
  await publisher.publishAsync('within/a', 'queued', { qos: 1 });
  cairn.clock.advance(59_000);
  const received: IPublishPacket[] = [];
  const again = await open('within', persistent(60), received);
  const payloads = (): string[] => received.map((packet) => packet.payload.toString());
  expect(again.sessionPresent).toBe(true);
  await until(() => received.length === 1, 'the queued message');
  expect(payloads()).toEqual(['queued']);
});

it('past its interval the session ends: one session end record, and the next CONNECT finds no session', async () => {
  const { client } = await open('past', persistent(10));
  await client.subscribeAsync('past/#', { qos: 1 });
  await leave(client);
  await cairn.broker.flush();
  expect(sessionRecords('past').map((body) => body.op)).toEqual(['open', 'offline']);
  expect(sessionRecords('past')[1]?.until).toBe(testStartTime + 10_000);
  cairn.clock.advance(10_000);
  cairn.broker.mqtt.expireSessions();
  await cairn.broker.flush();
  expect(sessionRecords('past').map((body) => body.op)).toEqual(['open', 'offline', 'end']);
  expect(cairn.broker.state.sessions.has('past')).toBe(false);
  const again = await open('past', persistent(10));
  expect(again.sessionPresent).toBe(false);
});

it('interval 0 (the default) ends a resumed session at the disconnect', async () => {
  const { client } = await open('zero', persistent(100));
  await leave(client);
  const resumed = await open('zero', { clean: false });
  expect(resumed.sessionPresent).toBe(true);
  await leave(resumed.client);
  await until(() => !cairn.broker.state.sessions.has('zero'), 'the session ended at the disconnect');
  expect((await open('zero', { clean: false })).sessionPresent).toBe(false);
});

it('a DISCONNECT may shorten the interval [MQTT-3.14.2.2.2]', async () => {
  const { client } = await open('shorten', persistent(3600));
  await leave(client, { sessionExpiryInterval: 5 });
  await until(() => sessionRecords('shorten').some((body) => body.op === 'offline'), 'the offline record');
  // The broker's own timer ends it: the injected clock's, not setTimeout's.
  cairn.clock.advance(4_999);
  expect(cairn.broker.state.sessions.has('shorten')).toBe(true);
  cairn.clock.advance(1);
  expect(cairn.broker.state.sessions.has('shorten')).toBe(false);
});

it('a restart after the interval ends the session once, from the offline record', async () => {
  const { client } = await open('restarted', persistent(30));
  await client.subscribeAsync('restarted/#', { qos: 1 });
  await leave(client);
  await cairn.restart(31_000);
  await cairn.broker.flush();
  expect(cairn.broker.state.sessions.has('restarted')).toBe(false);
  await cairn.restart();
  await cairn.broker.flush();
  expect(sessionRecords('restarted').map((body) => body.op)).toEqual(['open', 'offline', 'end']);
});

it('a 3.1.1 persistent session never expires', async () => {
  const old = cairn.connect('old', { protocolVersion: 4, clean: false });
  await new Promise<void>((resolve) => old.once('connect', () => resolve()));
  await new Promise<void>((resolve) => old.end(false, {}, () => resolve()));
  cairn.clock.advance(10 * 365 * 24 * 3600 * 1000);
  cairn.broker.mqtt.expireSessions();
  await cairn.restart();
  expect(cairn.broker.state.sessions.has('old')).toBe(true);
  expect(sessionRecords('old').map((body) => body.op)).toEqual(['open']);
});
