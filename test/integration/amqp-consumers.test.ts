/**
 * Consumers over real TCP with amqplib against the real Broker: competing
 * consumers in round robin, prefetch skipping a busy worker (the article's
 * fast/slow worker experiment, with shorter costs), unacked deliveries back
 * to the queue with redelivered=true when their channel or connection goes,
 * cancel, broker-side cancel notification, recover, ack multiple, and the
 * 406 for an unknown delivery tag.
 */
import amqp, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { MemoryLog } from '../../src/core/record-log.js';
import { silentLogger } from '../../src/logger.js';
import { startAmqpServer, type AmqpServer } from '../../src/protocols/amqp/server.js';

let server: AmqpServer;
let url: string;
const connections: ChannelModel[] = [];

beforeEach(async () => {
  const broker = Broker.open({ log: new MemoryLog() });
  server = await startAmqpServer({ core: broker.amqp, host: '127.0.0.1', port: 0, logger: silentLogger() });
  url = `amqp://127.0.0.1:${server.port}`;
});

afterEach(async () => {
  for (const connection of connections.splice(0)) await connection.close().catch(() => undefined);
  await server.close();
});

async function connect(): Promise<ChannelModel> {
  const connection = await amqp.connect(url);
  connection.on('error', () => undefined);
  connections.push(connection);
  return connection;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for a condition');
    await sleep(5);
  }
}

/**
 * A worker on its own connection that handles one message at a time, like
 * the article's pika worker: sleep `costMs`, log, ack.
 */
async function startWorker(name: string, queue: string, costMs: number, prefetch: number | undefined, log: Array<[string, string]>): Promise<void> {
  const channel = await (await connect()).createChannel();
  await channel.assertQueue(queue, { durable: true });
  if (prefetch !== undefined) await channel.prefetch(prefetch);
  let chain = Promise.resolve();
  await channel.consume(queue, (message) => {
    if (message === null) return;
    chain = chain.then(async () => {
      await sleep(costMs);
      log.push([name, message.content.toString()]);
      channel.ack(message);
    });
  });
}

async function publishJobs(queue: string, count: number): Promise<string[]> {
  const channel = await (await connect()).createConfirmChannel();
  const jobs = Array.from({ length: count }, (_, index) => `job-${String(index + 1).padStart(2, '0')}`);
  for (const job of jobs) channel.sendToQueue(queue, Buffer.from(job), { persistent: true });
  await channel.waitForConfirms();
  return jobs;
}

function jobsOf(log: Array<[string, string]>, worker: string): string[] {
  return log.filter(([name]) => name === worker).map(([, job]) => job);
}

describe('AMQP competing consumers', () => {
  it('without prefetch, 12 jobs alternate between a fast and a slow worker: 6 and 6', async () => {
    const log: Array<[string, string]> = [];
    await startWorker('slow', 'work', 100, undefined, log);
    await startWorker('fast', 'work', 10, undefined, log);
    const jobs = await publishJobs('work', 12);
    await until(() => log.length === 12);
    const slow = jobsOf(log, 'slow');
    const fast = jobsOf(log, 'fast');
    expect(slow).toEqual(jobs.filter((_, index) => index % 2 === 0));
    expect(fast).toEqual(jobs.filter((_, index) => index % 2 === 1));
  });

  it('with prefetch=1 a busy worker is skipped: the fast worker gets most jobs', async () => {
    const log: Array<[string, string]> = [];
    await startWorker('slow', 'work', 100, 1, log);
    await startWorker('fast', 'work', 10, 1, log);
    const jobs = await publishJobs('work', 12);
    await until(() => log.length === 12);
    const fast = jobsOf(log, 'fast');
    const slow = jobsOf(log, 'slow');
    console.log(`prefetch=1: fast ${fast.length} ${JSON.stringify(fast)}, slow ${slow.length} ${JSON.stringify(slow)}`);
    expect(fast.length).toBeGreaterThanOrEqual(8);
    expect(slow.length).toBeGreaterThanOrEqual(1);
    expect([...fast, ...slow].sort()).toEqual(jobs);
  });

  it('basic.qos global=true limits all consumers of the channel together', async () => {
    const connection = await connect();
    const channel = await connection.createChannel();
    await channel.assertQueue('shared', { durable: false });
    await channel.prefetch(3, true);
    const received: ConsumeMessage[] = [];
    await channel.consume('shared', (message) => message && received.push(message));
    await channel.consume('shared', (message) => message && received.push(message));
    for (let index = 0; index < 10; index++) channel.sendToQueue('shared', Buffer.from(`m${index}`));
    await until(() => received.length === 3);
    await sleep(50);
    expect(received).toHaveLength(3);
    channel.ack(received[0]!);
    await until(() => received.length === 4);
    await sleep(50);
    expect(received).toHaveLength(4);
  });
});

