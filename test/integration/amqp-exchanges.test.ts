/**
 * The reference article's AMQP scenarios, driven by amqplib over real TCP
 * against the real Broker on a MemoryLog: the direct / fanout / topic script
 * with its exact output (drained with basic.get), confirms + mandatory,
 * nack with requeue, a missing exchange. Headers exchanges: amqp-headers-exchange.test.ts.
 */
import amqp, { type Channel, type ChannelModel } from 'amqplib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { MemoryLog } from '../../src/core/record-log.js';
import { silentLogger } from '../../src/logger.js';
import { drain } from '../support/embedded-amqp-broker.js';
import { startAmqpServer, type AmqpServer } from '../../src/protocols/amqp/server.js';

let server: AmqpServer;
let connection: ChannelModel;

beforeEach(async () => {
  const broker = Broker.open({ log: new MemoryLog() });
  server = await startAmqpServer({ core: broker.amqp, host: '127.0.0.1', port: 0, logger: silentLogger() });
  connection = await amqp.connect(`amqp://127.0.0.1:${server.port}`);
});

afterEach(async () => {
  await connection.close().catch(() => undefined);
  await server.close();
});


describe('AMQP exchanges: the article script', () => {
  it('reports product Cairn in server-properties', () => {
    expect(connection.connection.serverProperties.product).toBe('Cairn');
  });

  it('direct, fanout and topic exchanges route exactly as the reference', async () => {
    const channel = await connection.createChannel();

    await channel.assertExchange('orders', 'direct', { durable: false });
    for (const [queue, key] of [['q.paid', 'paid'], ['q.refund', 'refunded']] as const) {
      await channel.assertQueue(queue, { durable: false });
      await channel.bindQueue(queue, 'orders', key);
    }
    for (const [key, body] of [['paid', 'order-1001'], ['refunded', 'order-0999'], ['paid', 'order-1002'], ['cancelled', 'order-1003']] as const) {
      channel.publish('orders', key, Buffer.from(body));
    }

    await channel.assertExchange('cache-bust', 'fanout', { durable: false });
    for (const queue of ['node-a', 'node-b', 'node-c']) {
      await channel.assertQueue(queue, { durable: false });
      await channel.bindQueue(queue, 'cache-bust', '');
    }
    channel.publish('cache-bust', 'ignored', Buffer.from('invalidate:/products/42'));

    await channel.assertExchange('logs', 'topic', { durable: false });
    const binds = { 'all-errors': '*.error', 'eu-everything': 'eu.#', 'eu-west-db': 'eu.west.db.*' };
    for (const [queue, pattern] of Object.entries(binds)) {
      await channel.assertQueue(queue, { durable: false });
      await channel.bindQueue(queue, 'logs', pattern);
    }
    for (const key of ['api.error', 'eu.west.db.error', 'eu.west.db.slow', 'eu', 'us.east.api.info']) {
      channel.publish('logs', key, Buffer.from(key));
    }

    expect(await drain(channel, 'q.paid')).toEqual(['order-1001', 'order-1002']);
    expect(await drain(channel, 'q.refund')).toEqual(['order-0999']);
    for (const node of ['node-a', 'node-b', 'node-c']) expect(await drain(channel, node)).toEqual(['invalidate:/products/42']);
    expect(await drain(channel, 'all-errors')).toEqual(['api.error']);
    expect(await drain(channel, 'eu-everything')).toEqual(['eu.west.db.error', 'eu.west.db.slow', 'eu']);
    expect(await drain(channel, 'eu-west-db')).toEqual(['eu.west.db.error', 'eu.west.db.slow']);
  });
});

describe('AMQP confirms, mandatory, nack and refusals: the article', () => {
  it('confirms a routed publish; a mandatory unroutable one gets basic.return 312 NO_ROUTE before its ack', async () => {
    const channel = await connection.createConfirmChannel();
    const events: string[] = [];
    channel.on('return', (message: amqp.Message) => {
      // basic.return fields; @types/amqplib types only the common ones.
      const fields = message.fields as amqp.MessageFields & { replyCode: number; replyText: string };
      events.push(`return ${fields.replyCode} ${fields.replyText} ${message.content.toString()}`);
    });
    await channel.assertQueue('jobs', { durable: false });
    await new Promise<void>((resolve, reject) => {
      channel.publish('', 'jobs', Buffer.from('resize:img-1.png'), {}, (error: unknown) => (error ? reject(error) : resolve()));
    });
    events.push('confirmed resize:img-1.png');
    await new Promise<void>((resolve) => {
      channel.publish('', 'no-such-queue', Buffer.from('lost?'), { mandatory: true }, (error: unknown) => {
        events.push(error ? 'nack lost?' : 'ack lost?');
        resolve();
      });
    });
    expect(events).toEqual(['confirmed resize:img-1.png', 'return 312 NO_ROUTE lost?', 'ack lost?']);
  });

  it('nack with requeue gives the message back with redelivered=true; ack finishes it', async () => {
    const channel = await connection.createChannel();
    await channel.assertQueue('jobs', { durable: false });
    channel.sendToQueue('jobs', Buffer.from('resize:img-1.png'));
    const first = await channel.get('jobs');
    expect(first).not.toBe(false);
    if (first === false) return;
    expect(first.content.toString()).toBe('resize:img-1.png');
    expect(first.fields.redelivered).toBe(false);
    channel.nack(first, false, true);
    const second = await channel.get('jobs');
    if (second === false) throw new Error('the nacked message was not requeued');
    expect(second.content.toString()).toBe('resize:img-1.png');
    expect(second.fields.redelivered).toBe(true);
    channel.ack(second);
    expect(await channel.get('jobs')).toBe(false);
    expect((await channel.checkQueue('jobs')).messageCount).toBe(0);
  });

  it('publishing to a missing exchange closes the channel with 404 NOT_FOUND', async () => {
    const channel = await connection.createChannel();
    const failure = new Promise<Error & { code?: number }>((resolve) => channel.on('error', resolve));
    channel.publish('no-such-exchange', 'k', Buffer.from('x'));
    const error = await failure;
    expect(error.code).toBe(404);
    expect(error.message).toMatch(/NOT_FOUND - no exchange 'no-such-exchange'/);
  });
});

