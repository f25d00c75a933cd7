/**
 * Message content over real TCP with amqplib: a 300 KB body split into
 * 4 KiB frames both ways (frameMax 4096) returns bit for bit, content
 * properties come back exactly as published (the broker keeps the raw
 * property bytes), and an empty body is a message too.
 */
import { randomBytes } from 'node:crypto';
import amqp, { type ChannelModel, type ConsumeMessage, type GetMessage } from 'amqplib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { MemoryLog } from '../../src/core/record-log.js';
import { silentLogger } from '../../src/logger.js';
import { startAmqpServer, type AmqpServer } from '../../src/protocols/amqp/server.js';

let server: AmqpServer;
const connections: ChannelModel[] = [];

beforeEach(async () => {
  const broker = Broker.open({ log: new MemoryLog() });
  server = await startAmqpServer({ core: broker.amqp, host: '127.0.0.1', port: 0, logger: silentLogger() });
});

afterEach(async () => {
  for (const connection of connections.splice(0)) await connection.close().catch(() => undefined);
  await server.close();
});

async function connect(frameMax?: number): Promise<ChannelModel> {
  const connection = await amqp.connect({ protocol: 'amqp', hostname: '127.0.0.1', port: server.port, ...(frameMax !== undefined ? { frameMax } : {}) });
  connections.push(connection);
  return connection;
}

async function getOne(channel: amqp.Channel, queue: string): Promise<GetMessage> {
  const message = await channel.get(queue, { noAck: true });
  if (message === false) throw new Error(`queue ${queue} is empty`);
  return message;
}

describe('AMQP message content', () => {
  it('a 300 KB body crosses frame-max 4096 in many body frames and returns bit for bit (get and deliver)', async () => {
    const connection = await connect(4096);
    expect((connection.connection as unknown as { frameMax: number }).frameMax).toBe(4096);
    const channel = await connection.createConfirmChannel();
    await channel.assertQueue('big', { durable: true });
    const body = randomBytes(300 * 1024);
    channel.sendToQueue('big', body, { persistent: true });
    channel.sendToQueue('big', body);
    await channel.waitForConfirms();
    const got = await getOne(channel, 'big');
    expect(got.content.equals(body)).toBe(true);
    const delivered = await new Promise<ConsumeMessage>((resolve) => {
      void channel.consume('big', (message) => message && resolve(message), { noAck: true });
    });
    expect(delivered.content.equals(body)).toBe(true);
  });

  it('content properties come back exactly: content_type, headers, correlation_id, message_id and the rest', async () => {
    const channel = await (await connect()).createChannel();
    await channel.assertQueue('props', { durable: false });
    const published = {
      contentType: 'application/json',
      contentEncoding: 'utf-8',
      headers: { tenant: 'acme', attempt: 3, nested: { ok: true }, list: ['a', 1] },
      deliveryMode: 2,
      priority: 5,
      correlationId: 'corr-7f3a',
      // Not amq.rabbitmq.reply-to: that one is rewritten (direct reply-to), and refused without a reply consumer.
      replyTo: 'invoice.replies',
      messageId: 'msg-0001',
      timestamp: 1_791_754_410,
      type: 'invoice.created',
      userId: 'guest',
      appId: 'billing',
    };
    channel.sendToQueue('props', Buffer.from('{"total": 12}'), published);
    const message = await getOne(channel, 'props');
    expect(message.content.toString()).toBe('{"total": 12}');
    expect(message.properties).toMatchObject(published);
    expect(message.fields).toMatchObject({ exchange: '', routingKey: 'props', redelivered: false });
  });

  it('an empty body is a message too', async () => {
    const channel = await (await connect()).createChannel();
    await channel.assertQueue('empty', { durable: false });
    channel.sendToQueue('empty', Buffer.alloc(0));
    const message = await getOne(channel, 'empty');
    expect(message.content.length).toBe(0);
    expect(message.properties.contentType).toBeUndefined();
  });
});
