/**
 * One AMQP channel: its frames in (content assembly, then the flat method
 * dispatch in dispatch.ts), its deliveries out, and the state that lives as
 * long as it does — consumers, unacknowledged deliveries by delivery tag,
 * prefetch limits, flow, publisher confirms and ordered method replies.
 *
 * Life cycle:  open ──channel.close from client──▶ (close-ok sent) finished
 *               ├──error──▶ closing (channel.close sent) ──close-ok / close──▶ finished
 *               └──the connection closes──▶ closing ──the socket ends──▶ finished
 *
 * Invariants:
 * - Delivery tags count from 1 per channel; `unacked` holds every delivery
 *   not yet settled, in tag order (a Map keeps insertion order).
 * - `consumerUnacked` == sum of `unacked` of the channel's consumers' entries,
 *   and each consumer's `unacked` counts its entries: prefetch decisions rely on it.
 * - Once the channel stops being open (either way), it stops once: consumers
 *   are cancelled, pending confirms and replies are dropped. Its unacked
 *   deliveries go back to their queues (redelivered=true) once, only when no
 *   frame of the client can still arrive for it: at its close-ok, at the
 *   client's channel.close, or when the connection's socket is gone.
 * - Frames are applied in arrival order. While closing, every frame but
 *   channel.close, channel.close-ok (spec 2.2.4: "after sending close ...
 *   discard all frames") and the settlements basic.ack / nack / reject is
 *   ignored: a settlement the client sent before it saw the close is applied
 *   and recorded, never turned into a redelivery (issue 11).
 */
import type { Logger } from 'pino';
import { AssertionError, assert } from '../../assert.js';
import type { AmqpCore, Durable, QueueDelivery, TransactionOperation } from '../../core/api.js';
import {
  AmqpCodecError, CLASS_ID, decodeMethod, FRAME_TYPE, METHOD_ID, REPLY_CODE,
  type AmqpMethod, type AmqpMethodInput, type ContentMethodInput, type Frame,
} from './codec/index.js';
import type { ChannelDescription } from '../connection-description.js';
import { ContentAssembler } from './content-assembler.js';
import { ChannelConsumer, type ConsumerChannel } from './consumer.js';
import { dispatchChannelMethod, publishAssembled } from './dispatch.js';
import type { AmqpAccess } from './permission-check.js';
import { AmqpChannelError, AmqpConnectionError, AmqpLogFailedError, type WireError } from './errors.js';
import type { AmqpLimits } from './limits.js';
import { OrderedReplies } from './ordered-replies.js';
import { PublisherConfirms } from './publisher-confirms.js';
import { ChannelTransaction } from './transaction.js';

/** What a channel needs from its connection. */
export interface ChannelHost {
  readonly core: AmqpCore;
  /** Identifies the connection to the core (exclusive queues, publisher id). */
  readonly owner: string;
  readonly limits: AmqpLimits;
  readonly logger: Logger;
  /** The client said consumer_cancel_notify in its capabilities. */
  readonly consumerCancelNotify: boolean;
  /** The connection is open and its socket is not congested. */
  acceptsDeliveries(): boolean;
  /** `alone`: nothing else is expected this tick (a lone confirm): written at once unless frames of this tick are gathered already. */
  sendMethod(channel: number, method: AmqpMethodInput, alone?: boolean): void;
  sendMessage(channel: number, method: ContentMethodInput, properties: Uint8Array, body: Uint8Array): void;
  /** An error outside frame handling (a Durable rejected): map it as if a frame had caused it. */
  fail(error: unknown, channel: number): void;
  /** The channel finished closing: its number may be opened again. */
  channelFinished(channel: number): void;
  /** The logged-in user's permissions (permission-check.ts); undefined: unrestricted. */
  readonly access?: AmqpAccess | undefined;
  /** A basic.publish arrived (the connection may hold publishers back: connection.blocked). */
  publishing?(): void;
}

export type ChannelState = 'open' | 'closing' | 'finished';

interface UnackedDelivery {
  readonly delivery: QueueDelivery;
  /** Undefined for basic.get deliveries, which no prefetch limit counts. */
  readonly consumer: ChannelConsumer | undefined;
}

export type SettleOutcome = 'ack' | 'reject' | 'requeue';

