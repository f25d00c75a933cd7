/**
 * Queue and consumer arguments over real sockets with amqplib, RabbitMQ's
 * behaviour as the reference: x-delivery-limit with x-delivery-count (a
 * poison message requeued again and again dies at the limit — dead-lettered
 * with reason delivery_limit, or dropped — its count rising on every
 * redelivery and kept across a restart), x-queue-type (classic and quorum
 * accepted, quorum's property rules, stream refused), x-max-priority refused
 * saying why, x-single-active-consumer (the earliest consumer gets everything;
 * the next takes over when it cancels or its channel closes, with the old
 * one's unacked messages) and consumer priorities (basic.consume x-priority).
 */
import type { Channel, ConsumeMessage, GetMessage } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningCairn } from '../../src/server.js';
import { EmbeddedAmqpBroker } from '../support/embedded-amqp-broker.js';
import { until } from '../support/kit.js';

const broker = new EmbeddedAmqpBroker();
afterEach(() => broker.cleanUp());

const start = (dataDir = broker.dataDirectory()): Promise<RunningCairn> => broker.start(dataDir);
const channel = (cairn: RunningCairn): Promise<Channel> => broker.channel(cairn);

async function refusal(operation: Promise<unknown>): Promise<{ code?: number; message: string }> {
  return operation.then(
    () => {
      throw new Error('expected the broker to refuse');
    },
    (error: unknown) => error as { code?: number; message: string },
  );
}

async function getOne(ch: Channel, queue: string): Promise<GetMessage> {
  const message = await ch.get(queue, { noAck: false });
  if (message === false) throw new Error(`queue '${queue}' is empty`);
  return message;
}

const deliveryCountOf = (message: GetMessage | ConsumeMessage): unknown => message.properties.headers?.['x-delivery-count'];

