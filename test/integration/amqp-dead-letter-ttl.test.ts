/**
 * Dead-lettering, message TTL and x-expires over real sockets with amqplib,
 * with RabbitMQ's behaviour as the reference: rejected, expired and
 * overflowing messages go to the dead-letter exchange with x-death and
 * x-first-death-* headers; a retry queue built from TTL + DLX sends a message
 * back after the delay with its x-death counts rising; a message expires at
 * the head of its queue and is never delivered after its deadline; an unused
 * queue with x-expires is deleted, also after a restart. The broker runs on a
 * manual clock: time moves only when the test moves it, nothing sleeps.
 */
import type { Channel, GetMessage } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningCairn } from '../../src/server.js';
import { inspect } from '../support/cli-run.js';
import { EmbeddedAmqpBroker } from '../support/embedded-amqp-broker.js';
import { until } from '../support/kit.js';
import { ManualClock } from '../support/manual-clock.js';

const broker = new EmbeddedAmqpBroker();
afterEach(() => broker.cleanUp());

const startBroker = (dataDir: string, clock: ManualClock): Promise<RunningCairn> => broker.start(dataDir, [], { clock: clock.now, timers: clock });
const stopBroker = (): Promise<void> => broker.stop();
const dataDirectory = (): string => broker.dataDirectory();
const channel = (cairn: RunningCairn): Promise<Channel> => broker.channel(cairn);
const confirmChannel = (cairn: RunningCairn): ReturnType<EmbeddedAmqpBroker['confirmChannel']> => broker.confirmChannel(cairn);

async function getOne(ch: Channel, queue: string): Promise<GetMessage> {
  const message = await ch.get(queue, { noAck: false });
  if (message === false) throw new Error(`queue '${queue}' is empty`);
  return message;
}

async function readyCount(cairn: RunningCairn, queue: string): Promise<number> {
  return cairn.broker.queues.get(queue)?.readyCount ?? -1;
}

interface Death { count: number; reason: string; queue: string; exchange: string; 'routing-keys': string[]; time: { value: number } | number }
const deathsOf = (message: GetMessage): Death[] => (message.properties.headers?.['x-death'] ?? []) as Death[];