export class AmqpChannel implements ConsumerChannel {
  private stateValue: ChannelState = 'open';
  private stopped = false;
  private requeued = false;
  readonly consumers = new Map<string, ChannelConsumer>();
  private readonly unacked = new Map<number, UnackedDelivery>();
  private nextDeliveryTag = 1;
  private consumerUnacked = 0;
  private confirmsValue: PublisherConfirms | undefined;
  /** Set by tx.select: publishes and settlements wait for tx.commit (transaction.ts). */
  private transactionValue: ChannelTransaction | undefined;
  readonly replies: OrderedReplies;
  readonly assembler: ContentAssembler;
  /** basic.qos global=false: the prefetch of consumers created from now on (0: unlimited). */
  consumerPrefetch = 0;
  /** basic.qos global=true: the limit on all of this channel's consumers' unacked deliveries together. */
  channelPrefetch = 0;
  /** channel.flow from the client: false asks us to stop delivering. */
  private flowActive = true;
  /** The last queue declared on this channel: what an empty queue name means (spec "queue-name" domain). */
  lastQueueName: string | undefined = undefined;
  /** The name of this channel's direct reply-to consumer (amq.rabbitmq.reply-to.<token>), while it has one. */
  replyQueueName: string | undefined = undefined;
  /** The last delivery waiting for its deliver record to be durable: later ones wait behind it, so tags leave in order. */
  private waitingDelivery: Promise<void> | undefined = undefined;

  constructor(
    readonly number: number,
    readonly host: ChannelHost,
  ) {
    this.replies = new OrderedReplies((error) => this.host.fail(new AmqpLogFailedError('a declaration could not be made durable: the log failed', error), this.number));
    this.assembler = new ContentAssembler(host.limits.messageBytesMax);
  }

  get state(): ChannelState {
    return this.stateValue;
  }

  get core(): AmqpCore {
    return this.host.core;
  }

  get confirms(): PublisherConfirms | undefined {
    return this.confirmsValue;
  }

  get transaction(): ChannelTransaction | undefined {
    return this.transactionValue;
  }

  describe(): ChannelDescription {
    return {
      number: this.number, state: this.stateValue, unacknowledged: this.unacked.size,
      prefetch: this.consumerPrefetch, globalPrefetch: this.channelPrefetch,
      confirm: this.confirmsValue !== undefined, unconfirmed: this.confirmsValue?.outstanding ?? 0,
      consumers: [...this.consumers.values()].map((consumer) => ({
        tag: consumer.tag, queue: consumer.queue, ackRequired: !consumer.noAck, prefetch: consumer.prefetch, active: consumer.active,
      })),
    };
  }

  // ─────────────────────────── inbound ───────────────────────────

  /** One frame for this channel, in arrival order. Throws for the connection to map. */
  receive(frame: Frame): void {
    if (this.stateValue === 'closing') {
      this.receiveWhileClosing(frame);
      return;
    }
    assert(this.stateValue === 'open', `frame routed to a ${this.stateValue} channel`);
    const expecting = this.assembler.expecting;
    if (expecting === 'method') {
      if (frame.type !== FRAME_TYPE.METHOD) throw unexpectedFrame(frame, this.number, 'a method frame');
      dispatchChannelMethod(this, decodeMethod(frame.payload));
      return;
    }
    if (expecting === 'header') {
      if (frame.type !== FRAME_TYPE.HEADER) throw unexpectedFrame(frame, this.number, 'the content header of basic.publish');
      const message = this.assembler.header(frame.payload);
      if (message) publishAssembled(this, message);
      return;
    }
    if (frame.type !== FRAME_TYPE.BODY) throw unexpectedFrame(frame, this.number, 'a body frame of basic.publish');
    const message = this.assembler.bodyFrame(frame.payload);
    if (message) publishAssembled(this, message);
  }

  /** Spec 2.2.4: a closing channel discards everything except close and close-ok — and settlements. */
  private receiveWhileClosing(frame: Frame): void {
    if (frame.type !== FRAME_TYPE.METHOD || frame.payload.length < 4) return;
    const classId = frame.payload.readUInt16BE(0);
    const methodId = frame.payload.readUInt16BE(2);
    if (classId === CLASS_ID.BASIC) this.receiveSettlement(frame);
    if (classId !== CLASS_ID.CHANNEL) return;
    if (methodId === METHOD_ID.CHANNEL.CLOSE) {
      // Both sides closed at once: answer theirs, and ours is answered too.
      this.host.sendMethod(this.number, { name: 'channel.close-ok' });
      this.finish();
    } else if (methodId === METHOD_ID.CHANNEL.CLOSE_OK) {
      this.finish();
    }
  }

