/**
 * AMQP transactions (the tx class) with amqplib over real sockets (issue 13),
 * on a broker with a data directory: publishes on a transactional channel are
 * invisible until tx.commit and durable after commit-ok (also after a
 * restart), tx.rollback discards them; acks, nacks and rejects wait for the
 * commit too (a rollback leaves the deliveries unacknowledged, a closed
 * channel requeues them); mandatory publishes are returned at the commit;
 * RabbitMQ's refusals (confirm + tx either way, commit without select, a
 * missing exchange at publish) are 406 / 404; `cairn inspect records` and
 * `trace` show the transaction.
 */
import type { Channel, ConsumeMessage } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { txCommit, txRollback, txSelect } from '../../tools/amqp-transactions.js';
import { inspect } from '../support/cli-run.js';
import { drain, EmbeddedAmqpBroker } from '../support/embedded-amqp-broker.js';
import { until } from '../support/kit.js';

const embedded = new EmbeddedAmqpBroker();
afterEach(() => embedded.cleanUp());

async function count(channel: Channel, queue: string): Promise<number> {
  return (await channel.checkQueue(queue)).messageCount;
}

function closed(channel: Channel): Promise<Error & { code?: number }> {
  return new Promise((resolve) => channel.once('error', resolve));
}

/** Messages `channel` receives from `queue` (acks left to the test). */
async function consumeInto(channel: Channel, queue: string): Promise<ConsumeMessage[]> {
  const received: ConsumeMessage[] = [];
  await channel.consume(queue, (message) => { if (message !== null) received.push(message); });
  return received;
}