describe('dead-lettering', () => {
  it('a rejected message goes to the dead-letter exchange with x-death and x-first-death-*, once, and stays there after a restart', async () => {
    const clock = new ManualClock();
    const dir = dataDirectory();
    let cairn = await startBroker(dir, clock);
    const ch = await channel(cairn);
    await ch.assertExchange('dlx', 'direct', { durable: true });
    await ch.assertQueue('dead', { durable: true });
    await ch.bindQueue('dead', 'dlx', 'failed');
    await ch.assertQueue('work', { durable: true, deadLetterExchange: 'dlx', deadLetterRoutingKey: 'failed' });
    const publisher = await confirmChannel(cairn);
    publisher.sendToQueue('work', Buffer.from('poison'), { persistent: true, headers: { kept: 'yes' }, messageId: 'm1' });
    await publisher.waitForConfirms();

    const delivered = await getOne(ch, 'work');
    ch.nack(delivered, false, false);
    await until(() => cairn.broker.queues.get('dead')!.readyCount === 1, 'the rejected message in the dead-letter queue');
    expect(await readyCount(cairn, 'work')).toBe(0);
    await cairn.broker.flush();
    await stopBroker();

    cairn = await startBroker(dir, clock);
    expect(cairn.broker.state.queues.get('work')!.pending.size).toBe(0);
    const after = await channel(cairn);
    const dead = await getOne(after, 'dead');
    expect(dead.content.toString()).toBe('poison');
    expect(dead.properties.messageId).toBe('m1');
    expect(dead.fields.exchange).toBe('dlx');
    expect(dead.fields.routingKey).toBe('failed');
    const headers = dead.properties.headers!;
    expect(headers['kept']).toBe('yes');
    expect(headers['x-first-death-queue']).toBe('work');
    expect(headers['x-first-death-reason']).toBe('rejected');
    expect(headers['x-first-death-exchange']).toBe('');
    const deaths = deathsOf(dead);
    expect(deaths).toHaveLength(1);
    expect(deaths[0]).toMatchObject({ count: 1, reason: 'rejected', queue: 'work', exchange: '', 'routing-keys': ['work'] });
    expect(await after.get('dead')).toBe(false);
  });

  it('a retry queue (TTL + dead-letter exchange) sends the message back after the delay, x-death counts rising, and trace tells the story', async () => {
    const clock = new ManualClock();
    const dir = dataDirectory();
    const cairn = await startBroker(dir, clock);
    const ch = await channel(cairn);
    // work rejects → retry (5 s TTL) expires → back to work through the default exchange.
    await ch.assertQueue('work', { durable: true, deadLetterExchange: '', deadLetterRoutingKey: 'retry' });
    await ch.assertQueue('retry', { durable: true, messageTtl: 5000, deadLetterExchange: '', deadLetterRoutingKey: 'work' });
    const publisher = await confirmChannel(cairn);
    publisher.sendToQueue('work', Buffer.from('job'), { persistent: true });
    await publisher.waitForConfirms();

    for (let attempt = 1; attempt <= 3; attempt++) {
      const delivered = await getOne(ch, 'work');
      const deaths = deathsOf(delivered);
      if (attempt === 1) expect(deaths).toEqual([]);
      else {
        expect(deaths.find((d) => d.queue === 'work')?.count).toBe(attempt - 1);
        expect(deaths.find((d) => d.queue === 'retry')).toMatchObject({ count: attempt - 1, reason: 'expired' });
        // The most recent death comes first.
        expect(deaths[0]?.queue).toBe('retry');
      }
      ch.reject(delivered, false);
      await until(() => cairn.broker.queues.get('retry')!.readyCount === 1, 'the rejected job in the retry queue');
      clock.advance(4999);
      expect(await readyCount(cairn, 'retry')).toBe(1);
      expect(await readyCount(cairn, 'work')).toBe(0);
      clock.advance(1);
      await until(() => cairn.broker.queues.get('work')!.readyCount === 1, 'the job back in the work queue after the delay');
      expect(await readyCount(cairn, 'retry')).toBe(0);
    }
    const last = await getOne(ch, 'work');
    expect(deathsOf(last).map((d) => [d.queue, d.reason, d.count])).toEqual([['retry', 'expired', 3], ['work', 'rejected', 3]]);
    ch.ack(last);
    await ch.close();
    await cairn.broker.flush();
    await stopBroker();

    const trace = await inspect('trace', '--data', dir, '--queue', 'work', '--seq', '1');
    expect(trace.code).toBe(0);
    const lines = trace.out.split('\n');
    const steps = lines.filter((line) => /: (delivered|dead-lettered|acked|queued)/.test(line)).map((line) => line.replace(/^.*?(queue \w+ seq \d+: \w[\w-]*).*$/, '$1'));
    expect(steps).toEqual([
      'queue work seq 1: delivered', 'queue work seq 1: dead-lettered',
      'queue retry seq 1: queued', 'queue retry seq 1: dead-lettered',
      'queue work seq 2: queued', 'queue work seq 2: delivered', 'queue work seq 2: dead-lettered',
      'queue retry seq 2: queued', 'queue retry seq 2: dead-lettered',
      'queue work seq 3: queued', 'queue work seq 3: delivered', 'queue work seq 3: dead-lettered',
      'queue retry seq 3: queued', 'queue retry seq 3: dead-lettered',
      'queue work seq 4: queued', 'queue work seq 4: delivered', 'queue work seq 4: acked',
    ]);
    expect(trace.out).toContain("dead-lettered (rejected) to exchange '' routing key 'retry'");
    expect(trace.out).toContain("dead-lettered (expired) to exchange '' routing key 'work'");
  });

  it('overflow: drop-head dead-letters the oldest (maxlen); reject-publish-dlx nacks the publisher and dead-letters the refused message', async () => {
    const clock = new ManualClock();
    const cairn = await startBroker(dataDirectory(), clock);
    const ch = await channel(cairn);
    await ch.assertQueue('overflowed', { durable: true });
    await ch.assertQueue('head', { durable: true, maxLength: 2, deadLetterExchange: '', deadLetterRoutingKey: 'overflowed' });
    await ch.assertQueue('refusing', { durable: true, arguments: { 'x-max-length': 1, 'x-overflow': 'reject-publish-dlx', 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'overflowed' } });
    const publisher = await confirmChannel(cairn);
    for (const body of ['h1', 'h2', 'h3', 'h4']) publisher.sendToQueue('head', Buffer.from(body), { persistent: true });
    await publisher.waitForConfirms();
    const outcomes = await Promise.all(['r1', 'r2'].map((body) => new Promise<string>((resolve) => {
      publisher.sendToQueue('refusing', Buffer.from(body), { persistent: true }, (error) => resolve(error === null || error === undefined ? 'ack' : 'nack'));
    })));
    expect(outcomes).toEqual(['ack', 'nack']);
    await until(() => cairn.broker.queues.get('overflowed')!.readyCount === 3, 'three dead-lettered messages');
    const got: Array<[string, string, string]> = [];
    for (let i = 0; i < 3; i++) {
      const message = await getOne(ch, 'overflowed');
      got.push([message.content.toString(), deathsOf(message)[0]!.queue, deathsOf(message)[0]!.reason]);
    }
    expect(got).toEqual([['h1', 'head', 'maxlen'], ['h2', 'head', 'maxlen'], ['r2', 'refusing', 'maxlen']]);
    expect((await getOne(ch, 'head')).content.toString()).toBe('h3');
  });

  it('a dead-letter exchange that does not exist drops the message; a cycle without a rejection is dropped', async () => {
    const clock = new ManualClock();
    const cairn = await startBroker(dataDirectory(), clock);
    const ch = await channel(cairn);
    await ch.assertQueue('nowhere', { durable: true, deadLetterExchange: 'missing' });
    // Expired messages dead-lettered back into the same queue would cycle for ever: RabbitMQ drops them.
    await ch.assertQueue('self', { durable: true, messageTtl: 10, deadLetterExchange: '' });
    ch.sendToQueue('nowhere', Buffer.from('x'), { persistent: true });
    ch.sendToQueue('self', Buffer.from('y'), { persistent: true });
    const delivered = await ch.get('nowhere', { noAck: false });
    expect(delivered).not.toBe(false);
    ch.nack(delivered as GetMessage, false, false);
    await until(() => cairn.broker.queues.get('self')!.readyCount === 1, 'the message in self');
    clock.advance(10);
    expect(await readyCount(cairn, 'self')).toBe(0);
    await until(() => cairn.broker.queues.get('nowhere')!.unacked.size === 0, 'the rejected message settled');
    expect(await readyCount(cairn, 'nowhere')).toBe(0);
    await cairn.broker.flush();
    expect(cairn.broker.state.queues.get('self')!.pending.size).toBe(0);
    expect(cairn.broker.state.queues.get('nowhere')!.pending.size).toBe(0);
  });
});

