/**
 * Queue length limits over real sockets with amqplib, against RabbitMQ's
 * behaviour: x-max-length / x-max-length-bytes with x-overflow = drop-head
 * keep the newest messages (also after a restart, replayed from the log or
 * restored from a snapshot, and the limits still apply then); reject-publish
 * nacks what a full queue refuses while other queues still take it and a
 * mandatory message is not returned; a redeclare with other arguments and
 * bad values are 406 naming the argument; unimplemented arguments stay 540.
 */
import type { Channel, ConfirmChannel } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningCairn } from '../../src/server.js';
import { EmbeddedAmqpBroker } from '../support/embedded-amqp-broker.js';

const broker = new EmbeddedAmqpBroker();
afterEach(() => broker.cleanUp());

const startBroker = (dataDir: string, snapshotEvery = 100_000): Promise<RunningCairn> => broker.start(dataDir, ['--snapshot-every', String(snapshotEvery)]);
const stopBroker = (): Promise<void> => broker.stop();
const dataDirectory = (): string => broker.dataDirectory();
const channel = (cairn: RunningCairn): Promise<Channel> => broker.channel(cairn);
const confirmChannel = (cairn: RunningCairn): Promise<ConfirmChannel> => broker.confirmChannel(cairn);

/** Publish persistent messages to a queue and wait for every confirm. */
async function publishAll(cairn: RunningCairn, queue: string, bodies: readonly string[]): Promise<void> {
  const ch = await confirmChannel(cairn);
  for (const body of bodies) ch.sendToQueue(queue, Buffer.from(body), { persistent: true });
  await ch.waitForConfirms();
  await ch.close();
}

/** Every ready message of the queue, in order, taken with basic.get. */
async function drain(cairn: RunningCairn, queue: string): Promise<string[]> {
  const ch = await channel(cairn);
  const bodies: string[] = [];
  for (;;) {
    const message = await ch.get(queue, { noAck: true });
    if (message === false) break;
    bodies.push(message.content.toString());
  }
  await ch.close();
  return bodies;
}

async function readyCount(cairn: RunningCairn, queue: string): Promise<number> {
  const ch = await channel(cairn);
  const { messageCount } = await ch.checkQueue(queue);
  await ch.close();
  return messageCount;
}

/** The error a channel operation was refused with. */
async function refusal(operation: Promise<unknown>): Promise<{ code?: number; message: string }> {
  return operation.then(
    () => {
      throw new Error('expected the broker to refuse');
    },
    (error: unknown) => error as { code?: number; message: string },
  );
}

const numbered = (prefix: string, count: number): string[] => Array.from({ length: count }, (_, i) => `${prefix}${i}`);

