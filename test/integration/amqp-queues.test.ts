/**
 * Queue declaration and management over real TCP with amqplib: passive
 * declare (404), exclusive queues (405 from another connection, gone with
 * their connection), server-named queues, redeclare with other flags (406),
 * purge, delete with if-unused / if-empty, auto-delete, and unbind.
 */
import amqp, { type Channel, type ChannelModel } from 'amqplib';
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

async function connect(): Promise<ChannelModel> {
  const connection = await amqp.connect(`amqp://127.0.0.1:${server.port}`);
  connection.on('error', () => undefined);
  connections.push(connection);
  return connection;
}

async function channel(): Promise<Channel> {
  const created = await (await connect()).createChannel();
  created.on('error', () => undefined);
  return created;
}

/** The error a channel operation was refused with (the channel is closed by then). */
async function refusal(operation: Promise<unknown>): Promise<{ code?: number; message: string }> {
  return operation.then(
    () => {
      throw new Error('expected the broker to refuse');
    },
    (error: unknown) => error as { code?: number; message: string },
  );
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('AMQP queue.declare variants', () => {
  it('passive declare of a missing queue is 404 NOT_FOUND', async () => {
    const error = await refusal((await channel()).checkQueue('nowhere'));
    expect(error.code).toBe(404);
    expect(error.message).toMatch(/NOT_FOUND - no queue 'nowhere'/);
  });

  it('passive declare of an existing queue reports its message and consumer counts', async () => {
    const ch = await channel();
    await ch.assertQueue('counted', { durable: false });
    ch.sendToQueue('counted', Buffer.from('a'));
    ch.sendToQueue('counted', Buffer.from('b'));
    expect(await ch.checkQueue('counted')).toEqual({ queue: 'counted', messageCount: 2, consumerCount: 0 });
  });

  it('an exclusive queue is locked (405) for another connection and goes with its own', async () => {
    const owner = await connect();
    const ownerChannel = await owner.createChannel();
    await ownerChannel.assertQueue('private', { exclusive: true });
    const error = await refusal((await channel()).assertQueue('private', { exclusive: true }));
    expect(error.code).toBe(405);
    expect(error.message).toMatch(/RESOURCE_LOCKED/);
    await owner.close();
    connections.splice(connections.indexOf(owner), 1);
    await sleep(20);
    expect((await refusal((await channel()).checkQueue('private'))).code).toBe(404);
  });

  it('an empty name gets a server-generated amq.gen- name', async () => {
    const ch = await channel();
    const { queue } = await ch.assertQueue('', { exclusive: true });
    expect(queue).toMatch(/^amq\.gen-/);
    ch.sendToQueue(queue, Buffer.from('to myself'));
    const message = await ch.get(queue, { noAck: true });
    expect(message && message.content.toString()).toBe('to myself');
  });

  it('redeclaring with a different durable flag is 406 PRECONDITION_FAILED', async () => {
    await (await channel()).assertQueue('settled', { durable: true });
    const error = await refusal((await channel()).assertQueue('settled', { durable: false }));
    expect(error.code).toBe(406);
    expect(error.message).toMatch(/inequivalent arg 'durable'/);
  });

  it('queue arguments Cairn does not implement are refused with 540, not ignored', async () => {
    const error = await refusal((await channel()).assertQueue('lazy', { arguments: { 'x-queue-mode': 'lazy' } }));
    expect(error.code).toBe(540);
    expect(error.message).toMatch(/x-queue-mode/);
  });
});

describe('AMQP purge, delete, auto-delete and unbind', () => {
  it('purge removes the ready messages and says how many', async () => {
    const ch = await channel();
    await ch.assertQueue('purgeable', { durable: false });
    for (const body of ['a', 'b', 'c']) ch.sendToQueue('purgeable', Buffer.from(body));
    expect(await ch.purgeQueue('purgeable')).toEqual({ messageCount: 3 });
    expect(await ch.get('purgeable')).toBe(false);
  });

  it('delete if-empty refuses a queue with messages (406); a plain delete reports the count', async () => {
    const ch = await channel();
    await ch.assertQueue('full', { durable: false });
    ch.sendToQueue('full', Buffer.from('x'));
    expect((await refusal(ch.deleteQueue('full', { ifEmpty: true }))).code).toBe(406);
    const ch2 = await channel();
    expect(await ch2.deleteQueue('full')).toEqual({ messageCount: 1 });
    expect((await refusal(ch2.checkQueue('full'))).code).toBe(404);
  });

  it('delete if-unused refuses a queue with a consumer (406)', async () => {
    const consumerChannel = await channel();
    await consumerChannel.assertQueue('busy', { durable: false });
    await consumerChannel.consume('busy', () => undefined);
    expect((await refusal((await channel()).deleteQueue('busy', { ifUnused: true }))).code).toBe(406);
  });

  it('an auto-delete queue goes when its last consumer is cancelled', async () => {
    const ch = await channel();
    await ch.assertQueue('fleeting', { durable: false, autoDelete: true });
    const { consumerTag } = await ch.consume('fleeting', () => undefined);
    await ch.cancel(consumerTag);
    expect((await refusal((await channel()).checkQueue('fleeting'))).code).toBe(404);
  });

  it('unbind stops routing through that binding', async () => {
    const ch = await channel();
    await ch.assertExchange('events', 'direct', { durable: false });
    await ch.assertQueue('audit', { durable: false });
    await ch.bindQueue('audit', 'events', 'created');
    ch.publish('events', 'created', Buffer.from('one'));
    await ch.unbindQueue('audit', 'events', 'created');
    ch.publish('events', 'created', Buffer.from('two'));
    expect(await ch.checkQueue('audit')).toMatchObject({ messageCount: 1 });
    const message = await ch.get('audit', { noAck: true });
    expect(message && message.content.toString()).toBe('one');
  });

  it('exchange delete if-unused refuses an exchange with bindings (406); then it deletes', async () => {
    const ch = await channel();
    await ch.assertExchange('fanout-x', 'fanout', { durable: false });
    await ch.assertQueue('bound', { durable: false });
    await ch.bindQueue('bound', 'fanout-x', '');
    expect((await refusal(ch.deleteExchange('fanout-x', { ifUnused: true }))).code).toBe(406);
    const ch2 = await channel();
    await ch2.deleteExchange('fanout-x');
    expect((await refusal(ch2.checkExchange('fanout-x'))).code).toBe(404);
  });
});