describe('AMQP unacked deliveries and settlement', () => {
  async function consumeUnacked(channel: Channel, queue: string, count: number): Promise<ConsumeMessage[]> {
    const received: ConsumeMessage[] = [];
    await channel.consume(queue, (message) => message && received.push(message));
    await until(() => received.length === count);
    return received;
  }

  async function fill(queue: string, bodies: string[]): Promise<Channel> {
    const channel = await (await connect()).createChannel();
    await channel.assertQueue(queue, { durable: false });
    for (const body of bodies) channel.sendToQueue(queue, Buffer.from(body));
    return channel;
  }

  async function getAll(channel: Channel, queue: string): Promise<Array<[string, boolean]>> {
    const out: Array<[string, boolean]> = [];
    for (;;) {
      const message = await channel.get(queue, { noAck: true });
      if (message === false) return out;
      out.push([message.content.toString(), message.fields.redelivered]);
    }
  }

  it('go back to the queue, in order and redelivered, when their channel closes', async () => {
    const admin = await fill('tasks', ['a', 'b', 'c']);
    const consumer = await (await connect()).createChannel();
    const received = await consumeUnacked(consumer, 'tasks', 3);
    expect(received.map((message) => message.fields.redelivered)).toEqual([false, false, false]);
    consumer.ack(received[1]!);
    await consumer.close();
    expect(await getAll(admin, 'tasks')).toEqual([['a', true], ['c', true]]);
  });

  it('go back to the queue when their connection dies without a close', async () => {
    const admin = await fill('tasks', ['a', 'b']);
    const doomed = await amqp.connect(url);
    doomed.on('error', () => undefined);
    await consumeUnacked(await doomed.createChannel(), 'tasks', 2);
    (doomed.connection as unknown as { stream: { destroy(): void } }).stream.destroy();
    await until(() => server.connections() === 1);
    expect(await getAll(admin, 'tasks')).toEqual([['a', true], ['b', true]]);
  });

  it('basic.recover requeues every unacked delivery to the consumer, redelivered', async () => {
    await fill('tasks', ['a', 'b']);
    const channel = await (await connect()).createChannel();
    const received = await consumeUnacked(channel, 'tasks', 2);
    await channel.recover();
    await until(() => received.length === 4);
    expect(received.slice(2).map((message) => [message.content.toString(), message.fields.redelivered])).toEqual([['a', true], ['b', true]]);
  });

  it('ack with multiple settles every tag up to the given one', async () => {
    const admin = await fill('tasks', ['a', 'b', 'c', 'd']);
    const channel = await (await connect()).createChannel();
    const received = await consumeUnacked(channel, 'tasks', 4);
    channel.ack(received[2]!, true);
    await channel.close();
    expect(await getAll(admin, 'tasks')).toEqual([['d', true]]);
  });

  it('nack with multiple and requeue=false drops the messages', async () => {
    const admin = await fill('tasks', ['a', 'b', 'c']);
    const channel = await (await connect()).createChannel();
    const received = await consumeUnacked(channel, 'tasks', 3);
    channel.nack(received[1]!, true, false);
    channel.reject(received[2]!, true);
    await until(() => received.length === 4);
    expect([received[3]!.content.toString(), received[3]!.fields.redelivered]).toEqual(['c', true]);
    await channel.close();
    expect(await getAll(admin, 'tasks')).toEqual([['c', true]]);
  });

  it('an unknown delivery tag closes the channel with 406 PRECONDITION_FAILED', async () => {
    const channel = await (await connect()).createChannel();
    const failure = new Promise<Error & { code?: number }>((resolve) => channel.on('error', resolve));
    channel.ack({ fields: { deliveryTag: 42 } } as unknown as ConsumeMessage);
    const error = await failure;
    expect(error.code).toBe(406);
    expect(error.message).toMatch(/unknown delivery tag 42/);
  });

  it('basic.cancel stops deliveries; the rest stays in the queue', async () => {
    const admin = await fill('tasks', []);
    const channel = await (await connect()).createChannel();
    const received: ConsumeMessage[] = [];
    const { consumerTag } = await channel.consume('tasks', (message) => message && received.push(message), { noAck: true });
    expect(consumerTag).toMatch(/^amq\.ctag-/);
    admin.sendToQueue('tasks', Buffer.from('first'));
    await until(() => received.length === 1);
    await channel.cancel(consumerTag);
    admin.sendToQueue('tasks', Buffer.from('second'));
    await sleep(30);
    expect(received).toHaveLength(1);
    expect(await getAll(admin, 'tasks')).toEqual([['second', false]]);
  });

  it('an exclusive consumer keeps others out (403 ACCESS_REFUSED), and cannot join a queue in use', async () => {
    await fill('solo', []);
    const owner = await (await connect()).createChannel();
    await owner.consume('solo', () => undefined, { exclusive: true });
    const intruder = await (await connect()).createChannel();
    intruder.on('error', () => undefined);
    const refused = await intruder.consume('solo', () => undefined).then(() => undefined, (error: unknown) => error);
    expect(refused).toMatchObject({ code: 403 });
    const late = await (await connect()).createChannel();
    late.on('error', () => undefined);
    await late.assertQueue('busy', { durable: false });
    await late.consume('busy', () => undefined);
    const second = await (await connect()).createChannel();
    second.on('error', () => undefined);
    expect(await second.consume('busy', () => undefined, { exclusive: true }).then(() => undefined, (error: unknown) => error)).toMatchObject({ code: 403 });
  });

  it('a queue deleted under a consumer sends basic.cancel (consumer_cancel_notify)', async () => {
    const admin = await fill('doomed', []);
    const channel = await (await connect()).createChannel();
    let cancelled = false;
    await channel.consume('doomed', (message) => {
      if (message === null) cancelled = true;
    });
    await admin.deleteQueue('doomed');
    await until(() => cancelled);
  });
});