describe('x-overflow = drop-head (the default)', () => {
  for (const [how, snapshotEvery] of [['replayed from the log', 100_000], ['restored from a snapshot', 2]] as const) {
    it(`keeps the newest messages by count and by bytes, and after a restart (${how}) the limits still hold`, async () => {
      const dir = dataDirectory();
      let cairn = await startBroker(dir, snapshotEvery);
      const setup = await channel(cairn);
      await setup.assertQueue('by-count', { durable: true, arguments: { 'x-max-length': 3 } });
      // Bodies of 4 bytes: 10 bytes hold the newest two.
      await setup.assertQueue('by-bytes', { durable: true, arguments: { 'x-max-length-bytes': 10, 'x-overflow': 'drop-head' } });
      await setup.close();
      await publishAll(cairn, 'by-count', numbered('m', 10));
      await publishAll(cairn, 'by-bytes', numbered('b00', 10));
      expect(await readyCount(cairn, 'by-count')).toBe(3);
      expect(await readyCount(cairn, 'by-bytes')).toBe(2);

      await stopBroker();
      cairn = await startBroker(dir, snapshotEvery);
      if (snapshotEvery === 2) expect(cairn.broker.recovery?.snapshotLsn).toBeGreaterThan(0);
      expect(cairn.broker.state.queues.get('by-count')?.arguments).toEqual({ 'x-max-length': 3 });
      expect(await readyCount(cairn, 'by-count')).toBe(3);
      expect(await readyCount(cairn, 'by-bytes')).toBe(2);
      await publishAll(cairn, 'by-count', ['m10', 'm11']);
      await publishAll(cairn, 'by-bytes', ['b010']);
      expect(await drain(cairn, 'by-count')).toEqual(['m9', 'm10', 'm11']);
      expect(await drain(cairn, 'by-bytes')).toEqual(['b009', 'b010']);

      // The same arguments redeclare fine after the restart; others are refused.
      const again = await channel(cairn);
      await again.assertQueue('by-count', { durable: true, arguments: { 'x-max-length': 3 } });
      const error = await refusal(again.assertQueue('by-count', { durable: true, arguments: { 'x-max-length': 4 } }));
      expect(error.code).toBe(406);
      expect(error.message).toContain("inequivalent arg 'x-max-length' for queue 'by-count' in vhost '/': received the value '4' but current is the value '3'");
    });
  }

  it('unacknowledged messages do not count: only ready ones are limited (as RabbitMQ)', async () => {
    const cairn = await startBroker(dataDirectory());
    const consumer = await channel(cairn);
    await consumer.assertQueue('q', { arguments: { 'x-max-length': 2 } });
    await publishAll(cairn, 'q', ['a']);
    const held = await consumer.get('q', { noAck: false });
    expect(held !== false && held.content.toString()).toBe('a');
    await publishAll(cairn, 'q', ['b', 'c', 'd']);
    expect(await drain(cairn, 'q')).toEqual(['c', 'd']);
  });

  it('x-max-length 0 keeps nothing, and the publisher is still acked', async () => {
    const cairn = await startBroker(dataDirectory());
    const ch = await channel(cairn);
    await ch.assertQueue('zero', { durable: true, arguments: { 'x-max-length': 0 } });
    await publishAll(cairn, 'zero', ['a', 'b']);
    expect(await readyCount(cairn, 'zero')).toBe(0);
  });
});

describe('x-overflow = reject-publish', () => {
  /** Publish each body, mandatory, and collect which ones were nacked. */
  async function outcomes(ch: ConfirmChannel, exchange: string, bodies: readonly string[]): Promise<string[]> {
    const settled = bodies.map((body) => new Promise<string>((resolve) => {
      ch.publish(exchange, '', Buffer.from(body), { persistent: true, mandatory: true }, (error) => resolve(error ? 'nack' : 'ack'));
    }));
    return Promise.all(settled);
  }

  it('nacks what a full queue refuses, keeps the first N, and other queues still get every message', async () => {
    const cairn = await startBroker(dataDirectory());
    const ch = await confirmChannel(cairn);
    const returned: string[] = [];
    ch.on('return', (message: { content: Buffer }) => returned.push(message.content.toString()));
    await ch.assertExchange('fan', 'fanout', { durable: true });
    await ch.assertQueue('limited', { durable: true, arguments: { 'x-max-length': 2, 'x-overflow': 'reject-publish' } });
    await ch.assertQueue('open', { durable: true });
    await ch.bindQueue('limited', 'fan', '');
    await ch.bindQueue('open', 'fan', '');

    expect(await outcomes(ch, 'fan', numbered('m', 5))).toEqual(['ack', 'ack', 'nack', 'nack', 'nack']);
    expect(await drain(cairn, 'limited')).toEqual(['m0', 'm1']);
    expect(await drain(cairn, 'open')).toEqual(numbered('m', 5));
    // Room again: the next publish is taken and acked.
    expect(await outcomes(ch, 'fan', ['m5'])).toEqual(['ack']);
    expect(await drain(cairn, 'limited')).toEqual(['m5']);
    // Routed, so mandatory returned nothing (RabbitMQ nacks without a basic.return).
    expect(returned).toEqual([]);
  });

  it('by bytes: a message that would pass x-max-length-bytes is refused, smaller ones that fit are taken', async () => {
    const cairn = await startBroker(dataDirectory());
    const ch = await confirmChannel(cairn);
    await ch.assertQueue('bytes', { arguments: { 'x-max-length-bytes': 5, 'x-overflow': 'reject-publish' } });
    const settle = (body: string): Promise<string> => new Promise((resolve) => {
      ch.sendToQueue('bytes', Buffer.from(body), {}, (error) => resolve(error ? 'nack' : 'ack'));
    });
    expect(await Promise.all(['abc', 'defg', 'de', 'f'].map(settle))).toEqual(['ack', 'nack', 'ack', 'nack']);
    expect(await drain(cairn, 'bytes')).toEqual(['abc', 'de']);
  });
});

