/**
 * `cairn inspect` and `cairn recover` on a JetStream log (issue 17): a broker
 * serves `--log nats://…/stream` on a three-node nats-server cluster and takes
 * a snapshot; while it still serves, the inspector reads the stream and its
 * snapshot bucket (without a lease, publishing nothing): segments, verify,
 * records, the projected state, a message's trace; `recover --from nats://…`
 * writes a file-log data directory whose broker serves the state of that
 * moment, and `recover --to nats://…/newstream` a new stream whose broker
 * does. The stream's first LSN is the first writer's fence (no record),
 * which recover skips. The broker runs with `--nats-replicas 1`: the stream
 * it creates has one replica.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsCluster, type NatsCluster } from '../../tools/nats-cluster.js';
import { runCairnCommand, startBroker, tempDataDir, type BrokerProcess } from '../support/broker-process.js';

let cluster: NatsCluster;
let broker: BrokerProcess;
let location: string;
const cleanups: Array<() => Promise<void> | void> = [];

const published = 30;
const acked = 10;

beforeAll(async () => {
  cluster = await startNatsCluster();
  location = `nats://${cluster.servers}/inspected`;
  const data = tempDataDir('cairn-jetstream-inspect-');
  cleanups.push(() => data.remove());
  broker = await startBroker(data.dir, ['--log', location, '--lease-ttl', '2s', '--snapshot-every', '20', '--mqtt-port', 'off', '--nats-replicas', '1']);
  cleanups.push(() => broker.kill());
  const connection = await amqp.connect(`amqp://127.0.0.1:${broker.amqpPort}`);
  cleanups.push(() => connection.close().catch(() => undefined));
  const channel = await connection.createConfirmChannel();
  await channel.assertQueue('orders', { durable: true });
  for (let i = 1; i <= published; i++) channel.sendToQueue('orders', Buffer.from(`order-${i}`), { persistent: true });
  await channel.waitForConfirms();
  for (let i = 0; i < acked; i++) {
    const message = await channel.get('orders');
    expect(message).not.toBe(false);
    channel.ack(message as amqp.GetMessage);
  }
  // A round trip after the acks: the broker has read them (their records are written before the next snapshot).
  await channel.checkQueue('orders');
}, 60_000);

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await cluster?.stop();
});

async function cairn(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runCairnCommand(args, 30_000);
}

/** A broker serving the recovered log holds exactly the orders that were not acknowledged, in order. */
async function expectOrdersServed(dir: string, args: string[]): Promise<void> {
  const served = await startBroker(dir, args);
  cleanups.push(() => served.kill());
  const connection = await amqp.connect(`amqp://127.0.0.1:${served.amqpPort}`);
  cleanups.push(() => connection.close().catch(() => undefined));
  const channel = await connection.createChannel();
  const bodies: string[] = [];
  for (;;) {
    const message = await channel.get('orders', { noAck: true });
    if (message === false) break;
    bodies.push(message.content.toString());
  }
  expect(bodies).toEqual(Array.from({ length: published - acked }, (_, i) => `order-${acked + i + 1}`));
}

describe('inspect and recover on a JetStream log', () => {
  it('--nats-replicas 1 makes a stream of one replica', async () => {
    const connection = await connect({ servers: cluster.servers.split(',') });
    try {
      const info = await (await jetstreamManager(connection)).streams.info('inspected');
      expect(info.config.num_replicas).toBe(1);
    } finally {
      await connection.close();
    }
  });

  it('segments, verify and records read the stream beside the serving node', async () => {
    const segments = await cairn('inspect', 'segments', '--data', location);
    expect(segments.code, segments.stderr).toBe(0);
    expect(segments.stdout).toContain('stream inspected');

    const verify = await cairn('inspect', 'verify', '--data', location);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);

    const records = await cairn('inspect', 'records', '--data', location, '--kind', 'msg', '--json');
    expect(records.code, records.stderr).toBe(0);
    const lsns = records.stdout.trim().split('\n').map((line) => (JSON.parse(line) as { lsn: number }).lsn);
    // Retention may already have purged the stream below the snapshot (the acked messages); the queued ones stay.
    expect(lsns.length).toBeGreaterThanOrEqual(published - acked);
    expect(lsns.length).toBeLessThanOrEqual(published);
    // LSN 1 is the writer's fence: no record there.
    expect(Math.min(...lsns)).toBeGreaterThan(1);

    const follow = await cairn('inspect', 'records', '--data', location, '--follow');
    expect(follow.code).toBe(2);
    expect(follow.stderr).toContain('--follow reads a data directory');
  });

  it('state is the snapshot plus the stream after it, and trace follows a queued message', async () => {
    const state = await cairn('inspect', 'state', '--data', location, '--json');
    expect(state.code, state.stderr).toBe(0);
    const projected = JSON.parse(state.stdout) as { snapshotLsn: number; summary: { queues: Array<{ name: string; depth: number }> } };
    expect(projected.snapshotLsn).toBeGreaterThan(0);
    expect(projected.summary.queues.find((queue) => queue.name === 'orders')?.depth).toBe(published - acked);

    const trace = await cairn('inspect', 'trace', '--data', location, '--queue', 'orders', '--seq', String(acked + 1));
    expect(trace.code, trace.stderr).toBe(0);
    expect(trace.stdout).toContain(`orders seq ${acked + 1}: still pending`);
  });

  it('recover writes a file-log directory whose broker serves the state of that moment', async () => {
    const target = tempDataDir('cairn-jetstream-recovered-');
    cleanups.push(() => target.remove());
    const to = `${target.dir}/recovered`;
    const recovered = await cairn('recover', '--from', location, '--to', to, '--time', new Date().toISOString());
    expect(recovered.code, recovered.stderr).toBe(0);
    await expectOrdersServed(to, ['--mqtt-port', 'off']);
  });

  it('recover --to nats://…/newstream writes a new stream, same LSNs and records, whose broker serves the state of that moment; an existing stream is refused', async () => {
    const to = `nats://${cluster.servers}/recovered`;
    const recovered = await cairn('recover', '--from', location, '--to', to, '--time', new Date().toISOString(), '--nats-replicas', '1');
    expect(recovered.code, recovered.stderr).toBe(0);
    const verify = await cairn('inspect', 'verify', '--data', to);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    // Every record of the new stream is the source's record at the same LSN.
    const lines = async (data: string) => (await cairn('inspect', 'records', '--data', data, '--json')).stdout.trim().split('\n');
    const [source, copy] = [await lines(location), await lines(to)];
    const byLsn = new Map(source.map((line) => [(JSON.parse(line) as { lsn: number }).lsn, line]));
    expect(copy.length).toBeGreaterThanOrEqual(published - acked);
    for (const line of copy) expect(line).toBe(byLsn.get((JSON.parse(line) as { lsn: number }).lsn));

    const data = tempDataDir('cairn-jetstream-recovered-stream-');
    cleanups.push(() => data.remove());
    await expectOrdersServed(data.dir, ['--log', to, '--lease-ttl', '2s', '--mqtt-port', 'off', '--nats-replicas', '1']);

    const again = await cairn('recover', '--from', location, '--to', to, '--time', new Date().toISOString());
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('stream recovered exists');
  });

  it('a stream that does not exist is a usage error naming it', async () => {
    const missing = await cairn('inspect', 'segments', '--data', `nats://${cluster.servers}/no_such_stream`);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no stream no_such_stream');
  });
});
