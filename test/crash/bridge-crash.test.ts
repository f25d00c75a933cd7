/**
 * One publish, three destinations, across kill -9 — the reference article's
 * boiler scenario with real clients (MQTT.js and amqplib) against `cairn serve`
 * as a child process: an AMQP worker's durable queue bound to amq.topic with
 * `sensors.*.temp`, MQTT QoS 1 publishes, the ingest route `sensors/#`, and
 * the reverse direction from amq.topic to an MQTT subscriber.
 */
import amqp from 'amqplib';
import mqtt from 'mqtt';
import { afterEach, describe, expect, it } from 'vitest';
import { startBroker, tempDataDir, type BrokerProcess } from '../support/broker-process.js';

const cleanups: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function broker(dir: string): Promise<BrokerProcess> {
  const running = await startBroker(dir, ['--ingest', 'sensors/#:sensor_readings,fleet/+/pos:pings']);
  cleanups.push(() => (running.child.exitCode === null ? running.kill() : undefined));
  return running;
}

async function amqpChannel(port: number): Promise<amqp.Channel> {
  const connection = await amqp.connect(`amqp://127.0.0.1:${port}`);
  connection.on('error', () => undefined); // the broker may be killed under it
  cleanups.push(() => Promise.race([connection.close(), sleep(500)]));
  return connection.createChannel();
}

async function mqttClient(port: number, clientId: string): Promise<mqtt.MqttClient> {
  const client = await mqtt.connectAsync({ host: '127.0.0.1', port, clientId, reconnectPeriod: 0 });
  cleanups.push(() => Promise.race([client.endAsync(true), sleep(500)]));
  return client;
}

async function documents(httpPort: number, collection: string, filter?: unknown): Promise<Array<Record<string, unknown>>> {
  const query = filter === undefined ? '' : `?filter=${encodeURIComponent(JSON.stringify(filter))}`;
  const response = await fetch(`http://127.0.0.1:${httpPort}/api/collections/${collection}/documents${query}`);
  if (response.status === 404) return [];
  return ((await response.json()) as { documents: Array<Record<string, unknown>> }).documents;
}