describe('message TTL', () => {
  it('x-message-ttl: a message waiting longer than the TTL is gone, never delivered; a younger one is delivered', async () => {
    const clock = new ManualClock();
    const dir = dataDirectory();
    const cairn = await startBroker(dir, clock);
    const ch = await channel(cairn);
    await ch.assertQueue('ttl', { durable: true, messageTtl: 1000 });
    const publisher = await confirmChannel(cairn);
    publisher.sendToQueue('ttl', Buffer.from('old'), { persistent: true });
    await publisher.waitForConfirms();
    clock.advance(600);
    publisher.sendToQueue('ttl', Buffer.from('young'), { persistent: true });
    await publisher.waitForConfirms();
    clock.advance(399);
    expect(await readyCount(cairn, 'ttl')).toBe(2);
    clock.advance(1);
    expect(await readyCount(cairn, 'ttl')).toBe(1);
    expect((await getOne(ch, 'ttl')).content.toString()).toBe('young');
    await cairn.broker.flush();
    const records = await inspect('records', '--data', dir, '--kind', 'drop', '--json');
    expect(records.out.trim().split('\n').map((line) => JSON.parse(line) as { body: { why: string; s: number[] } }).map((r) => [r.body.why, r.body.s])).toEqual([['expired', [1]]]);
  });

  it('per-message expiration expires at the head only (RabbitMQ semantics); an invalid one is 406', async () => {
    const clock = new ManualClock();
    const cairn = await startBroker(dataDirectory(), clock);
    const ch = await channel(cairn);
    await ch.assertQueue('mixed', { durable: false });
    ch.sendToQueue('mixed', Buffer.from('long'), { expiration: '10000' });
    ch.sendToQueue('mixed', Buffer.from('short'), { expiration: '1000' });
    await until(() => cairn.broker.queues.get('mixed')!.readyCount === 2, 'both messages queued');
    clock.advance(1000);
    // 'short' is past its deadline but behind 'long': it is still counted until it reaches the head.
    expect(await readyCount(cairn, 'mixed')).toBe(2);
    expect((await getOne(ch, 'mixed')).content.toString()).toBe('long');
    expect(await ch.get('mixed')).toBe(false);

    const error = await new Promise<{ code?: number; message: string }>((resolve) => {
      ch.once('error', resolve);
      ch.sendToQueue('mixed', Buffer.from('bad'), { expiration: 'soon' });
    });
    expect(error.code).toBe(406);
    expect(error.message).toContain("invalid expiration 'soon'");
  });

  it('an expired message goes to a waiting consumer never: the timer takes it off the head first', async () => {
    const clock = new ManualClock();
    const cairn = await startBroker(dataDirectory(), clock);
    const ch = await channel(cairn);
    await ch.assertQueue('slow', { durable: true, messageTtl: 100 });
    ch.sendToQueue('slow', Buffer.from('stale'), { persistent: true });
    await until(() => cairn.broker.queues.get('slow')!.readyCount === 1, 'the message queued');
    clock.advance(100);
    const received: string[] = [];
    await ch.consume('slow', (message) => { if (message) received.push(message.content.toString()); }, { noAck: true });
    ch.sendToQueue('slow', Buffer.from('fresh'), { persistent: true });
    await until(() => received.length === 1, 'the fresh message delivered');
    expect(received).toEqual(['fresh']);
  });
});