  /**
   * A basic.ack, nack or reject that reached a closing channel (or a channel
   * of a closing connection): the client sent it before it saw the close, so
   * it still counts. amqplib, for one, writes connection.close on channel 0
   * ahead of the acks still queued in its channel's write buffer. Anything
   * else is discarded, and so is an unknown tag or an undecodable frame: the
   * channel is going away, there is no one left to tell.
   */
  receiveSettlement(frame: Frame): void {
    if (frame.type !== FRAME_TYPE.METHOD || frame.payload.length < 4 || frame.payload.readUInt16BE(0) !== CLASS_ID.BASIC) return;
    if (!settlementMethodIds.has(frame.payload.readUInt16BE(2))) return;
    // On a transactional channel a settlement waits for a commit that can no longer come: its delivery is requeued.
    if (this.transactionValue !== undefined) return;
    let method: AmqpMethod;
    try {
      method = decodeMethod(frame.payload);
    } catch (error: unknown) {
      if (error instanceof AmqpCodecError) return;
      throw error;
    }
    if (method.name === 'basic.ack') this.settleTaken(this.take(method.deliveryTag, method.multiple), 'ack');
    else if (method.name === 'basic.nack') this.settleTaken(this.take(method.deliveryTag, method.multiple), method.requeue ? 'requeue' : 'reject');
    else if (method.name === 'basic.reject') this.settleTaken(this.take(method.deliveryTag, false), method.requeue ? 'requeue' : 'reject');
  }

  // ─────────────────────────── replies ───────────────────────────

  sendMethod(method: AmqpMethodInput): void {
    if (this.stateValue !== 'open') return;
    this.host.sendMethod(this.number, method);
  }

  /**
   * A synchronous reply (every *-ok, get-empty), in request order, once
   * `durable` resolved; nothing but `afterSend` when the client said no-wait.
   */
  reply(durable: Durable, noWait: boolean, method: AmqpMethodInput, afterSend?: () => void): void {
    if (noWait) {
      durable?.catch((error: unknown) => this.host.fail(new AmqpLogFailedError(`${method.name}: the log failed`, error), this.number));
      afterSend?.();
      return;
    }
    this.replies.add(durable, () => {
      if (this.stateValue !== 'open') return;
      this.sendMethod(method);
      afterSend?.();
    });
  }

  /** The queue an empty queue name stands for; a 404 channel error, as RabbitMQ's, when none was declared on this channel. */
  queueNameOf(name: string): string {
    if (name !== '') return name;
    if (this.lastQueueName === undefined) throw new AmqpChannelError(REPLY_CODE.NOT_FOUND, 'no previously declared queue');
    return this.lastQueueName;
  }

  enableTransactions(): void {
    this.transactionValue ??= new ChannelTransaction();
  }

  /**
   * tx.commit: the buffered operations go to the core in order as one atomic group; unroutable mandatory
   * publishes are returned (before commit-ok, which waits for the returned Durable). 406 when not transactional.
   */
  commitTransaction(): Durable {
    const transaction = this.requireTransaction();
    const operations: TransactionOperation[] = [];
    const buffered = transaction.take();
    for (const operation of buffered) {
      if (operation.kind === 'publish') {
        operations.push({ kind: 'publish', message: operation.message, persistent: operation.persistent, from: this.host.owner });
        continue;
      }
      for (const tag of operation.deliveryTags) {
        const taken = this.take(tag, false);
        assert(taken !== undefined && taken.length === 1, `a delivery tag settled in a transaction (${tag}) left the channel before the commit`);
        this.release(taken[0]!);
        operations.push({ kind: 'settle', delivery: taken[0]!.delivery, outcome: operation.outcome });
      }
    }
    const { durable, published } = this.core.commitTransaction(operations);
    let index = 0;
    for (const operation of buffered) {
      if (operation.kind !== 'publish') continue;
      const result = published[index++]!;
      const { message } = operation;
      if (!result.routed && operation.mandatory) this.returnMessage(REPLY_CODE.NO_ROUTE, 'NO_ROUTE', message.exchange, message.routingKey, message.properties, message.body);
    }
    this.dispatchConsumers();
    return durable;
  }