describe('AMQP transactions', () => {
  it('publishes are invisible until tx.commit, durable after commit-ok (restart), and discarded by tx.rollback', async () => {
    const directory = embedded.dataDirectory();
    let cairn = await embedded.start(directory);
    const publisher = await embedded.channel(cairn);
    const observer = await embedded.channel(cairn);
    await publisher.assertQueue('orders', { durable: true });
    await txSelect(publisher);
    for (const body of ['a', 'b', 'c']) publisher.sendToQueue('orders', Buffer.from(body), { persistent: true });
    // A round trip on the publisher's channel: the publishes have arrived, and are still buffered.
    await publisher.checkQueue('orders');
    expect(await count(observer, 'orders')).toBe(0);
    await txCommit(publisher);
    expect(await count(observer, 'orders')).toBe(3);

    publisher.sendToQueue('orders', Buffer.from('rolled back'), { persistent: true });
    await txRollback(publisher);
    await txCommit(publisher);
    expect(await count(observer, 'orders')).toBe(3);

    await embedded.stop();
    cairn = await embedded.start(directory);
    const after = await embedded.channel(cairn);
    expect(await drain(after, 'orders')).toEqual(['a', 'b', 'c']);
  });

  it('acks wait for the commit; a rollback leaves the deliveries unacknowledged and a closed channel requeues them', async () => {
    const directory = embedded.dataDirectory();
    let cairn = await embedded.start(directory);
    const setup = await embedded.channel(cairn);
    await setup.assertQueue('jobs', { durable: true });
    for (let i = 1; i <= 4; i++) setup.sendToQueue('jobs', Buffer.from(`job-${i}`), { persistent: true });
    await until(async () => (await count(setup, 'jobs')) === 4, 'four jobs queued');

    const connection = await embedded.connect(cairn);
    const worker = await connection.createChannel();
    await txSelect(worker);
    const received = await consumeInto(worker, 'jobs');
    await until(() => received.length === 4, 'four deliveries');
    worker.ack(received[0]!);
    worker.ack(received[1]!);
    await txRollback(worker);
    // Rolled back: the tags are still unacknowledged, so acking them again is allowed; this time committed.
    worker.ack(received[0]!);
    await txCommit(worker);
    worker.ack(received[1]!);
    // Acking a tag twice in one transaction is an unknown tag (406), as in RabbitMQ.
    const failure = closed(worker);
    worker.ack(received[1]!);
    expect((await failure).code).toBe(406);
    // The channel closed with job-2's ack uncommitted: jobs 2, 3 and 4 are back, redelivered; job-1 is gone for good.
    const checker = await embedded.channel(cairn);
    await until(async () => (await count(checker, 'jobs')) === 3, 'three jobs requeued');
    await embedded.stop();
    cairn = await embedded.start(directory);
    const after = await embedded.channel(cairn);
    expect(await drain(after, 'jobs')).toEqual(['job-2', 'job-3', 'job-4']);
  });

  it('nack with requeue, reject to a dead-letter exchange and publishes commit together, in the order sent', async () => {
    const cairn = await embedded.start(embedded.dataDirectory());
    const channel = await embedded.channel(cairn);
    await channel.assertQueue('dead', { durable: true });
    await channel.assertQueue('work', { durable: true, deadLetterExchange: '', deadLetterRoutingKey: 'dead' });
    for (const body of ['retry-me', 'kill-me']) channel.sendToQueue('work', Buffer.from(body), { persistent: true });
    await until(async () => (await count(channel, 'work')) === 2, 'two messages queued');
    await txSelect(channel);
    const first = await channel.get('work');
    const second = await channel.get('work');
    if (first === false || second === false) throw new Error('expected two messages');
    channel.nack(first, false, true);
    channel.reject(second, false);
    channel.sendToQueue('work', Buffer.from('follow-up'), { persistent: true });
    await channel.checkQueue('work');
    expect(await count(channel, 'dead')).toBe(0);
    await txCommit(channel);
    expect(await drain(channel, 'dead')).toEqual(['kill-me']);
    const again = await channel.get('work', { noAck: true });
    expect(again !== false && [again.content.toString(), again.fields.redelivered]).toEqual(['retry-me', true]);
    expect(await drain(channel, 'work')).toEqual(['follow-up']);
  });

  it('an unroutable mandatory publish is returned at tx.commit, not at basic.publish', async () => {
    const cairn = await embedded.start(embedded.dataDirectory());
    const channel = await embedded.channel(cairn);
    await txSelect(channel);
    const returned: string[] = [];
    channel.on('return', (message: { content: Buffer }) => returned.push(message.content.toString()));
    channel.publish('amq.direct', 'nobody', Buffer.from('lost'), { mandatory: true });
    await channel.checkExchange('amq.direct');
    expect(returned).toEqual([]);
    await txCommit(channel);
    expect(returned).toEqual(['lost']);
  });

  it('confirms and transactions exclude each other (406 either way); commit or rollback without tx.select is 406', async () => {
    const cairn = await embedded.start(embedded.dataDirectory());
    const connection = await embedded.connect(cairn);
    const confirming = await connection.createConfirmChannel();
    let failure = closed(confirming);
    txSelect(confirming).catch(() => undefined);
    expect((await failure).message).toMatch(/406 .*PRECONDITION_FAILED - cannot switch from confirm to tx mode/);

    const transactional = await connection.createChannel();
    await txSelect(transactional);
    failure = closed(transactional);
    (transactional as unknown as { rpc(method: number, fields: object, expect: number): Promise<unknown> })
      .rpc((85 << 16) | 10, { nowait: false }, (85 << 16) | 11).catch(() => undefined);
    expect((await failure).message).toMatch(/406 .*cannot switch from tx to confirm mode/);

    for (const end of [txCommit, txRollback]) {
      const plain = await connection.createChannel();
      failure = closed(plain);
      end(plain).catch(() => undefined);
      expect((await failure).message).toMatch(/406 .*PRECONDITION_FAILED - channel is not transactional/);
    }
  });

  it('a publish to a missing exchange fails at basic.publish (404), before any commit', async () => {
    const cairn = await embedded.start(embedded.dataDirectory());
    const channel = await embedded.channel(cairn);
    await txSelect(channel);
    const failure = closed(channel);
    channel.publish('no-such-exchange', 'k', Buffer.from('x'));
    expect((await failure).code).toBe(404);
  });

  it('cairn inspect records and trace show the transaction', async () => {
    const directory = embedded.dataDirectory();
    const cairn = await embedded.start(directory);
    const channel = await embedded.channel(cairn);
    await channel.assertQueue('audit', { durable: true });
    await txSelect(channel);
    channel.sendToQueue('audit', Buffer.from('in-tx-1'), { persistent: true });
    channel.sendToQueue('audit', Buffer.from('in-tx-2'), { persistent: true });
    await txCommit(channel);
    await embedded.stop();
    const records = await inspect('records', '--data', directory, '--kind', 'tx');
    expect(records.out).toMatch(/transaction begin/);
    expect(records.out).toMatch(/transaction commit/);
    const trace = await inspect('trace', '--data', directory, '--queue', 'audit', '--seq', '2');
    expect(trace.out).toMatch(/in-tx-2/);
    expect(trace.out).toMatch(/in a transaction begun at LSN \d+, committed at LSN \d+/);
  });
});
