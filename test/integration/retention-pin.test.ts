/**
 * Retention respects live messages (with --release-segments off, so that the
 * pin itself is seen; segment-release.test.ts covers the move): with tiny segments, retention at 0 bytes
 * and frequent snapshots, a message still queued keeps its segment (and every
 * newer one) through retention and a restart, comes back with its exact
 * payload, and is reported as the pin by `cairn inspect stats` and /metrics;
 * once it is consumed, the next snapshot + retention removes its segment.
 * Two pins one after the other: an AMQP durable queue's message, then an MQTT
 * persistent session's. Real clients (amqplib, MQTT.js) over TCP.
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import amqp from 'amqplib';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServeArgs } from '../../src/config.js';
import { silentLogger } from '../../src/logger.js';
import { startCairn, type RunningCairn } from '../../src/server.js';
import { inspect } from '../support/cli-run.js';
import { tempDirectory, until } from '../support/kit.js';
import { parseExposition, type Family } from '../support/prometheus-exposition.js';

const churnMessages = 60;
/** Every byte value, so a payload read back from the segment is checked byte for byte. */
const amqpPayload = Buffer.from(Array.from({ length: 700 }, (_, i) => (i * 37 + 11) & 0xff));
const mqttPayload = Buffer.from(Array.from({ length: 500 }, (_, i) => (i * 101 + 7) & 0xff));

interface Broker { cairn: RunningCairn; connection: amqp.ChannelModel; channel: amqp.ConfirmChannel; base: string }

async function start(dir: string): Promise<Broker> {
  const args = ['--data', dir, '--mqtt-port', '0', '--amqp-port', '0', '--http-port', '0', '--segment-bytes', '4096', '--retention-bytes', '0', '--snapshot-every', '20', '--release-segments', 'off'];
  const cairn = await startCairn(parseServeArgs(args, {}), silentLogger());
  const connection = await amqp.connect(`amqp://127.0.0.1:${cairn.amqpPort!}`);
  const channel = await connection.createConfirmChannel();
  return { cairn, connection, channel, base: `http://127.0.0.1:${cairn.httpPort!}` };
}

async function stop(b: Broker): Promise<void> {
  await b.connection.close();
  await b.cairn.close();
}

/** Persistent messages through a queue and consumed at once: records that roll segments and trigger snapshots. */
async function churn(b: Broker): Promise<void> {
  for (let i = 0; i < churnMessages; i++) b.channel.sendToQueue('churn', Buffer.alloc(200, i), { persistent: true });
  await b.channel.waitForConfirms();
  for (let i = 0; i < churnMessages; i++) {
    const message = await b.channel.get('churn');
    if (message === false) throw new Error(`churn: message ${i} missing`);
    b.channel.ack(message);
  }
  await until(async () => (await queueMessages(b, 'churn')) === 0, 'the churn queue to be empty');
}

async function queueMessages(b: Broker, queue: string): Promise<number> {
  const response = await fetch(`${b.base}/api/queues/%2F/${queue}`);
  return ((await response.json()) as { messages: number }).messages;
}

/** A snapshot (and the retention run after it) written now; retried while a periodic one is in flight. */
async function snapshotAndRetain(b: Broker): Promise<void> {
  await until(async () => (await b.cairn.broker.snapshot()) !== undefined, 'a snapshot of our own');
}

async function metrics(b: Broker): Promise<Map<string, Family>> {
  return parseExposition(await (await fetch(`${b.base}/metrics`)).text());
}

function sample(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  return families.get(name)?.samples.find((s) => Object.entries(labels).every(([key, wanted]) => s.labels[key] === wanted))?.value;
}

const segmentFiles = (dir: string): string[] => fs.readdirSync(dir).filter((f) => f.endsWith('.seg')).sort();
const snapshotFiles = (dir: string): string[] => fs.readdirSync(dir).filter((f) => f.endsWith('.snap')).sort();
const firstLsnOf = (file: string): number => Number(file.slice(0, 20));

/** The file of the segment holding `lsn`, from the directory listing alone. */
function segmentHolding(dir: string, lsn: number): string | undefined {
  const files = segmentFiles(dir);
  return files.filter((f) => firstLsnOf(f) <= lsn).pop();
}