describe('x-expires', () => {
  it('deletes a queue unused for that long; a consumer keeps it; after a restart the lease starts again', async () => {
    const clock = new ManualClock();
    const dir = dataDirectory();
    let cairn = await startBroker(dir, clock);
    const ch = await channel(cairn);
    await ch.assertQueue('idle', { durable: true, expires: 1000 });
    await ch.assertQueue('held', { durable: true, expires: 1000 });
    await ch.consume('held', () => undefined);
    clock.advance(999);
    await ch.checkQueue('idle');
    await ch.assertQueue('idle', { durable: true, expires: 1000 }); // a redeclare renews the lease
    clock.advance(999);
    expect(cairn.broker.queues.has('idle')).toBe(true);
    clock.advance(1);
    expect(cairn.broker.queues.has('idle')).toBe(false);
    expect(cairn.broker.queues.has('held')).toBe(true);
    await cairn.broker.flush();
    await stopBroker();

    cairn = await startBroker(dir, clock);
    expect(cairn.broker.queues.has('idle')).toBe(false);
    expect(cairn.broker.queues.has('held')).toBe(true);
    clock.advance(999);
    expect(cairn.broker.queues.has('held')).toBe(true);
    clock.advance(1);
    expect(cairn.broker.queues.has('held')).toBe(false);
    await cairn.broker.flush();
    expect(cairn.broker.state.queues.has('held')).toBe(false);
  });
});

describe('argument validation', () => {
  it('bad TTL, expiry and dead-letter values are 406 naming the argument', async () => {
    const cairn = await startBroker(dataDirectory(), new ManualClock());
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ 'x-message-ttl': -1 }, "invalid arg 'x-message-ttl'"],
      [{ 'x-expires': 0 }, "invalid arg 'x-expires'"],
      [{ 'x-dead-letter-exchange': 5 }, "invalid arg 'x-dead-letter-exchange'"],
      [{ 'x-dead-letter-routing-key': 'k' }, "invalid arg 'x-dead-letter-routing-key'"],
    ];
    for (const [args, text] of cases) {
      const error = await (await channel(cairn)).assertQueue('bad', { arguments: args }).then(() => undefined, (e: unknown) => e as { code: number; message: string });
      expect(error?.code, text).toBe(406);
      expect(error?.message).toContain(text);
    }
    await (await channel(cairn)).assertQueue('ok', { messageTtl: 5, deadLetterExchange: 'x' });
    const error = await (await channel(cairn)).assertQueue('ok', { messageTtl: 6, deadLetterExchange: 'x' }).then(() => undefined, (e: unknown) => e as { code: number; message: string });
    expect(error?.code).toBe(406);
    expect(error?.message).toContain("inequivalent arg 'x-message-ttl'");
  });
});