describe('queue argument validation', () => {
  it('a redeclare that adds, drops or changes a limit argument is 406 naming it', async () => {
    const cairn = await startBroker(dataDirectory());
    const setup = await channel(cairn);
    await setup.assertQueue('plain', {});
    await setup.assertQueue('limited', { arguments: { 'x-max-length': 5, 'x-overflow': 'reject-publish' } });
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['plain', { 'x-max-length-bytes': 100 }, "inequivalent arg 'x-max-length-bytes' for queue 'plain' in vhost '/': received the value '100' but current is none"],
      ['limited', { 'x-max-length': 5 }, "inequivalent arg 'x-overflow' for queue 'limited' in vhost '/': received none but current is the value 'reject-publish'"],
      ['limited', { 'x-max-length': 6, 'x-overflow': 'reject-publish' }, "inequivalent arg 'x-max-length'"],
      ['limited', { 'x-max-length': 5, 'x-overflow': 'drop-head' }, "inequivalent arg 'x-overflow'"],
    ];
    for (const [queue, args, text] of cases) {
      const error = await refusal((await channel(cairn)).assertQueue(queue, { arguments: args }));
      expect(error.code, text).toBe(406);
      expect(error.message).toContain(`PRECONDITION_FAILED - ${text}`);
    }
  });

  it('bad values are 406 PRECONDITION_FAILED naming the argument', async () => {
    const cairn = await startBroker(dataDirectory());
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ 'x-max-length': -1 }, "invalid arg 'x-max-length' for queue 'bad' in vhost '/': '-1'"],
      [{ 'x-max-length-bytes': 'lots' }, "invalid arg 'x-max-length-bytes' for queue 'bad' in vhost '/': 'lots'"],
      // amqplib sends a non-integer number as a double: not an integer field type.
      [{ 'x-max-length': 1.5 }, "invalid arg 'x-max-length' for queue 'bad' in vhost '/': a field of type 'd'"],
      [{ 'x-overflow': 'sideways' }, "invalid arg 'x-overflow' for queue 'bad' in vhost '/': 'sideways'"],
    ];
    for (const [args, text] of cases) {
      const error = await refusal((await channel(cairn)).assertQueue('bad', { arguments: args }));
      expect(error.code, text).toBe(406);
      expect(error.message).toContain(`PRECONDITION_FAILED - ${text}`);
    }
    // Any integer field type is accepted: amqplib sends a large one as a 64-bit long.
    await (await channel(cairn)).assertQueue('big', { arguments: { 'x-max-length-bytes': 2 ** 40 } });
    expect(cairn.broker.queues.get('big')?.limits.readyBytesMax).toBe(2 ** 40);
    expect(cairn.broker.queues.has('bad')).toBe(false);
  });

  it('every argument Cairn does not implement is still 540 NOT_IMPLEMENTED naming it', async () => {
    const cairn = await startBroker(dataDirectory());
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ 'x-queue-mode': 'lazy' }, "'x-queue-mode'"],
      [{ 'x-max-length': 3, 'x-queue-master-locator': 'min-masters' }, "'x-queue-master-locator'"],
    ];
    for (const [args, name] of cases) {
      const error = await refusal((await channel(cairn)).assertQueue('other', { arguments: args }));
      expect(error.code, name).toBe(540);
      expect(error.message).toContain(`NOT_IMPLEMENTED - queue 'other': argument(s) ${name} not supported by Cairn`);
    }
  });
});
