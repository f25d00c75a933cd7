/**
 * Failover on the JetStream log (issue 17): two `cairn serve --log nats://…/stream`
 * processes on one three-node nats-server cluster. The first takes the writer
 * lease and serves; the second waits as a standby (no listener open). MQTT
 * publishes get their PUBACKs and AMQP publishes their confirms from the
 * leader; the leader is killed with SIGKILL; the standby takes the lease once
 * its key expires, fences the stream, replays what it has not followed yet
 * (a warm standby follows the stream while it waits) and serves: every
 * acknowledged message is there, for the MQTT persistent session and the AMQP
 * durable queue. The takeover time (kill to the standby's ready line) is
 * printed. A leader paused (SIGSTOP) past its lease and resumed finds its
 * lease taken, fails its log and stops (exit 74) without writing again.
 */
import amqp from 'amqplib';
import { connectPersistentSession } from '../support/persistent-session.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsCluster, type NatsCluster } from '../../tools/nats-cluster.js';
import { startBroker, tempDataDir, type BrokerProcess } from '../support/broker-process.js';
import { until } from '../support/kit.js';

let cluster: NatsCluster;
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  cluster = await startNatsCluster();
});

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await cluster?.stop();
});

const leaseTtl = '2s';

function serve(stream: string, lines: string[], readyTimeoutMs = 15_000): Promise<BrokerProcess> {
  const data = tempDataDir('cairn-failover-');
  cleanups.push(() => data.remove());
  const started = startBroker(data.dir, ['--log', `nats://${cluster.servers}/${stream}`, '--lease-ttl', leaseTtl], {}, readyTimeoutMs, lines);
  started.then((broker) => cleanups.push(() => broker.kill()), () => undefined);
  return started;
}


