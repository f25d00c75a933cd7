/**
 * Direct reply-to (amq.rabbitmq.reply-to) with amqplib, RabbitMQ's behaviour
 * as the reference: an RPC client consumes from the pseudo-queue in no-ack
 * mode and publishes a request with reply_to = amq.rabbitmq.reply-to; the
 * server sees reply_to rewritten to the client's own name and its reply,
 * published to the default exchange with that name, reaches the client
 * directly — no queue, nothing written to the log. A reply to a consumer
 * that is gone is dropped, or returned when mandatory; consuming in ack mode
 * and publishing with no reply consumer on the channel are 406.
 */
import type { Channel, ConsumeMessage } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningCairn } from '../../src/server.js';
import { EmbeddedAmqpBroker } from '../support/embedded-amqp-broker.js';
import { until } from '../support/kit.js';

const broker = new EmbeddedAmqpBroker();
afterEach(() => broker.cleanUp());

const replyTo = 'amq.rabbitmq.reply-to';

async function refusal(operation: Promise<unknown>): Promise<{ code?: number; message: string }> {
  return operation.then(
    () => {
      throw new Error('expected the broker to refuse');
    },
    (error: unknown) => error as { code?: number; message: string },
  );
}

/** An RPC server on queue `rpc`: answers each request with its body upper-cased, to its reply_to. */
async function startServer(cairn: RunningCairn, requests: ConsumeMessage[]): Promise<Channel> {
  const ch = await broker.channel(cairn);
  await ch.assertQueue('rpc');
  await ch.consume('rpc', (message) => {
    if (message === null) return;
    requests.push(message);
    ch.sendToQueue(message.properties.replyTo as string, Buffer.from(message.content.toString().toUpperCase()), { correlationId: message.properties.correlationId as string });
    ch.ack(message);
  });
  return ch;
}

describe('direct reply-to', () => {
  it('an RPC round trip: the request carries the client\'s own reply name, the replies come back directly, and nothing is logged for them', async () => {
    const cairn = await broker.start(broker.dataDirectory());
    const requests: ConsumeMessage[] = [];
    await startServer(cairn, requests);
    const client = await broker.channel(cairn);
    const replies: Array<{ body: string; correlationId: unknown; routingKey: string; exchange: string }> = [];
    await client.consume(replyTo, (message) => {
      if (message !== null) replies.push({ body: message.content.toString(), correlationId: message.properties.correlationId, routingKey: message.fields.routingKey, exchange: message.fields.exchange });
    }, { noAck: true });
    const nextLsn = cairn.broker.log.nextLsn;
    for (const [i, word] of ['ping', 'pong', 'done'].entries()) client.sendToQueue('rpc', Buffer.from(word), { replyTo, correlationId: `c${i}` });
    await until(() => replies.length === 3, 'three replies');

    const replyName = requests[0]!.properties.replyTo as string;
    expect(replyName).toMatch(/^amq\.rabbitmq\.reply-to\.[A-Za-z0-9_-]+$/);
    expect(requests.map((r) => r.properties.replyTo)).toEqual([replyName, replyName, replyName]);
    expect(replies).toEqual(['PING', 'PONG', 'DONE'].map((body, i) => ({ body, correlationId: `c${i}`, routingKey: replyName, exchange: '' })));
    // The requests went through a transient queue and the replies through no queue: not one record.
    await cairn.broker.flush();
    expect(cairn.broker.log.nextLsn).toBe(nextLsn);
    expect(cairn.broker.queues.has(replyName)).toBe(false);
    // A passive declare of the pseudo-queue and of a live reply name answers, as RabbitMQ's does.
    await client.checkQueue(replyTo);
    await client.checkQueue(replyName);
  });

  it('two clients get their own replies; a reply to a client that is gone is dropped, or returned when mandatory', async () => {
    const cairn = await broker.start(broker.dataDirectory());
    const requests: ConsumeMessage[] = [];
    const server = await startServer(cairn, requests);
    const got: Record<string, string[]> = { a: [], b: [] };
    const clients: Record<string, Channel> = {};
    for (const name of ['a', 'b']) {
      const ch = await broker.channel(cairn);
      clients[name] = ch;
      await ch.consume(replyTo, (message) => {
        if (message !== null) got[name]!.push(message.content.toString());
      }, { noAck: true });
      ch.sendToQueue('rpc', Buffer.from(`from-${name}`), { replyTo });
    }
    await until(() => got['a']!.length === 1 && got['b']!.length === 1, 'each client its reply');
    expect(got).toEqual({ a: ['FROM-A'], b: ['FROM-B'] });

    const goneName = requests.find((r) => r.content.toString() === 'from-a')!.properties.replyTo as string;
    await clients['a']!.close();
    const returned: string[] = [];
    server.on('return', (message: ConsumeMessage) => returned.push(message.fields.routingKey));
    server.publish('', goneName, Buffer.from('late'), { mandatory: true });
    server.publish('', goneName, Buffer.from('late, not mandatory'));
    await until(() => returned.length === 1, 'the mandatory reply returned');
    expect(returned).toEqual([goneName]);
    await (await broker.channel(cairn)).checkQueue('rpc');
    expect(got['b']).toEqual(['FROM-B']);
  });

  it('consuming in ack mode, and publishing with reply_to but no reply consumer on the channel, are 406', async () => {
    const cairn = await broker.start(broker.dataDirectory());
    const ackMode = await refusal((await broker.channel(cairn)).consume(replyTo, () => undefined, { noAck: false }));
    expect(ackMode.code).toBe(406);
    expect(ackMode.message).toContain('reply consumer cannot acknowledge');
    const ch = await broker.channel(cairn);
    await ch.assertQueue('rpc');
    const closed = new Promise<Error>((resolve) => ch.on('error', resolve));
    ch.sendToQueue('rpc', Buffer.from('x'), { replyTo });
    const error = (await closed) as Error & { code?: number };
    expect(error.code).toBe(406);
    expect(error.message).toContain('fast reply consumer does not exist');
  });
});