  /** tx.rollback: the buffer is discarded; deliveries it would have settled stay unacknowledged. */
  rollbackTransaction(): void {
    this.requireTransaction().take();
  }

  private requireTransaction(): ChannelTransaction {
    if (this.transactionValue === undefined) throw new AmqpChannelError(REPLY_CODE.PRECONDITION_FAILED, 'channel is not transactional');
    return this.transactionValue;
  }

  enableConfirms(): void {
    this.confirmsValue ??= new PublisherConfirms((deliveryTag, multiple, outcome, alone) => {
      if (this.stateValue !== 'open') return;
      const method: AmqpMethodInput = outcome === 'ack' ? { name: 'basic.ack', deliveryTag, multiple } : { name: 'basic.nack', deliveryTag, multiple, requeue: false };
      this.host.sendMethod(this.number, method, alone);
    });
  }

  setFlow(active: boolean): void {
    this.flowActive = active;
    if (active) this.dispatchConsumers();
  }

  // ─────────────────────────── deliveries ───────────────────────────

  canDeliverTo(consumer: ChannelConsumer): boolean {
    if (this.stateValue !== 'open' || !this.flowActive || !consumer.active || !this.host.acceptsDeliveries()) return false;
    // Prefetch bounds acknowledged delivery only (RabbitMQ ignores it for no-ack consumers).
    if (consumer.noAck) return true;
    if (consumer.prefetch !== 0 && consumer.unacked >= consumer.prefetch) return false;
    return this.channelPrefetch === 0 || this.consumerUnacked < this.channelPrefetch;
  }

  deliver(consumer: ChannelConsumer, delivery: QueueDelivery): void {
    assert(this.stateValue === 'open' && consumer.active, 'delivery to a consumer that cannot accept');
    const deliveryTag = this.nextDeliveryTag++;
    if (!consumer.noAck) {
      this.unacked.set(deliveryTag, { delivery, consumer });
      consumer.unacked++;
      this.consumerUnacked++;
    }
    if (delivery.durable === undefined && this.waitingDelivery === undefined) return this.sendDelivery(consumer, delivery, deliveryTag);
    // Its deliver record first (an exact delivery count survives a crash), and never ahead of an earlier tag.
    const waiting = (this.waitingDelivery ?? Promise.resolve())
      .then(() => delivery.durable)
      .then(
        () => this.sendDelivery(consumer, delivery, deliveryTag),
        (error: unknown) => this.host.fail(new AmqpLogFailedError('a delivery could not be recorded: the log failed', error), this.number),
      )
      .finally(() => {
        if (this.waitingDelivery === waiting) this.waitingDelivery = undefined;
      });
    this.waitingDelivery = waiting;
  }

  /** basic.deliver on the wire; a delivery that waited for its record is dropped if the channel closed meanwhile (it is requeued). */
  private sendDelivery(consumer: ChannelConsumer, delivery: QueueDelivery, deliveryTag: number): void {
    if (this.stateValue !== 'open') return;
    const { message } = delivery;
    try {
      this.host.sendMessage(this.number, {
        name: 'basic.deliver', consumerTag: consumer.tag, deliveryTag, redelivered: delivery.redelivered,
        exchange: message.exchange, routingKey: message.routingKey,
      }, message.properties, message.body);
    } catch (error: unknown) {
      this.deliveryFailed(consumer, error);
    }
  }

  /**
   * A delivery that cannot be encoded for this connection (say, properties
   * larger than the consumer's frame-max). We are inside the core's dispatch,
   * called from another connection's publish: the failure must not surface
   * there. Stop this consumer now and fail our own connection on the next
   * tick, which requeues the delivery.
   */
  private deliveryFailed(consumer: ChannelConsumer, error: unknown): void {
    if (error instanceof AssertionError) throw error;
    consumer.active = false;
    process.nextTick(() => this.host.fail(error, this.number));
  }