/** The LSN of the one msg record appended while `publish` ran, read back by the inspector. */
async function publishedAt(b: Broker, dir: string, publish: () => Promise<void>, ...filter: string[]): Promise<number> {
  const from = b.cairn.log.nextLsn;
  await publish();
  const to = b.cairn.log.nextLsn - 1;
  const run = await inspect('records', '--data', dir, '--kind', 'msg', '--json', '--from', String(from), '--to', String(to), ...filter);
  expect(run.code).toBe(0);
  const lines = run.out.split('\n').filter((line) => line !== '');
  expect(lines, `one msg record in LSN ${from}..${to}`).toHaveLength(1);
  return (JSON.parse(lines[0]!) as { lsn: number }).lsn;
}

describe('retention respects live messages', () => {
  const data = tempDirectory('cairn-retention-pin-');
  let b: Broker;
  let amqpLsn: number;
  let mqttLsn: number;
  let publishedFrom: number;
  let publishedTo: number;

  beforeAll(async () => {
    b = await start(data.path);
    await b.channel.assertQueue('churn', { durable: true });
    await b.channel.assertQueue('pinned', { durable: true });
    const cold = await mqtt.connectAsync(`mqtt://127.0.0.1:${b.cairn.mqttPort!}`, { clientId: 'cold', clean: false });
    await cold.subscribeAsync('cold/#', { qos: 1 });
    await cold.endAsync();
    await churn(b);
    publishedFrom = Date.now();
    amqpLsn = await publishedAt(b, data.path, async () => {
      b.channel.sendToQueue('pinned', amqpPayload, { persistent: true });
      await b.channel.waitForConfirms();
    }, '--queue', 'pinned');
    publishedTo = Date.now();
    await churn(b);
    const publisher = await mqtt.connectAsync(`mqtt://127.0.0.1:${b.cairn.mqttPort!}`, { clientId: 'publisher' });
    mqttLsn = await publishedAt(b, data.path, async () => { await publisher.publishAsync('cold/x', mqttPayload, { qos: 1 }); }, '--client', 'cold');
    await publisher.endAsync();
    await churn(b);
    await snapshotAndRetain(b);
  });
  afterAll(async () => {
    await stop(b).catch(() => undefined);
    data.remove();
  });

  it('retention removed the older segments but kept the one holding the queued message: it is the oldest now', () => {
    const files = segmentFiles(data.path);
    expect(firstLsnOf(files[0]!)).toBeGreaterThan(1);
    expect(segmentHolding(data.path, amqpLsn)).toBe(files[0]);
    // Churn between the two messages put them in different segments: each pin is seen on its own.
    expect(segmentHolding(data.path, mqttLsn)).not.toBe(files[0]);
    expect(b.cairn.log.firstLsn).toBe(firstLsnOf(files[0]!));
    // Retention ran after snapshots: only the newest, the anchor and the successor may remain.
    expect(snapshotFiles(data.path).length).toBeLessThanOrEqual(3);
  });

  it('inspect stats names the pin: queue, seq, LSN, segment, age and bytes', async () => {
    const run = await inspect('stats', '--data', data.path, '--json');
    expect(run.code).toBe(0);
    const { pin } = JSON.parse(run.out) as { pin: Record<string, unknown> };
    const segments = (await inspect('segments', '--data', data.path, '--json')).out.trim().split('\n').map((l) => JSON.parse(l) as { type: string; bytes: number });
    const logBytes = segments.filter((s) => s.type === 'segment').reduce((sum, s) => sum + s.bytes, 0);
    expect(pin).toMatchObject({ destinationType: 'queue', destination: 'pinned', seq: 1, lsn: amqpLsn, segment: segmentFiles(data.path)[0], pinnedBytes: logBytes });
    expect(pin['timestamp']).toBeGreaterThanOrEqual(publishedFrom);
    expect(pin['timestamp']).toBeLessThanOrEqual(publishedTo);
    expect(pin['ageSeconds']).toBeGreaterThanOrEqual(0);
    const text = await inspect('stats', '--data', data.path);
    expect(text.out).toContain(`oldest live message: queue "pinned" seq 1, LSN ${amqpLsn}`);
  });

  it('/metrics reports the same pin', async () => {
    const families = await metrics(b);
    expect(sample(families, 'cairn_log_pinned_lsn')).toBe(amqpLsn);
    expect(sample(families, 'cairn_log_pinned_seq', { destination_type: 'queue', destination: 'pinned' })).toBe(1);
    // The pin is in the oldest segment: it holds the whole log.
    expect(sample(families, 'cairn_log_pinned_bytes')).toBe(sample(families, 'cairn_log_bytes'));
    const age = sample(families, 'cairn_log_oldest_live_message_age_seconds')!;
    expect(age).toBeGreaterThanOrEqual((Date.now() - publishedTo) / 1000 - 1);
    expect(age).toBeLessThanOrEqual((Date.now() - publishedFrom) / 1000 + 1);
  });

  it('after a restart and more retention the segment is still there, and the message comes back byte for byte', async () => {
    await stop(b);
    b = await start(data.path);
    await churn(b);
    await snapshotAndRetain(b);
    expect(segmentHolding(data.path, amqpLsn)).toBe(segmentFiles(data.path)[0]);
    expect(firstLsnOf(segmentFiles(data.path)[0]!)).toBeLessThanOrEqual(amqpLsn);
    const message = await b.channel.get('pinned');
    expect(message).not.toBe(false);
    expect(Buffer.compare((message as amqp.GetMessage).content, amqpPayload)).toBe(0);
    b.channel.ack(message as amqp.GetMessage);
    await until(async () => (await queueMessages(b, 'pinned')) === 0, 'the pinned queue to be empty');
  });

  it('once consumed, the next snapshot + retention removes its segment; the MQTT session message pins the log now', async () => {
    const amqpSegment = segmentHolding(data.path, amqpLsn)!;
    await churn(b);
    await snapshotAndRetain(b);
    expect(fs.existsSync(join(data.path, amqpSegment))).toBe(false);
    expect(segmentHolding(data.path, mqttLsn)).toBe(segmentFiles(data.path)[0]);
    const families = await metrics(b);
    expect(sample(families, 'cairn_log_pinned_lsn')).toBe(mqttLsn);
    expect(sample(families, 'cairn_log_pinned_seq', { destination_type: 'session', destination: 'cold' })).toBe(1);
    const { pin } = JSON.parse((await inspect('stats', '--data', data.path, '--json')).out) as { pin: Record<string, unknown> };
    expect(pin).toMatchObject({ destinationType: 'session', destination: 'cold', lsn: mqttLsn });
  });

  it('the MQTT message comes back byte for byte; once acknowledged nothing pins the log and its segment goes', async () => {
    const mqttSegment = segmentHolding(data.path, mqttLsn)!;
    const received: Buffer[] = [];
    // The queued message may come in the same read as the CONNACK: listen before connecting.
    const cold = mqtt.connect(`mqtt://127.0.0.1:${b.cairn.mqttPort!}`, { clientId: 'cold', clean: false });
    cold.on('message', (_topic, payload) => received.push(payload));
    await until(() => received.length === 1, 'the queued MQTT message');
    expect(Buffer.compare(received[0]!, mqttPayload)).toBe(0);
    // MQTT.js sends the PUBACK itself; the pin moves once the broker has recorded it.
    await until(async () => sample(await metrics(b), 'cairn_log_pinned_lsn') === 0, 'nothing queued');
    await cold.endAsync();
    await churn(b);
    await snapshotAndRetain(b);
    expect(fs.existsSync(join(data.path, mqttSegment))).toBe(false);
    expect(firstLsnOf(segmentFiles(data.path)[0]!)).toBeGreaterThan(mqttLsn);
    const families = await metrics(b);
    expect(sample(families, 'cairn_log_oldest_live_message_age_seconds')).toBe(0);
    expect(families.get('cairn_log_pinned_seq')?.samples ?? []).toEqual([]);
    const { pin } = JSON.parse((await inspect('stats', '--data', data.path, '--json')).out) as { pin: unknown };
    expect(pin).toBeNull();
  });
});