describe('failover on the JetStream log', () => {
  it('kill -9 the leader: the standby takes over and every acknowledged message is there', async () => {
    const leaderLines: string[] = [];
    const leader = await serve('failover', leaderLines);
    const standbyLines: string[] = [];
    const standbyReady = serve('failover', standbyLines, 60_000);
    await until(() => standbyLines.some((line) => line.includes('standby: another node writes the log')), 'the second node to wait as a standby', 15_000);

    // MQTT: a persistent session subscribed, offline; QoS 1 publishes, each PUBACKed.
    const reader = await connectPersistentSession(leader.mqttPort, 'reader', cleanups);
    await reader.subscribeAsync('audit/#', { qos: 1 });
    await reader.endAsync();
    const publisher = await connectPersistentSession(leader.mqttPort, 'publisher', cleanups);
    const mqttAcked: string[] = [];
    for (let i = 1; i <= 100; i++) {
      await publisher.publishAsync('audit/event', `event-${i}`, { qos: 1 });
      mqttAcked.push(`event-${i}`);
    }
    // AMQP: a durable queue, persistent publishes with publisher confirms, 50 outstanding at a time.
    const connection = await amqp.connect(`amqp://127.0.0.1:${leader.amqpPort}`);
    const channel = await connection.createConfirmChannel();
    await channel.assertQueue('orders', { durable: true });
    const amqpConfirmed: string[] = [];
    for (let batch = 0; batch < 4; batch++) {
      const bodies = Array.from({ length: 50 }, (_, i) => `order-${batch * 50 + i + 1}`);
      for (const body of bodies) channel.sendToQueue('orders', Buffer.from(body), { persistent: true });
      await channel.waitForConfirms();
      amqpConfirmed.push(...bodies);
    }
    connection.on('error', () => undefined);

    const killedAt = performance.now();
    await leader.kill();
    const standby = await standbyReady;
    const takeoverMs = performance.now() - killedAt;
    console.log(standbyLines.filter((line) => /recover|took the writer|replay/.test(line)).join('\n'));
    console.log(`takeover: ${Math.round(takeoverMs)} ms from SIGKILL of the leader to the standby's ready line (lease TTL ${leaseTtl})`);
    expect(takeoverMs).toBeLessThan(15_000);
    expect(standbyLines.some((line) => line.includes('took the writer lease'))).toBe(true);
    // Warm: the standby followed the stream while it waited, so the takeover replays only the last few records.
    const tookOver = standbyLines.flatMap((line) => { try { return [JSON.parse(line) as { msg?: string; warm?: { appliedWhileWaiting: number }; records?: number }]; } catch { return []; } })
      .filter((entry) => entry.msg === 'took the writer lease: this node writes the log' || entry.msg?.startsWith('log replayed') === true);
    const warm = tookOver.find((entry) => entry.warm !== undefined)?.warm;
    expect(warm?.appliedWhileWaiting ?? 0).toBeGreaterThanOrEqual(mqttAcked.length + amqpConfirmed.length);
    expect(tookOver.find((entry) => entry.records !== undefined)?.records).toBeLessThan(warm!.appliedWhileWaiting);

    const received: string[] = [];
    await connectPersistentSession(standby.mqttPort, 'reader', cleanups, received);
    await until(() => received.length >= mqttAcked.length, `the ${mqttAcked.length} acknowledged MQTT messages (got ${received.length})`);
    expect(new Set(received)).toEqual(new Set(mqttAcked));

    const consumer = await amqp.connect(`amqp://127.0.0.1:${standby.amqpPort}`);
    cleanups.push(() => consumer.close().catch(() => undefined));
    const consumerChannel = await consumer.createChannel();
    const bodies: string[] = [];
    await consumerChannel.consume('orders', (message) => {
      if (message) bodies.push(message.content.toString());
    }, { noAck: true });
    await until(() => bodies.length >= amqpConfirmed.length, `the ${amqpConfirmed.length} confirmed AMQP messages (got ${bodies.length})`);
    expect(bodies).toEqual(amqpConfirmed);
  });

  it('a leader paused past its lease (SIGSTOP) and resumed does not write again: it stops (exit 74) and the new leader keeps every message', async () => {
    const leaderLines: string[] = [];
    const leader = await serve('paused', leaderLines);
    const standbyLines: string[] = [];
    const standbyReady = serve('paused', standbyLines, 60_000);
    await until(() => standbyLines.some((line) => line.includes('standby: another node writes the log')), 'the second node to wait as a standby', 15_000);
    const reader = await connectPersistentSession(leader.mqttPort, 'reader', cleanups);
    await reader.subscribeAsync('audit/#', { qos: 1 });
    await reader.endAsync();
    const publisher = await connectPersistentSession(leader.mqttPort, 'publisher', cleanups);
    const acked: string[] = [];
    for (let i = 1; i <= 20; i++) {
      await publisher.publishAsync('audit/event', `before-${i}`, { qos: 1 });
      acked.push(`before-${i}`);
    }

    leader.child.kill('SIGSTOP');
    const standby = await standbyReady;
    const second = await connectPersistentSession(standby.mqttPort, 'publisher-2', cleanups);
    for (let i = 1; i <= 20; i++) {
      await second.publishAsync('audit/event', `after-${i}`, { qos: 1 });
      acked.push(`after-${i}`);
    }
    leader.child.kill('SIGCONT');
    // Its next lease renewal names a revision that is gone: it fails its log and stops, as on a failed fdatasync.
    expect(await leader.exited).toEqual({ code: 74, signal: null });
    expect(leaderLines.some((line) => line.includes('this node no longer writes the log'))).toBe(true);

    const received: string[] = [];
    await connectPersistentSession(standby.mqttPort, 'reader', cleanups, received);
    await until(() => received.length >= acked.length, `the ${acked.length} acknowledged messages (got ${received.length})`);
    expect(new Set(received)).toEqual(new Set(acked));
    // The new leader still writes: the deposed one neither fenced it off nor interleaved with it.
    await second.publishAsync('audit/event', 'last', { qos: 1 });
    await until(() => received.includes('last'), 'a publish after the old leader stopped');
  });
});