  /** A queued message could not be read from the log: this connection closes with 541 naming it; the message stays queued. */
  consumerReadFailed(consumer: ChannelConsumer, error: Error): void {
    this.deliveryFailed(consumer, error);
  }

  /** basic.get-ok: a delivery no consumer owns, sent in reply order. */
  deliverGot(delivery: QueueDelivery, noAck: boolean, messageCount: number): void {
    const deliveryTag = this.nextDeliveryTag++;
    if (!noAck) this.unacked.set(deliveryTag, { delivery, consumer: undefined });
    const { message } = delivery;
    this.replies.add(delivery.durable, () => {
      if (this.stateValue !== 'open') return;
      this.host.sendMessage(this.number, {
        name: 'basic.get-ok', deliveryTag, redelivered: delivery.redelivered,
        exchange: message.exchange, routingKey: message.routingKey, messageCount,
      }, message.properties, message.body);
    });
  }

  /** basic.return: a mandatory message no queue took. */
  returnMessage(replyCode: number, replyText: string, exchange: string, routingKey: string, properties: Uint8Array, body: Uint8Array): void {
    if (this.stateValue !== 'open') return;
    this.host.sendMessage(this.number, { name: 'basic.return', replyCode, replyText, exchange, routingKey }, properties, body);
  }

  /** The queue was deleted under the consumer: tell the client if it listens (consumer_cancel_notify). */
  consumerCancelledByBroker(consumer: ChannelConsumer): void {
    if (this.consumers.get(consumer.tag) !== consumer) return;
    this.consumers.delete(consumer.tag);
    consumer.active = false;
    if (this.host.consumerCancelNotify) this.sendMethod({ name: 'basic.cancel', consumerTag: consumer.tag, noWait: true });
  }

  /** Ask each queue this channel consumes from to deliver: prefetch capacity, flow or the socket freed up. */
  dispatchConsumers(): void {
    if (this.stateValue !== 'open') return;
    const queues = new Set<string>();
    for (const consumer of this.consumers.values()) queues.add(consumer.queue);
    for (const queue of queues) this.core.dispatch(queue);
  }

  // ─────────────────────────── settlement ───────────────────────────

  /**
   * basic.ack / nack / reject. `multiple` settles every unacked tag up to and
   * including `deliveryTag`; tag 0 with multiple means all of them. An unknown
   * tag is 406 PRECONDITION_FAILED, as RabbitMQ answers.
   */
  settle(deliveryTag: number, multiple: boolean, outcome: SettleOutcome): void {
    if (this.transactionValue !== undefined) return this.settleInTransaction(this.transactionValue, deliveryTag, multiple, outcome);
    const taken = this.take(deliveryTag, multiple);
    if (taken === undefined) throw new AmqpChannelError(REPLY_CODE.PRECONDITION_FAILED, `unknown delivery tag ${deliveryTag}`);
    this.settleTaken(taken, outcome);
  }

  /** On a transactional channel a settlement names its tags now and takes effect at the commit (transaction.ts). */
  private settleInTransaction(transaction: ChannelTransaction, deliveryTag: number, multiple: boolean, outcome: SettleOutcome): void {
    const pending = (tag: number): boolean => this.unacked.has(tag) && !transaction.settledTags.has(tag);
    let tags: number[];
    if (multiple) {
      tags = [...this.unacked.keys()].filter((tag) => (deliveryTag === 0 || tag <= deliveryTag) && pending(tag));
      if (deliveryTag !== 0 && !pending(deliveryTag)) tags = [];
    } else {
      tags = pending(deliveryTag) ? [deliveryTag] : [];
    }
    if (tags.length === 0 && !(multiple && deliveryTag === 0)) throw new AmqpChannelError(REPLY_CODE.PRECONDITION_FAILED, `unknown delivery tag ${deliveryTag}`);
    transaction.settle(tags, outcome);
  }

  /** Remove the deliveries a settlement names from `unacked`; undefined for an unknown tag. */
  private take(deliveryTag: number, multiple: boolean): UnackedDelivery[] | undefined {
    const taken: UnackedDelivery[] = [];
    if (multiple && deliveryTag === 0) {
      taken.push(...this.unacked.values());
      this.unacked.clear();
      return taken;
    }
    const named = this.unacked.get(deliveryTag);
    if (named === undefined) return undefined;
    if (!multiple) {
      this.unacked.delete(deliveryTag);
      return [named];
    }
    for (const [tag, entry] of this.unacked) {
      if (tag > deliveryTag) break;
      taken.push(entry);
      this.unacked.delete(tag);
    }
    return taken;
  }

