/**
 * MQTT 5 Will Delay Interval [MQTT-3.1.3-9] against the real broker on the
 * real log, with MQTT.js at protocolVersion 5 and a manual clock (the delay
 * passing is a fact the test sets; the broker's own timers fire on it): the
 * will of a connection that dies is published when its delay passes, or when
 * its session ends if that is first, with its properties (its Message Expiry
 * Interval counting from the publication); a reconnect before the delay
 * cancels it [MQTT-3.1.2-8]; a session that ends with its connection
 * publishes it at once; a pending will is a record (session offline `w`),
 * shown by `cairn inspect`, published once after a restart past its time.
 * Takeover (MQTT 5 section 3.1.4): the old connection's will goes when its
 * delay is 0 or the new CONNECT's Clean Start ends the session, and is
 * cancelled when the new connection continues it; a Clean Start also ends an
 * offline session's pending will by publishing it.
 */
import type { IClientOptions, MqttClient } from 'mqtt';
import type { IPublishPacket } from 'mqtt-packet';
import { expect, it } from 'vitest';
import { summarize } from '../../src/inspect/format.js';
import { RecordKind, type SessionBody } from '../../src/projections/records.js';
import { testStartTime, useInProcessBroker } from '../support/in-process-broker.js';
import { inspect } from '../support/cli-run.js';
import { until } from '../support/kit.js';
import { collectPublishes } from '../support/mqtt5-client.js';

const cairn = useInProcessBroker('mqtt5-will-delay');

const collect = collectPublishes;

async function watcher(clientId: string, filter: string): Promise<IPublishPacket[]> {
  const { client } = await cairn.open(clientId);
  await client.subscribeAsync(filter, { qos: 1 });
  return collect(client);
}

function sessionRecords(clientId: string): SessionBody[] {
  return [...cairn.log.read()].filter((record) => record.kind === RecordKind.session).map((record) => record.body as SessionBody).filter((body) => body.c === clientId);
}

/** A client with a delayed will whose connection then dies (no DISCONNECT); resolves once the broker recorded it offline. */
async function dies(clientId: string, options: { expiry: number; delay: number; topic: string } & IClientOptions): Promise<void> {
  const { expiry, delay, topic, ...rest } = options;
  const { client } = await cairn.open(clientId, {
    clean: false,
    properties: { sessionExpiryInterval: expiry },
    will: {
      topic, payload: Buffer.from(`${clientId} gone`), qos: 1, retain: false,
      properties: { willDelayInterval: delay, messageExpiryInterval: 100, contentType: 'text/plain', userProperties: { why: 'crash' } },
    },
    ...rest,
  });
  const before = sessionRecords(clientId).length;
  (client as unknown as { stream: { destroy(): void } }).stream.destroy();
  await until(() => sessionRecords(clientId).length > before || !cairn.broker.state.sessions.has(clientId), `${clientId} offline`);
}

it('the will waits for its delay, then goes out once with its properties; the session stays', async () => {
  const received = await watcher('delay-watch', 'delayed/#');
  await dies('delay-owner', { expiry: 3600, delay: 30, topic: 'delayed/owner' });
  expect(sessionRecords('delay-owner').at(-1)).toMatchObject({ op: 'offline', until: testStartTime + 3_600_000, w: { t: 'delayed/owner', at: testStartTime + 30_000, ei: 100 } });
  cairn.clock.advance(29_999);
  expect(received).toEqual([]);
  cairn.clock.advance(1);
  await until(() => received.length === 1, 'the will after its delay');
  expect(received[0]?.payload.toString()).toBe('delay-owner gone');
  expect(received[0]?.properties).toMatchObject({ messageExpiryInterval: 100, contentType: 'text/plain', userProperties: { why: 'crash' } });
  // The publication is recorded: the offline state without the will, its end time kept.
  expect(sessionRecords('delay-owner').at(-1)).toEqual({ c: 'delay-owner', op: 'offline', until: testStartTime + 3_600_000 });
  expect(cairn.broker.state.sessions.get('delay-owner')?.will).toBeUndefined();
  cairn.clock.advance(3_600_000);
  const { client: marker } = await cairn.open('delay-marker');
  await marker.publishAsync('delayed/marker', 'm', { qos: 1 });
  await until(() => received.length === 2, 'the marker');
  expect(received.map((packet) => packet.payload.toString())).toEqual(['delay-owner gone', 'm']);
});

it('a reconnect before the delay passes cancels the will [MQTT-3.1.2-8]', async () => {
  const received = await watcher('cancel-watch', 'cancel/#');
  await dies('cancel-owner', { expiry: 3600, delay: 30, topic: 'cancel/owner' });
  cairn.clock.advance(10_000);
  const { connack } = await cairn.open('cancel-owner', { clean: false, properties: { sessionExpiryInterval: 3600 } });
  expect(connack.sessionPresent).toBe(true);
  expect(sessionRecords('cancel-owner').at(-1)?.op).toBe('open');
  cairn.clock.advance(60_000);
  const { client: marker } = await cairn.open('cancel-marker');
  await marker.publishAsync('cancel/marker', 'm', { qos: 1 });
  await until(() => received.length === 1, 'the marker');
  expect(received.map((packet) => packet.payload.toString())).toEqual(['m']);
});

