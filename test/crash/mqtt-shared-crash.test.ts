/**
 * A persistent shared-subscription group across kill -9: the broker runs as a
 * child process (`cairn serve`) and is killed with SIGKILL between phases,
 * waiting before each kill on facts from the HTTP API (the log durable, the
 * group owing nothing), never on a fixed sleep. Every PUBACKed message reaches
 * the group exactly once per phase; what was delivered before a crash comes
 * back with DUP; what the members acknowledged never comes back.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { afterEach, describe, expect, it } from 'vitest';
import { untilDurable } from '../support/broker-log-position.js';
import { startBroker, tempDataDir, type BrokerProcess } from '../support/broker-process.js';
import { until } from '../support/kit.js';
import { RawMqttClient } from '../support/raw-mqtt.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const group = '$share/jobs/work/#';

async function broker(dir: string): Promise<BrokerProcess> {
  const running = await startBroker(dir, ['--amqp-port', 'off', '--snapshot-every', '25']);
  cleanups.push(() => (running.child.exitCode === null ? running.kill() : undefined));
  return running;
}

type Received = Array<{ payload: string; dup: boolean }>;

async function client(port: number, clientId: string, received?: Received): Promise<MqttClient> {
  const c = mqtt.connect({ host: '127.0.0.1', port, clientId, clean: false, reconnectPeriod: 0, protocolVersion: 4 });
  if (received) c.on('message', (_topic, payload, packet) => received.push({ payload: payload.toString(), dup: packet.dup }));
  cleanups.push(() => new Promise<void>((done) => c.end(true, {}, () => done())));
  await new Promise<void>((resolve, reject) => {
    c.once('connect', () => resolve());
    c.once('error', reject);
  });
  return c;
}

/** A member that never acknowledges (MQTT.js cannot hold several PUBACKs back). */
async function holdingMember(port: number, clientId: string): Promise<RawMqttClient> {
  const raw = await RawMqttClient.open(port);
  cleanups.push(() => raw.close());
  await raw.connect(clientId, false);
  return raw;
}

interface GroupView { readonly name: string; readonly persistent: boolean; readonly ready: number; readonly inflight: number; readonly members: Array<{ clientId: string; connected: boolean }> }

async function groupView(running: BrokerProcess): Promise<GroupView | undefined> {
  const response = await fetch(`http://127.0.0.1:${running.httpPort}/api/shared-subscriptions`);
  const { groups } = (await response.json()) as { groups: GroupView[] };
  return groups.find((g) => g.name === group);
}

const published = Array.from({ length: 20 }, (_, i) => `job-${i}`);

describe('a persistent shared-subscription group across kill -9', () => {
  it('keeps every PUBACKed message, redelivers the ones in flight with DUP, and never the acknowledged ones', { timeout: 60_000 }, async () => {
    const data = tempDataDir();
    cleanups.push(() => data.remove());
    let running = await broker(data.dir);

    // Two persistent members join and go offline.
    const first = await holdingMember(running.mqttPort, 'm1');
    first.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: group, qos: 1 }] });
    expect((await first.waitFor((p) => p.cmd === 'suback')) as unknown).toMatchObject({ granted: [1] });
    first.close();
    const second = await client(running.mqttPort, 'm2');
    expect((await second.subscribeAsync(group, { qos: 1 })).map((g) => g.qos)).toEqual([1]);
    await second.endAsync();
    const publisher = await client(running.mqttPort, 'producer');
    for (const payload of published) await publisher.publishAsync('work/x', payload, { qos: 1 });

    await running.kill();
    running = await broker(data.dir);
    expect(await groupView(running)).toMatchObject({ persistent: true, ready: 20, inflight: 0 });

    // m1 comes back and takes everything without acknowledging it; the deliveries are durable, then the crash.
    const holder = await holdingMember(running.mqttPort, 'm1');
    await until(() => holder.received.filter((p) => p.cmd === 'publish').length === 20, 'twenty deliveries to m1');
    const firstRound = holder.received.filter((p) => p.cmd === 'publish') as unknown as Array<{ payload: Buffer; dup: boolean }>;
    expect(firstRound.map((p) => p.payload.toString())).toEqual(published);
    expect(firstRound.every((p) => !p.dup)).toBe(true);
    await untilDurable(running, 'the deliver records');
    await running.kill();

    // Both members come back: between them every message once, each marked DUP.
    running = await broker(data.dir);
    const got: Received = [];
    const back = [await client(running.mqttPort, 'm1', got), await client(running.mqttPort, 'm2', got)];
    await until(() => got.length >= 20, 'twenty redeliveries');
    expect(got.map((m) => m.payload).sort()).toEqual([...published].sort());
    expect(got.every((m) => m.dup)).toBe(true);
    await until(async () => (await groupView(running))?.ready === 0 && (await groupView(running))?.inflight === 0, 'the group owing nothing');
    await untilDurable(running, 'the acks');
    for (const member of back) await member.endAsync();
    await running.kill();

    // Acknowledged: nothing comes back, and the group is still there for its members.
    running = await broker(data.dir);
    expect(await groupView(running)).toMatchObject({ persistent: true, ready: 0, inflight: 0 });
    const late: Received = [];
    await client(running.mqttPort, 'm1', late);
    await until(async () => (await groupView(running))?.members.find((m) => m.clientId === 'm1')?.connected === true, 'm1 connected');
    expect(late).toEqual([]);
  });
});