  private settleTaken(taken: readonly UnackedDelivery[] | undefined, outcome: SettleOutcome): void {
    if (taken === undefined) return;
    for (const entry of taken) this.release(entry);
    for (const entry of taken) this.core.settle(entry.delivery, outcome);
    this.dispatchConsumers();
  }

  /** basic.recover requeue=true: every unacked delivery back to its queue, redelivered. */
  recover(): void {
    this.settle(0, true, 'requeue');
  }

  private release(entry: UnackedDelivery): void {
    const consumer = entry.consumer;
    if (consumer === undefined) return;
    consumer.unacked--;
    this.consumerUnacked--;
    assert(consumer.unacked >= 0 && this.consumerUnacked >= 0, 'unacked counts went negative');
  }

  // ─────────────────────────── closing ───────────────────────────

  /** The client sent channel.close: tear down, answer close-ok, free the number. */
  closeByClient(): void {
    assert(this.stateValue === 'open', 'client close of a channel that is not open');
    this.teardown();
    this.host.sendMethod(this.number, { name: 'channel.close-ok' });
    this.finish();
  }

  /** A channel error: send channel.close and wait for close-ok, applying only settlements meanwhile. */
  closeWithError(error: WireError): void {
    if (this.stateValue !== 'open') return;
    // Confirms already earned go out before the close, or the client would count them lost.
    this.confirmsValue?.flush();
    this.host.sendMethod(this.number, {
      name: 'channel.close', replyCode: error.replyCode, replyText: error.replyText,
      failedClassId: error.classId, failedMethodId: error.methodId,
    });
    this.stateValue = 'closing';
    this.stop();
  }

  /**
   * The connection is closing: nothing more is delivered or answered, but the
   * unacked deliveries wait for `abandon`, when the socket is gone, so that
   * settlements still in flight are applied first (receiveSettlement).
   */
  connectionClosing(): void {
    if (this.stateValue !== 'open') return;
    this.stateValue = 'closing';
    this.stop();
  }

  /** The connection is gone: release everything without a word on the wire. */
  abandon(): void {
    this.teardown();
    this.stateValue = 'finished';
  }

  private finish(): void {
    this.teardown();
    this.stateValue = 'finished';
    this.host.channelFinished(this.number);
  }

  private teardown(): void {
    this.stop();
    this.requeueUnacked();
  }

  /** Runs once: cancel consumers, drop pending confirms and replies and a half-assembled message. */
  private stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.confirmsValue?.close();
    // An uncommitted transaction ends with its channel: its publishes never happen, its deliveries are requeued.
    this.transactionValue?.take();
    this.replies.close();
    this.assembler.reset();
    const consumers = [...this.consumers.values()];
    this.consumers.clear();
    // All inactive before any cancel: a cancel dispatches its queue, which must not pick a sibling of this channel.
    for (const consumer of consumers) consumer.active = false;
    for (const consumer of consumers) this.core.cancel(consumer.queue, consumer);
  }

  /** Runs once, after the last frame for this channel: every unacked delivery back to its queue, redelivered=true. */
  private requeueUnacked(): void {
    if (this.requeued) return;
    this.requeued = true;
    const pending = [...this.unacked.values()];
    this.unacked.clear();
    this.consumerUnacked = 0;
    for (const entry of pending) this.core.settle(entry.delivery, 'requeue');
  }
}

const settlementMethodIds: ReadonlySet<number> = new Set([METHOD_ID.BASIC.ACK, METHOD_ID.BASIC.NACK, METHOD_ID.BASIC.REJECT]);

function unexpectedFrame(frame: Frame, channel: number, expected: string): AmqpConnectionError {
  const kind = frame.type === FRAME_TYPE.METHOD ? 'method' : frame.type === FRAME_TYPE.HEADER ? 'content header' : 'body';
  return new AmqpConnectionError(REPLY_CODE.UNEXPECTED_FRAME, `expected ${expected} on channel ${channel}, got a ${kind} frame`);
}
