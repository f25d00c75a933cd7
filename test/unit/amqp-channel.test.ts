/**
 * The channel's pieces without sockets: publisher confirms (a property over
 * any order in which Durables settle), ordered method replies, content
 * assembly, and the channel's settlement and prefetch bookkeeping against a
 * recording fake core.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AmqpConsumer, AmqpCore, QueueDelivery } from '../../src/core/api.js';
import { silentLogger } from '../../src/logger.js';
import { AmqpChannel, type ChannelHost } from '../../src/protocols/amqp/channel.js';
import { encodeContentHeader, encodeProperties, type AmqpMethodInput, type ContentMethodInput } from '../../src/protocols/amqp/codec/index.js';
import { ContentAssembler } from '../../src/protocols/amqp/content-assembler.js';
import { ChannelConsumer } from '../../src/protocols/amqp/consumer.js';
import { AmqpChannelError, AmqpConnectionError } from '../../src/protocols/amqp/errors.js';
import { defaultAmqpLimits } from '../../src/protocols/amqp/limits.js';
import { OrderedReplies } from '../../src/protocols/amqp/ordered-replies.js';
import { PublisherConfirms, type ConfirmOutcome } from '../../src/protocols/amqp/publisher-confirms.js';
import { announceSeed } from '../support/kit.js';

const seed = announceSeed('amqp-channel property');

function manual(): { promise: Promise<void>; resolve: () => void; reject: (error: Error) => void } {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const ticks = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('PublisherConfirms', () => {
  it('for any settle order: each publish confirmed once, in sequence order, only after its Durable, multiple exactly when a frame covers several', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ transient: fc.boolean(), fails: fc.boolean() }), { minLength: 1, maxLength: 30 }).chain((publishes) =>
          fc.tuple(fc.constant(publishes), fc.shuffledSubarray(publishes.map((_, index) => index), { minLength: publishes.length, maxLength: publishes.length }))),
        async ([publishes, settleOrder]) => {
          const settled = new Set<number>();
          const sent: Array<{ tag: number; multiple: boolean; outcome: ConfirmOutcome }> = [];
          let confirmedUpTo = 0;
          const confirms = new PublisherConfirms((tag, multiple, outcome) => {
            // Never before the Durables of everything it covers settled, and never backwards.
            expect(tag).toBeGreaterThan(confirmedUpTo);
            for (let seq = confirmedUpTo + 1; seq <= tag; seq++) expect(settled.has(seq)).toBe(true);
            expect(multiple).toBe(tag - confirmedUpTo > 1);
            confirmedUpTo = tag;
            sent.push({ tag, multiple, outcome });
          });
          const durables = publishes.map((publish, index) => {
            if (publish.transient) {
              settled.add(index + 1);
              confirms.track(undefined);
              return undefined;
            }
            const durable = manual();
            confirms.track(durable.promise);
            return durable;
          });
          for (const index of settleOrder) {
            const durable = durables[index];
            if (durable === undefined) continue;
            settled.add(index + 1);
            if (publishes[index]!.fails) durable.reject(new Error('fsync failed'));
            else durable.resolve();
            await ticks();
          }
          await ticks();
          expect(confirmedUpTo).toBe(publishes.length);
          expect(confirms.outstanding).toBe(0);
          // Expand the frames: every seq has the outcome of its own Durable.
          const outcomes: ConfirmOutcome[] = [];
          let from = 1;
          for (const frame of sent) {
            for (let seq = from; seq <= frame.tag; seq++) outcomes.push(frame.outcome);
            from = frame.tag + 1;
          }
          expect(outcomes).toEqual(publishes.map((publish) => (!publish.transient && publish.fails ? 'nack' : 'ack')));
        },
      ),
      { seed, numRuns: 150 },
    );
  });

  it('a burst of publishes with nothing to wait for is confirmed by one multiple ack', async () => {
    const sent: Array<[number, boolean, ConfirmOutcome]> = [];
    const confirms = new PublisherConfirms((tag, multiple, outcome) => sent.push([tag, multiple, outcome]));
    for (let i = 0; i < 5; i++) confirms.track(undefined);
    expect(sent).toEqual([]);
    await ticks();
    expect(sent).toEqual([[5, true, 'ack']]);
  });

  it('the Durable of the last outstanding publish sends its confirm within its settle, alone; one settling with a later publish outstanding waits for the tick', async () => {
    const sent: Array<[number, boolean, ConfirmOutcome, boolean]> = [];
    const confirms = new PublisherConfirms((tag, multiple, outcome, alone) => sent.push([tag, multiple, outcome, alone]));
    const first = manual();
    confirms.track(first.promise);
    first.resolve();
    // Queued after the resolve: runs after the Durable's handler, before any tick.
    await new Promise<void>((done) => queueMicrotask(done));
    expect(sent).toEqual([[1, false, 'ack', true]]);
    const second = manual();
    const third = manual();
    confirms.track(second.promise);
    confirms.track(third.promise);
    second.resolve();
    await new Promise<void>((done) => queueMicrotask(done));
    expect(sent).toHaveLength(1);
    await ticks();
    expect(sent).toEqual([[1, false, 'ack', true], [2, false, 'ack', false]]);
    third.reject(new Error('fsync failed'));
    await new Promise<void>((done) => queueMicrotask(done));
    expect(sent[2]).toEqual([3, false, 'nack', true]);
  });

  it('sends nothing after close', async () => {
    const sent: number[] = [];
    const confirms = new PublisherConfirms((tag) => sent.push(tag));
    const durable = manual();
    confirms.track(durable.promise);
    confirms.close();
    durable.resolve();
    await ticks();
    expect(sent).toEqual([]);
  });
});

describe('OrderedReplies', () => {
  it('keeps request order when later Durables resolve first', async () => {
    const sent: string[] = [];
    const replies = new OrderedReplies(() => sent.push('failed'));
    const first = manual();
    const second = manual();
    replies.add(first.promise, () => sent.push('declare-ok'));
    replies.add(undefined, () => sent.push('qos-ok'));
    replies.add(second.promise, () => sent.push('bind-ok'));
    second.resolve();
    await ticks();
    expect(sent).toEqual([]);
    first.resolve();
    await ticks();
    expect(sent).toEqual(['declare-ok', 'qos-ok', 'bind-ok']);
    replies.add(undefined, () => sent.push('at once'));
    expect(sent.at(-1)).toBe('at once');
  });

  it('reports a rejected Durable once and sends nothing more', async () => {
    const sent: string[] = [];
    const replies = new OrderedReplies((error) => sent.push(`failed: ${(error as Error).message}`));
    const durable = manual();
    replies.add(durable.promise, () => sent.push('declare-ok'));
    replies.add(undefined, () => sent.push('later'));
    durable.reject(new Error('EIO'));
    await ticks();
    replies.add(undefined, () => sent.push('after'));
    expect(sent).toEqual(['failed: EIO']);
  });
});

describe('ContentAssembler', () => {
  const publish = { name: 'basic.publish', classId: 60, methodId: 40, exchange: '', routingKey: 'q', mandatory: false, immediate: false } as const;
  const properties = encodeProperties({ contentType: 'text/plain', deliveryMode: 2 });

  it('assembles a body from frames of any size, down to one byte, and copies it', () => {
    const body = Buffer.from('a body split into many frames');
    const assembler = new ContentAssembler(1024);
    assembler.start(publish);
    expect(assembler.expecting).toBe('header');
    expect(assembler.header(encodeContentHeader(60, body.length, properties))).toBeUndefined();
    let message;
    for (let i = 0; i < body.length; i++) {
      expect(assembler.expecting).toBe('body');
      const frame = Buffer.from(body.subarray(i, i + 1));
      message = assembler.bodyFrame(frame);
      frame.fill(0);
    }
    expect(message?.body.toString()).toBe(body.toString());
    expect(message?.properties.equals(properties)).toBe(true);
    expect(assembler.expecting).toBe('method');
  });

  it('completes at the header when body-size is 0', () => {
    const assembler = new ContentAssembler(1024);
    assembler.start(publish);
    expect(assembler.header(encodeContentHeader(60, 0, properties))?.body.length).toBe(0);
  });

  it('refuses more body than announced (505), a header of another class (505), and a body over the limit (406)', () => {
    const assembler = new ContentAssembler(10);
    assembler.start(publish);
    assembler.header(encodeContentHeader(60, 3, properties));
    expect(() => assembler.bodyFrame(Buffer.from('four'))).toThrow(AmqpConnectionError);
    assembler.reset();
    assembler.start(publish);
    expect(() => assembler.header(encodeContentHeader(50, 3, properties))).toThrow(/class 50/);
    assembler.reset();
    assembler.start(publish);
    const tooBig = (): unknown => assembler.header(encodeContentHeader(60, 11, properties));
    expect(tooBig).toThrow(AmqpChannelError);
    expect(assembler.expecting).toBe('method');
  });
});

// ───────────────────────────── the channel against a recording fake core ─────────────────────────────

class RecordingCore implements Partial<AmqpCore> {
  readonly settled: Array<[number, string]> = [];
  readonly dispatched: string[] = [];
  readonly cancelled: string[] = [];
  settle(delivery: QueueDelivery, outcome: 'ack' | 'reject' | 'requeue'): void {
    this.settled.push([delivery.seq, outcome]);
  }
  dispatch(queue: string): void {
    this.dispatched.push(queue);
  }
  cancel(_queue: string, consumer: AmqpConsumer): void {
    this.cancelled.push(consumer.tag);
  }
}

function channelWithFakes(): { channel: AmqpChannel; core: RecordingCore; sent: string[] } {
  const core = new RecordingCore();
  const sent: string[] = [];
  const host: ChannelHost = {
    core: core as unknown as AmqpCore, owner: 'test', limits: defaultAmqpLimits, logger: silentLogger(), consumerCancelNotify: true,
    acceptsDeliveries: () => true,
    sendMethod: (_channel: number, method: AmqpMethodInput) => sent.push(method.name),
    sendMessage: (_channel: number, method: ContentMethodInput) => sent.push(method.name),
    fail: (error: unknown) => sent.push(`fail ${String(error)}`),
    channelFinished: () => sent.push('finished'),
  };
  return { channel: new AmqpChannel(1, host), core, sent };
}

const delivery = (seq: number): QueueDelivery => ({
  queue: 'q', seq, redelivered: false, message: { exchange: '', routingKey: 'q', body: Buffer.from(`m${seq}`), properties: encodeProperties({}) },
});

describe('AmqpChannel settlement and prefetch', () => {
  function consumerOn(channel: AmqpChannel, prefetch: number): ChannelConsumer {
    const consumer = new ChannelConsumer(`c${channel.consumers.size}`, 'q', false, prefetch, channel);
    consumer.active = true;
    channel.consumers.set(consumer.tag, consumer);
    return consumer;
  }

  it('a per-consumer prefetch stops accepting at the limit and accepts again after an ack', () => {
    const { channel, core } = channelWithFakes();
    const consumer = consumerOn(channel, 2);
    expect(consumer.canAccept()).toBe(true);
    consumer.deliver(delivery(1));
    consumer.deliver(delivery(2));
    expect(consumer.canAccept()).toBe(false);
    channel.settle(1, false, 'ack');
    expect(consumer.canAccept()).toBe(true);
    expect(core.settled).toEqual([[1, 'ack']]);
    expect(core.dispatched).toEqual(['q']);
  });

  it('a channel-wide prefetch (global) counts every consumer of the channel', () => {
    const { channel } = channelWithFakes();
    channel.channelPrefetch = 2;
    const first = consumerOn(channel, 0);
    const second = consumerOn(channel, 0);
    first.deliver(delivery(1));
    second.deliver(delivery(2));
    expect([first.canAccept(), second.canAccept()]).toEqual([false, false]);
    channel.settle(2, false, 'requeue');
    expect([first.canAccept(), second.canAccept()]).toEqual([true, true]);
  });

  it('ack multiple takes every tag up to the given one; tag 0 with multiple takes all; unknown tags are 406', () => {
    const { channel, core } = channelWithFakes();
    const consumer = consumerOn(channel, 0);
    for (let seq = 1; seq <= 5; seq++) consumer.deliver(delivery(seq));
    channel.settle(3, true, 'ack');
    expect(core.settled).toEqual([[1, 'ack'], [2, 'ack'], [3, 'ack']]);
    expect(() => channel.settle(3, false, 'ack')).toThrow(/unknown delivery tag 3/);
    expect(() => channel.settle(2, true, 'ack')).toThrow(AmqpChannelError);
    channel.settle(0, true, 'reject');
    expect(core.settled.slice(3)).toEqual([[4, 'reject'], [5, 'reject']]);
    expect(consumer.unacked).toBe(0);
  });

  it('closing requeues every unacked delivery and cancels consumers; flow=false stops deliveries', () => {
    const { channel, core, sent } = channelWithFakes();
    const consumer = consumerOn(channel, 0);
    consumer.deliver(delivery(1));
    channel.deliverGot(delivery(2), false, 0);
    channel.setFlow(false);
    expect(consumer.canAccept()).toBe(false);
    channel.setFlow(true);
    expect(consumer.canAccept()).toBe(true);
    channel.closeByClient();
    expect(core.cancelled).toEqual(['c0']);
    expect(core.settled).toEqual([[1, 'requeue'], [2, 'requeue']]);
    expect(sent).toEqual(['basic.deliver', 'basic.get-ok', 'channel.close-ok', 'finished']);
    expect(consumer.canAccept()).toBe(false);
  });
});