describe('x-delivery-limit and x-delivery-count', () => {
  it('a poison message requeued again and again is dead-lettered at the limit, its x-delivery-count rising, exactly once', async () => {
    const cairn = await start();
    const ch = await channel(cairn);
    await ch.assertQueue('poison.dead', { durable: true });
    await ch.assertQueue('poison', { durable: true, deadLetterExchange: '', deadLetterRoutingKey: 'poison.dead', arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 2 } });
    const publisher = await broker.confirmChannel(cairn);
    publisher.sendToQueue('poison', Buffer.from('bad'), { persistent: true, headers: { kept: 1 } });
    await publisher.waitForConfirms();

    const seen: unknown[] = [];
    const redelivered: boolean[] = [];
    await ch.consume('poison', (message) => {
      if (message === null) return;
      seen.push(deliveryCountOf(message));
      redelivered.push(message.fields.redelivered);
      ch.nack(message, false, true);
    });
    await until(() => cairn.broker.queues.get('poison.dead')!.readyCount === 1, 'the poison message in the dead-letter queue');
    // Limit 2: the first delivery and two redeliveries, then it dies on its third return.
    expect(seen).toEqual([undefined, 2 - 1, 2]);
    expect(redelivered).toEqual([false, true, true]);
    expect(cairn.broker.queues.get('poison')!.readyCount).toBe(0);
    const dead = await getOne(ch, 'poison.dead');
    expect(dead.content.toString()).toBe('bad');
    expect(dead.properties.headers?.['kept']).toBe(1);
    expect(dead.properties.headers?.['x-first-death-reason']).toBe('delivery_limit');
    expect(dead.properties.headers?.['x-death']).toMatchObject([{ queue: 'poison', reason: 'delivery_limit', count: 1 }]);
    expect(await ch.get('poison.dead')).toBe(false);
  });

  it('without a dead-letter exchange the message is dropped at the limit (limit 0: delivered once)', async () => {
    const cairn = await start();
    const ch = await channel(cairn);
    await ch.assertQueue('once', { durable: true, arguments: { 'x-delivery-limit': 0 } });
    ch.sendToQueue('once', Buffer.from('x'), { persistent: true });
    const first = await getOne(ch, 'once');
    expect(deliveryCountOf(first)).toBeUndefined();
    ch.nack(first, false, true);
    await until(async () => (await ch.checkQueue('once')).messageCount === 0 && cairn.broker.state.queues.get('once')!.pending.size === 0, 'the message dropped');
    expect(await ch.get('once')).toBe(false);
  });

  it('the delivery count of a durable message survives a restart: a redelivery after it carries the count, and the limit still holds', async () => {
    const dir = broker.dataDirectory();
    let cairn = await start(dir);
    let ch = await channel(cairn);
    await ch.assertQueue('counted', { durable: true, arguments: { 'x-delivery-limit': 3 } });
    ch.sendToQueue('counted', Buffer.from('m'), { persistent: true });
    for (let i = 0; i < 2; i++) {
      const message = await getOne(ch, 'counted');
      expect(deliveryCountOf(message)).toBe(i === 0 ? undefined : i);
      ch.nack(message, false, true);
    }
    // The third delivery is never settled: the broker stops with it outstanding.
    expect(deliveryCountOf(await getOne(ch, 'counted'))).toBe(2);
    await cairn.broker.flush();
    await broker.stop();

    cairn = await start(dir);
    expect(cairn.broker.state.queues.get('counted')!.pending.get(1)?.deliveries).toBe(3);
    ch = await channel(cairn);
    const after = await getOne(ch, 'counted');
    expect(deliveryCountOf(after)).toBe(3);
    expect(after.fields.redelivered).toBe(true);
    ch.nack(after, false, true);
    await until(() => cairn.broker.state.queues.get('counted')!.pending.size === 0, 'the message dropped on its return past the limit');
    expect(await ch.get('counted')).toBe(false);
  });

  it('a classic queue without a limit sets no x-delivery-count; a quorum queue without one counts but never drops', async () => {
    const cairn = await start();
    const ch = await channel(cairn);
    await ch.assertQueue('plain', { durable: true });
    await ch.assertQueue('quorum', { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    for (const queue of ['plain', 'quorum']) ch.sendToQueue(queue, Buffer.from(queue), { persistent: true });
    const counts: Record<string, unknown[]> = { plain: [], quorum: [] };
    for (let i = 0; i < 4; i++) {
      for (const queue of ['plain', 'quorum']) {
        const message = await getOne(ch, queue);
        counts[queue]!.push(deliveryCountOf(message));
        ch.nack(message, false, true);
      }
    }
    expect(counts['plain']).toEqual([undefined, undefined, undefined, undefined]);
    expect(counts['quorum']).toEqual([undefined, 1, 2, 3]);
  });
});

describe('x-queue-type and argument checks', () => {
  it('quorum needs a durable, non-exclusive, non-auto-delete queue (406), keeps every message; stream and x-max-priority are refused saying so (540)', async () => {
    const dir = broker.dataDirectory();
    let cairn = await start(dir);
    const cases: Array<[name: string, options: Record<string, unknown>, code: number, text: string]> = [
      ['q1', { durable: false, arguments: { 'x-queue-type': 'quorum' } }, 406, "invalid property 'non-durable' for queue 'q1'"],
      ['q2', { durable: true, exclusive: true, arguments: { 'x-queue-type': 'quorum' } }, 406, "invalid property 'exclusive' for queue 'q2'"],
      ['q3', { durable: true, autoDelete: true, arguments: { 'x-queue-type': 'quorum' } }, 406, "invalid property 'auto-delete' for queue 'q3'"],
      ['q4', { durable: true, arguments: { 'x-queue-type': 'stream' } }, 540, "x-queue-type 'stream' is not supported by Cairn"],
      ['q5', { durable: true, arguments: { 'x-queue-type': 'lazy' } }, 406, "invalid arg 'x-queue-type' for queue 'q5'"],
      ['q6', { durable: true, arguments: { 'x-max-priority': 10 } }, 540, "argument 'x-max-priority': priority queues are not supported by Cairn"],
      ['q7', { durable: true, arguments: { 'x-delivery-limit': -1 } }, 406, "invalid arg 'x-delivery-limit' for queue 'q7'"],
      ['q8', { durable: true, arguments: { 'x-single-active-consumer': 'yes' } }, 406, "invalid arg 'x-single-active-consumer' for queue 'q8'"],
    ];
    for (const [name, options, code, text] of cases) {
      const error = await refusal((await channel(cairn)).assertQueue(name, options));
      expect(error.code, name).toBe(code);
      expect(error.message, name).toContain(text);
    }
    const ch = await channel(cairn);
    await ch.assertQueue('classic', { durable: true, arguments: { 'x-queue-type': 'classic' } });
    await ch.assertQueue('kept', { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    for (const queue of ['classic', 'kept']) ch.sendToQueue(queue, Buffer.from(`transient in ${queue}`), { persistent: false });
    await ch.checkQueue('kept');
    await cairn.broker.flush();
    await broker.stop();
    cairn = await start(dir);
    // A quorum queue keeps a non-persistent message across a restart, as RabbitMQ's do; a classic queue does not.
    const after = await channel(cairn);
    expect((await getOne(after, 'kept')).content.toString()).toBe('transient in kept');
    expect(await after.get('classic')).toBe(false);
    const ch2 = after;
    await ch2.assertQueue('classic', { durable: true });
    await ch2.assertQueue('quorum', { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    expect(cairn.broker.state.queues.get('quorum')?.arguments).toEqual({ 'x-queue-type': 'quorum' });
  });

  it('a redeclare with different new arguments is 406 naming the argument', async () => {
    const cairn = await start();
    const setup = await channel(cairn);
    await setup.assertQueue('typed', { durable: true, arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 5, 'x-single-active-consumer': true } });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ 'x-delivery-limit': 5, 'x-single-active-consumer': true }, "inequivalent arg 'x-queue-type' for queue 'typed' in vhost '/': received none but current is the value 'quorum'"],
      [{ 'x-queue-type': 'quorum', 'x-delivery-limit': 6, 'x-single-active-consumer': true }, "inequivalent arg 'x-delivery-limit'"],
      [{ 'x-queue-type': 'quorum', 'x-delivery-limit': 5 }, "inequivalent arg 'x-single-active-consumer'"],
      [{ 'x-queue-type': 'quorum', 'x-delivery-limit': 5, 'x-single-active-consumer': false }, "inequivalent arg 'x-single-active-consumer'"],
    ];
    for (const [args, text] of cases) {
      const error = await refusal((await channel(cairn)).assertQueue('typed', { durable: true, arguments: args }));
      expect(error.code).toBe(406);
      expect(error.message).toContain(text);
    }
    await (await channel(cairn)).assertQueue('typed', { durable: true, arguments: { 'x-single-active-consumer': true, 'x-delivery-limit': 5, 'x-queue-type': 'quorum' } });
  });
});

describe('x-single-active-consumer', () => {
  it('only the earliest consumer gets messages; the next takes over on channel close (with the unacked ones) and on cancel', async () => {
    const cairn = await start();
    const setup = await channel(cairn);
    await setup.assertQueue('sac', { durable: true, arguments: { 'x-single-active-consumer': true } });
    const got: Record<string, string[]> = { a: [], b: [], c: [] };
    const channels: Record<string, Channel> = {};
    const tags: Record<string, string> = {};
    for (const name of ['a', 'b', 'c']) {
      const ch = await channel(cairn);
      channels[name] = ch;
      await ch.prefetch(3);
      const { consumerTag } = await ch.consume('sac', (message) => {
        if (message !== null) got[name]!.push(`${message.content.toString()}${message.fields.redelivered ? '*' : ''}`);
      });
      tags[name] = consumerTag;
    }
    for (let i = 1; i <= 4; i++) setup.sendToQueue('sac', Buffer.from(`m${i}`));
    await until(() => got['a']!.length === 3, 'consumer a full');
    // a is at its prefetch: m4 waits rather than going to b or c.
    expect(await setup.checkQueue('sac')).toMatchObject({ messageCount: 1 });
    expect(got).toEqual({ a: ['m1', 'm2', 'm3'], b: [], c: [] });

    // a goes away unacked: b, next in registration order, takes over — m4, then a's three back, as far as its prefetch allows.
    await channels['a']!.close();
    await until(() => got['b']!.length === 3, 'consumer b full');
    expect(got['b']).toEqual(['m4', 'm1*', 'm2*']);
    expect(got['c']).toEqual([]);

    // b cancels (its unacked stay with its channel, as RabbitMQ): c takes over at once, with what was waiting.
    await channels['b']!.cancel(tags['b']!);
    await until(() => got['c']!.length === 1, 'consumer c has m3');
    expect(got['c']).toEqual(['m3*']);
  });
});

describe('consumer priorities (basic.consume x-priority)', () => {
  it('the higher-priority consumer gets messages while it has room; a lower one only when it is blocked', async () => {
    const cairn = await start();
    const setup = await channel(cairn);
    await setup.assertQueue('prio');
    const got: Record<string, string[]> = { low: [], high: [] };
    const consumers: Array<[string, number]> = [['low', 0], ['high', 5]];
    for (const [name, priority] of consumers) {
      const ch = await channel(cairn);
      await ch.prefetch(2);
      await ch.consume('prio', (message) => {
        if (message !== null) got[name]!.push(message.content.toString());
      }, { priority });
    }
    for (let i = 1; i <= 5; i++) setup.sendToQueue('prio', Buffer.from(`m${i}`));
    await until(() => got['low']!.length + got['high']!.length === 4, 'both consumers full');
    expect(got).toEqual({ high: ['m1', 'm2'], low: ['m3', 'm4'] });

    const error = await refusal((await channel(cairn)).consume('prio', () => undefined, { arguments: { 'x-priority': 'high' } }));
    expect(error.code).toBe(406);
    expect(error.message).toContain("invalid arg 'x-priority'");
    const other = await refusal((await channel(cairn)).consume('prio', () => undefined, { arguments: { 'x-stream-offset': 1 } }));
    expect(other.code).toBe(540);
    expect(other.message).toContain("'x-stream-offset'");
  });
});
