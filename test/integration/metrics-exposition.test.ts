/**
 * /metrics and /metrics/per-object of an in-process Cairn with real AMQP and
 * MQTT clients, checked three ways:
 * - `promtool check metrics` (Prometheus's own linter) accepts both;
 * - RabbitMQ's prometheus plugin names are there for what both brokers have,
 *   aggregated on /metrics and one series per queue on /metrics/per-object,
 *   and the per-queue series add up to the aggregate;
 * - no family mixes a total series with per-object series (the old
 *   cairn_amqp_queue_messages{queue=""} made sum() count every message twice).
 *
 * Never skipped: without promtool the suite fails saying how to install it.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import amqp from 'amqplib';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServeArgs } from '../../src/config.js';
import { silentLogger } from '../../src/logger.js';
import { startCairn, type RunningCairn } from '../../src/server.js';
import { version } from '../../src/version.js';
import { tempDirectory, until } from '../support/kit.js';
import { doubleCountingFamilies, parseExposition, type Family } from '../support/prometheus-exposition.js';

const promtoolPath = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((candidate) => existsSync(candidate));

function promtoolCheck(text: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = execFile(promtoolPath!, ['check', 'metrics'], { timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, output: `${stdout}${stderr}` });
    });
    child.stdin!.end(text);
  });
}

const rabbitFamilies = [
  'rabbitmq_identity_info', 'rabbitmq_connections', 'rabbitmq_channels', 'rabbitmq_consumers', 'rabbitmq_queues',
  'rabbitmq_connections_opened_total', 'rabbitmq_connections_closed_total',
  'rabbitmq_global_messages_received_total', 'rabbitmq_global_messages_delivered_total', 'rabbitmq_global_consumers',
  'rabbitmq_queue_messages_ready', 'rabbitmq_queue_messages_unacked', 'rabbitmq_queue_messages', 'rabbitmq_queue_consumers',
  'rabbitmq_channel_consumers', 'rabbitmq_channel_messages_unacked',
];
const cairnFamilies = [
  'cairn_build_info', 'cairn_log_next_lsn', 'cairn_log_durable_lsn', 'cairn_log_fsync_seconds', 'cairn_log_batch_records',
  'cairn_snapshot_seconds', 'cairn_recovery_replay_seconds', 'cairn_mqtt_sessions',
  'cairn_log_pinned_lsn', 'cairn_log_pinned_seq', 'cairn_log_pinned_bytes', 'cairn_log_oldest_live_message_age_seconds',
];
const processFamilies = ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes'];
const queueFamilies = ['rabbitmq_queue_messages_ready', 'rabbitmq_queue_messages_unacked', 'rabbitmq_queue_messages', 'rabbitmq_queue_consumers'];

function value(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  return families.get(name)?.samples.find((sample) => Object.entries(labels).every(([key, wanted]) => sample.labels[key] === wanted))?.value;
}

describe('Prometheus expositions', () => {
  const data = tempDirectory('cairn-metrics-');
  let cairn: RunningCairn;
  let base: string;
  let connection: amqp.ChannelModel;
  let subscriber: mqtt.MqttClient;

  beforeAll(async () => {
    if (promtoolPath === undefined) {
      throw new Error('promtool is not installed: it comes with Debian\'s prometheus package — apt-get install -y --no-install-recommends prometheus (.ci/run does this, with the service kept from starting)');
    }
    cairn = await startCairn(parseServeArgs(['--data', data.path, '--mqtt-port', '0', '--amqp-port', '0', '--http-port', '0'], {}), silentLogger());
    base = `http://127.0.0.1:${cairn.httpPort!}`;
    connection = await amqp.connect(`amqp://127.0.0.1:${cairn.amqpPort!}`);
    const channel = await connection.createChannel();
    await channel.prefetch(1);
    for (const queue of ['alpha', 'beta', 'gamma']) await channel.assertQueue(queue, { durable: queue !== 'gamma' });
    for (let i = 0; i < 5; i++) channel.sendToQueue('alpha', Buffer.from(`a${i}`), { persistent: true });
    for (let i = 0; i < 2; i++) channel.sendToQueue('beta', Buffer.from(`b${i}`));
    const held: amqp.ConsumeMessage[] = [];
    await channel.consume('alpha', (message) => { if (message) held.push(message); });
    await until(() => held.length === 1, 'one unacked delivery on alpha (prefetch 1)');
    subscriber = await mqtt.connectAsync(`mqtt://127.0.0.1:${cairn.mqttPort!}`, { clientId: 'metrics-sub' });
    await subscriber.subscribeAsync('t/#', { qos: 1 });
    await subscriber.publishAsync('t/1', 'x', { qos: 1 });
  });
  afterAll(async () => {
    await subscriber?.endAsync();
    await connection?.close();
    await cairn?.close();
    data.remove();
  });

  const scrape = async (path: string): Promise<string> => {
    const response = await fetch(`${base}${path}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return response.text();
  };

  it('promtool check metrics accepts /metrics and /metrics/per-object', async () => {
    for (const path of ['/metrics', '/metrics/per-object']) {
      const result = await promtoolCheck(await scrape(path));
      expect({ path, ...result }).toEqual({ path, code: 0, output: '' });
    }
  });

  it('every family has HELP and TYPE; RabbitMQ\'s names, Cairn\'s own and the process metrics are all there', async () => {
    for (const path of ['/metrics', '/metrics/per-object']) {
      const families = parseExposition(await scrape(path));
      for (const family of families.values()) {
        expect({ path, name: family.name, help: family.help !== undefined, type: family.type !== undefined }).toEqual({ path, name: family.name, help: true, type: true });
      }
      for (const name of [...rabbitFamilies, ...cairnFamilies, ...processFamilies]) expect([path, families.has(name)]).toEqual([path, true]);
      expect(families.get('rabbitmq_global_messages_received_total')?.type).toBe('counter');
      expect(families.get('cairn_log_fsync_seconds')?.type).toBe('histogram');
      expect(doubleCountingFamilies(families)).toEqual([]);
      expect([...families.keys()].filter((name) => name.startsWith('cairn_amqp_'))).toEqual([]);
    }
  });

  it('/metrics sums queues into unlabelled series; /metrics/per-object has one series per queue, adding up to them', async () => {
    const aggregated = parseExposition(await scrape('/metrics'));
    const perObject = parseExposition(await scrape('/metrics/per-object'));
    expect(value(aggregated, 'rabbitmq_queue_messages_ready')).toBe(6);
    expect(value(aggregated, 'rabbitmq_queue_messages_unacked')).toBe(1);
    expect(value(aggregated, 'rabbitmq_queue_messages')).toBe(7);
    expect(value(aggregated, 'rabbitmq_queue_consumers')).toBe(1);
    expect(value(perObject, 'rabbitmq_queue_messages_ready', { vhost: '/', queue: 'alpha' })).toBe(4);
    expect(value(perObject, 'rabbitmq_queue_messages_unacked', { vhost: '/', queue: 'alpha' })).toBe(1);
    expect(value(perObject, 'rabbitmq_queue_messages_ready', { vhost: '/', queue: 'beta' })).toBe(2);
    expect(value(perObject, 'rabbitmq_queue_messages', { vhost: '/', queue: 'gamma' })).toBe(0);
    for (const name of queueFamilies) {
      expect(aggregated.get(name)?.samples.map((sample) => sample.labels)).toEqual([{}]);
      const perQueue = perObject.get(name)!.samples;
      expect(perQueue.map((sample) => sample.labels['queue']).sort()).toEqual(['alpha', 'beta', 'gamma']);
      expect(perQueue.reduce((sum, sample) => sum + sample.value, 0)).toBe(value(aggregated, name));
    }
    expect(value(aggregated, 'rabbitmq_connections')).toBe(2);
    expect(value(aggregated, 'rabbitmq_channels')).toBe(1);
    expect(value(aggregated, 'rabbitmq_channel_messages_unacked')).toBe(1);
    expect(value(aggregated, 'rabbitmq_queues')).toBe(3);
    expect(value(aggregated, 'rabbitmq_global_messages_received_total', { protocol: 'amqp091' })).toBe(7);
    expect(value(aggregated, 'rabbitmq_global_messages_received_total', { protocol: 'mqtt311' })).toBe(1);
    expect(value(aggregated, 'rabbitmq_global_messages_delivered_total', { protocol: 'mqtt311' })).toBe(1);
    expect(aggregated.get('cairn_build_info')?.samples).toEqual([{ name: 'cairn_build_info', labels: { version, node_version: process.version }, value: 1 }]);
  });

  it('the double-counting check catches a family with a total beside per-object series (the old queue="" shape)', () => {
    const old = parseExposition([
      '# HELP cairn_amqp_queue_messages Messages in AMQP queues by state',
      '# TYPE cairn_amqp_queue_messages gauge',
      'cairn_amqp_queue_messages{queue="alpha",state="ready"} 4',
      'cairn_amqp_queue_messages{queue="",state="ready"} 4',
    ].join('\n'));
    expect(doubleCountingFamilies(old)).toEqual(['cairn_amqp_queue_messages']);
  });
});