describe('MQTT ↔ AMQP bridge and ingest', () => {
  it('the boiler scenario: an MQTT QoS 1 publish reaches the AMQP worker as delivery_mode 2 and the collection; AMQP amq.topic reaches MQTT', async () => {
    const data = tempDataDir('cairn-bridge-');
    cleanups.push(() => data.remove());
    const running = await broker(data.dir);

    const channel = await amqpChannel(running.amqpPort);
    await channel.assertQueue('temp-alerts', { durable: true });
    await channel.bindQueue('temp-alerts', 'amq.topic', 'sensors.*.temp');
    const seen: Array<{ exchange: string; routingKey: string; deliveryMode: unknown; body: string }> = [];
    await channel.consume('temp-alerts', (m) => {
      if (!m) return;
      seen.push({ exchange: m.fields.exchange, routingKey: m.fields.routingKey, deliveryMode: m.properties.deliveryMode, body: m.content.toString() });
      channel.ack(m);
    });

    const probe = await mqttClient(running.mqttPort, 'boiler-probe');
    await probe.publishAsync('sensors/boiler/temp', '{"value": 91.5, "unit": "C"}', { qos: 1 });
    await probe.publishAsync('sensors/boiler/pressure', '{"value": 2.1, "unit": "bar"}', { qos: 1 });
    for (let i = 0; i < 50 && seen.length === 0; i++) await sleep(20);
    await sleep(100);
    expect(seen).toEqual([{ exchange: 'amq.topic', routingKey: 'sensors.boiler.temp', deliveryMode: 2, body: '{"value": 91.5, "unit": "C"}' }]);
    const readings = await documents(running.httpPort, 'sensor_readings');
    expect(readings.map((d) => d['_topic'])).toEqual(['sensors/boiler/temp', 'sensors/boiler/pressure']);
    expect(readings[0]).toMatchObject({ value: 91.5, unit: 'C' });

    // The reverse direction: an AMQP publish to amq.topic reaches devices/+/cmd.
    const valve = await mqttClient(running.mqttPort, 'valve-watcher');
    const commands: Array<[string, string]> = [];
    valve.on('message', (topic, payload) => commands.push([topic, payload.toString()]));
    await valve.subscribeAsync('devices/+/cmd', { qos: 1 });
    channel.publish('amq.topic', 'devices.valve7.cmd', Buffer.from('{"open": false}'));
    for (let i = 0; i < 50 && commands.length === 0; i++) await sleep(20);
    expect(commands).toEqual([['devices/valve7/cmd', '{"open": false}']]);
  });

  it('the article\'s five ingest publishes give exactly its documents, and the $gte filter its two', async () => {
    const data = tempDataDir('cairn-ingest-');
    cleanups.push(() => data.remove());
    const running = await broker(data.dir);
    const client = await mqttClient(running.mqttPort, 'ingest-probe');
    await client.publishAsync('sensors/greenhouse/temp', '{"value": 27.3, "unit": "C"}', { qos: 1 });
    await client.publishAsync('sensors/greenhouse/humidity', '{"value": 71, "unit": "%"}', { qos: 1 });
    await client.publishAsync('sensors/garage/temp', '18.9', { qos: 1 });
    await client.publishAsync('fleet/u42/pos', '{"lat": 41.0151, "lon": 28.9795, "speed": 34}', { qos: 1 });
    await client.publishAsync('chat/general', '{"msg": "not mapped"}', { qos: 1 });
    const strip = (d: Record<string, unknown>): Record<string, unknown> => { const { _received_at: at, ...rest } = d; expect(typeof at).toBe('number'); return rest; };
    expect((await documents(running.httpPort, 'sensor_readings')).map(strip)).toEqual([
      { value: 27.3, unit: 'C', _topic: 'sensors/greenhouse/temp', _id: 1 },
      { value: 71, unit: '%', _topic: 'sensors/greenhouse/humidity', _id: 2 },
      { payload: 18.9, _topic: 'sensors/garage/temp', _id: 3 },
    ]);
    expect((await documents(running.httpPort, 'pings')).map(strip)).toEqual([{ lat: 41.0151, lon: 28.9795, speed: 34, _topic: 'fleet/u42/pos', _id: 1 }]);
    const hot = await documents(running.httpPort, 'sensor_readings', { value: { $gte: 25 } });
    expect(hot.map((d) => [d['_topic'], d['value'], d['unit']])).toEqual([['sensors/greenhouse/temp', 27.3, 'C'], ['sensors/greenhouse/humidity', 71, '%']]);
    const collections = (await (await fetch(`http://127.0.0.1:${running.httpPort}/api/collections`)).json()) as { collections: Array<{ name: string }> };
    expect(collections.collections.map((c) => c.name).sort()).toEqual(['pings', 'sensor_readings']);
  });

  it('worker offline: two PUBACKed readings survive kill -9 in the durable queue (binding included) and in the collection', async () => {
    const data = tempDataDir('cairn-bridge-crash-');
    cleanups.push(() => data.remove());
    let running = await broker(data.dir);
    let channel = await amqpChannel(running.amqpPort);
    await channel.assertQueue('temp-alerts', { durable: true });
    await channel.bindQueue('temp-alerts', 'amq.topic', 'sensors.*.temp');
    const probe = await mqttClient(running.mqttPort, 'boiler-probe');
    await probe.publishAsync('sensors/boiler/temp', '{"value": 92.8, "unit": "C"}', { qos: 1 });
    await probe.publishAsync('sensors/boiler/temp', '{"value": 95.1, "unit": "C"}', { qos: 1 });
    await running.kill();

    running = await broker(data.dir);
    expect(running.output.join('\n')).toContain('AMQP recovered 1 durable queues, 2 messages');
    channel = await amqpChannel(running.amqpPort);
    const got: Array<{ routingKey: string; deliveryMode: unknown; body: string }> = [];
    await channel.consume('temp-alerts', (m) => {
      if (!m) return;
      got.push({ routingKey: m.fields.routingKey, deliveryMode: m.properties.deliveryMode, body: m.content.toString() });
      channel.ack(m);
    });
    for (let i = 0; i < 50 && got.length < 2; i++) await sleep(20);
    expect(got).toEqual([
      { routingKey: 'sensors.boiler.temp', deliveryMode: 2, body: '{"value": 92.8, "unit": "C"}' },
      { routingKey: 'sensors.boiler.temp', deliveryMode: 2, body: '{"value": 95.1, "unit": "C"}' },
    ]);
    expect((await documents(running.httpPort, 'sensor_readings')).map((d) => d['value'])).toEqual([92.8, 95.1]);
    // The binding survived too: a new publish still reaches the queue.
    const again = await mqttClient(running.mqttPort, 'boiler-probe-2');
    await again.publishAsync('sensors/boiler/temp', '{"value": 96.0}', { qos: 1 });
    for (let i = 0; i < 50 && got.length < 3; i++) await sleep(20);
    expect(got[2]?.body).toBe('{"value": 96.0}');
  });
});