it('a session that ends before the delay publishes the will as it ends, in the commit of its end [MQTT-3.1.3-9]', async () => {
  const { client: subscriber } = await cairn.open('end-watch', { clean: false, properties: { sessionExpiryInterval: 3600 } });
  await subscriber.subscribeAsync('ends/#', { qos: 1 });
  const received = collect(subscriber);
  await dies('end-owner', { expiry: 10, delay: 60, topic: 'ends/owner' });
  cairn.clock.advance(10_000);
  await until(() => received.length === 1, 'the will at the session end');
  expect(cairn.broker.state.sessions.has('end-owner')).toBe(false);
  // The will's msg record (for the persistent watcher) and the end share a commit, the end last.
  const records = [...cairn.log.read()];
  const end = records.findIndex((record) => record.kind === RecordKind.session && (record.body as SessionBody).c === 'end-owner' && (record.body as SessionBody).op === 'end');
  expect(records[end - 1]?.kind).toBe(RecordKind.msg);
  expect(records[end - 1]?.body).toMatchObject({ t: 'ends/owner', s: [['end-watch', 1, 1]] });
});

it('a session that ends with its connection publishes the will at once, whatever its delay', async () => {
  const received = await watcher('clean-watch', 'clean/#');
  await dies('clean-owner', { expiry: 0, delay: 60, topic: 'clean/owner', clean: true });
  await until(() => received.length === 1, 'the will at once');
  expect(sessionRecords('clean-owner')).toEqual([]);
});

it('a pending will is shown by cairn inspect and published once after a restart past its time', async () => {
  await dies('restart-owner', { expiry: 3600, delay: 30, topic: 'restart/owner' });
  const { client: subscriber } = await cairn.open('restart-watch', { clean: false, properties: { sessionExpiryInterval: 7200 } });
  await subscriber.subscribeAsync('restart/#', { qos: 1 });
  subscriber.end(true);
  await cairn.broker.flush();
  const offline = sessionRecords('restart-owner').at(-1);
  expect(summarize(RecordKind.session, offline)).toContain('will=restart/owner qos=1 at=');
  const state = await inspect('state', '--data', cairn.dataDirectory);
  expect(state.out).toMatch(/restart-owner .*pending will: topic restart\/owner qos 1 .*at 2027-01-15T08:00:30/);
  await cairn.restart(31_000);
  await cairn.restart();
  await cairn.broker.flush();
  const wills = [...cairn.log.read()].filter((record) => record.kind === RecordKind.msg && (record.body as { t: string }).t === 'restart/owner');
  expect(wills).toHaveLength(1);
  const received: IPublishPacket[] = [];
  await cairn.open('restart-watch', { clean: false, properties: { sessionExpiryInterval: 7200 } }, received);
  await until(() => received.length === 1, 'the will queued for the watcher');
  expect(received.map((packet) => packet.payload.toString())).toEqual(['restart-owner gone']);
  expect(cairn.broker.state.sessions.get('restart-owner')?.will).toBeUndefined();
});

/** A live client with a will, then a second CONNECT with its client id; resolves once the first is closed. */
async function takenOver(clientId: string, delay: number, topic: string, second: IClientOptions): Promise<void> {
  const { client } = await cairn.open(clientId, {
    clean: false, properties: { sessionExpiryInterval: 3600 },
    will: { topic, payload: Buffer.from(`${clientId} gone`), qos: 1, retain: false, properties: { willDelayInterval: delay } },
    reconnectPeriod: 0,
  });
  const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
  await cairn.open(clientId, second);
  await closed;
}

/** Publishes a marker to `topic` and waits for it: whatever the takeover published arrived before it. */
async function marked(received: IPublishPacket[], topic: string): Promise<string[]> {
  const { client: marker } = await cairn.open(`${topic.replace(/\W/g, '-')}-marker`);
  await marker.publishAsync(topic, 'm', { qos: 1 });
  await until(() => received.some((packet) => packet.topic === topic), 'the marker');
  return received.map((packet) => packet.payload.toString());
}

it('a takeover publishes the old connection\'s will when its delay is 0 (MQTT 5 section 3.1.4)', async () => {
  const received = await watcher('take0-watch', 'take0/#');
  await takenOver('take0-owner', 0, 'take0/owner', { clean: false, properties: { sessionExpiryInterval: 3600 } });
  expect(await marked(received, 'take0/marker')).toEqual(['take0-owner gone', 'm']);
});

it('a takeover that continues the session cancels a delayed will [MQTT-3.1.3-9]', async () => {
  const received = await watcher('takeon-watch', 'takeon/#');
  await takenOver('takeon-owner', 30, 'takeon/owner', { clean: false, properties: { sessionExpiryInterval: 3600 } });
  cairn.clock.advance(60_000);
  expect(await marked(received, 'takeon/marker')).toEqual(['m']);
});

it('a takeover with Clean Start ends the old session: its delayed will goes at once', async () => {
  const received = await watcher('takeclean-watch', 'takeclean/#');
  await takenOver('takeclean-owner', 30, 'takeclean/owner', { clean: true });
  expect(await marked(received, 'takeclean/marker')).toEqual(['takeclean-owner gone', 'm']);
});

it('a Clean Start ends an offline session: its pending will goes at once, before its delay', async () => {
  const received = await watcher('pendclean-watch', 'pendclean/#');
  await dies('pendclean-owner', { expiry: 3600, delay: 30, topic: 'pendclean/owner' });
  await cairn.open('pendclean-owner', { clean: true });
  expect(await marked(received, 'pendclean/marker')).toEqual(['pendclean-owner gone', 'm']);
  cairn.clock.advance(60_000);
  const { client: marker } = await cairn.open('pendclean-late');
  await marker.publishAsync('pendclean/late', 'late', { qos: 1 });
  await until(() => received.length === 3, 'the late marker');
  expect(received.map((packet) => packet.payload.toString())).toEqual(['pendclean-owner gone', 'm', 'late']);
});
