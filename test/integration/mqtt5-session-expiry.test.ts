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
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import type { IConnackPacket } from 'mqtt-packet';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { Broker } from '../../src/core/broker.js';
import type { SegmentedLog } from '../../src/log/index.js';
import { RecordKind, type SessionBody } from '../../src/projections/records.js';
import type { MqttServer } from '../../src/protocols/mqtt/server.js';
import { startInProcessBroker, stopInProcessBroker } from '../support/in-process-broker.js';
import { until } from '../support/kit.js';

let dataDir: string;
let log: SegmentedLog;
let broker: Broker;
let server: MqttServer;
let now = 1_800_000_000_000;
const clients: MqttClient[] = [];

async function boot(): Promise<void> {
  ({ log, broker, server } = await startInProcessBroker(dataDir, () => now));
}

async function shutDown(): Promise<void> {
  await stopInProcessBroker({ log, broker, server }, clients);
}

beforeEach(async () => {
  now = 1_800_000_000_000;
  dataDir = await mkdtemp(join(tmpdir(), 'cairn-mqtt5-expiry-'));
  await boot();
});

afterEach(async () => {
  await shutDown();
  await rm(dataDir, { recursive: true, force: true });
});

/** `payloads` collects messages from the first packet on (a session's queue arrives right after CONNACK). */
async function open(clientId: string, options: IClientOptions = {}, payloads?: string[]): Promise<{ client: MqttClient; sessionPresent: boolean }> {
  const client = mqtt.connect(`mqtt://127.0.0.1:${server.port}`, { clientId, protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 5_000, ...options });
  clients.push(client);
  if (payloads) client.on('message', (_topic, payload) => payloads.push(payload.toString()));
  const connack = await new Promise<IConnackPacket>((resolve, reject) => {
    client.once('connect', resolve);
    client.once('error', reject);
  });
  return { client, sessionPresent: connack.sessionPresent };
}

function leave(client: MqttClient, properties?: { sessionExpiryInterval: number }): Promise<void> {
  return new Promise((resolve) => client.end(false, properties ? { properties } : {}, () => resolve()));
}

function sessionRecords(clientId: string): SessionBody[] {
  return [...log.read()].filter((record) => record.kind === RecordKind.session).map((record) => record.body as SessionBody).filter((body) => body.c === clientId);
}

const persistent = (interval: number): IClientOptions => ({ clean: false, properties: { sessionExpiryInterval: interval } });

it('a session is resumed within its expiry interval, with what was queued for it', async () => {
  const { client } = await open('within', persistent(60));
  await client.subscribeAsync('within/#', { qos: 1 });
  await leave(client);
  const { client: publisher } = await open('within-pub');
  await publisher.publishAsync('within/a', 'queued', { qos: 1 });
  now += 59_000;
  broker.mqtt.expireSessions();
  const payloads: string[] = [];
  const again = await open('within', persistent(60), payloads);
  expect(again.sessionPresent).toBe(true);
  await until(() => payloads.length === 1, 'the queued message');
  expect(payloads).toEqual(['queued']);
});

it('past its interval the session ends: one session end record, and the next CONNECT finds no session', async () => {
  const { client } = await open('past', persistent(10));
  await client.subscribeAsync('past/#', { qos: 1 });
  await leave(client);
  await broker.flush();
  expect(sessionRecords('past').map((body) => body.op)).toEqual(['open', 'offline']);
  expect(sessionRecords('past')[1]?.until).toBe(now + 10_000);
  now += 10_000;
  broker.mqtt.expireSessions();
  broker.mqtt.expireSessions();
  await broker.flush();
  expect(sessionRecords('past').map((body) => body.op)).toEqual(['open', 'offline', 'end']);
  expect(broker.state.sessions.has('past')).toBe(false);
  const again = await open('past', persistent(10));
  expect(again.sessionPresent).toBe(false);
});

it('interval 0 (the default) ends a resumed session at the disconnect', async () => {
  const { client } = await open('zero', persistent(100));
  await leave(client);
  const resumed = await open('zero', { clean: false });
  expect(resumed.sessionPresent).toBe(true);
  await leave(resumed.client);
  await until(() => !broker.state.sessions.has('zero'), 'the session ended at the disconnect');
  expect((await open('zero', { clean: false })).sessionPresent).toBe(false);
});

it('a DISCONNECT may shorten the interval [MQTT-3.14.2.2.2]', async () => {
  const { client } = await open('shorten', persistent(3600));
  await leave(client, { sessionExpiryInterval: 5 });
  now += 5_000;
  broker.mqtt.expireSessions();
  expect(broker.state.sessions.has('shorten')).toBe(false);
});

it('a restart after the interval ends the session once, from the offline record', async () => {
  const { client } = await open('restarted', persistent(30));
  await client.subscribeAsync('restarted/#', { qos: 1 });
  await leave(client);
  await shutDown();
  now += 31_000;
  await boot();
  await broker.flush();
  expect(broker.state.sessions.has('restarted')).toBe(false);
  await shutDown();
  await boot();
  await broker.flush();
  expect(sessionRecords('restarted').map((body) => body.op)).toEqual(['open', 'offline', 'end']);
});

it('a 3.1.1 persistent session never expires', async () => {
  const old = mqtt.connect(`mqtt://127.0.0.1:${server.port}`, { clientId: 'old', protocolVersion: 4, clean: false, reconnectPeriod: 0 });
  clients.push(old);
  await new Promise<void>((resolve) => old.once('connect', () => resolve()));
  await new Promise<void>((resolve) => old.end(false, {}, () => resolve()));
  now += 10 * 365 * 24 * 3600 * 1000;
  broker.mqtt.expireSessions();
  await shutDown();
  await boot();
  expect(broker.state.sessions.has('old')).toBe(true);
  expect(sessionRecords('old').map((body) => body.op)).toEqual(['open']);
});
