/**
 * An AMQP queue at run time: its ready messages in seq order, what its
 * consumers hold unacknowledged, and round-robin dispatch that skips consumers
 * at their prefetch limit.
 *
 * Ready messages are references (entry-queue.ts): a persistent message in a
 * durable queue is its msg record's LSN, read back from the log (or the
 * recent-message cache) when it is delivered; only transient messages keep
 * their body here. A durable queue's durable entries are not copied: they are
 * the projection's QueueState (entering through msg records, leaving through
 * ack or drop records), and the ready list is a view over it
 * (ready-entries.ts). Requeued messages go back to their seq position, so
 * the queue keeps publish order as RabbitMQ does. Length limits (x-max-length,
 * x-max-length-bytes) count ready messages only, as RabbitMQ's do.
 *
 * Consumers: round robin among those that can take a message, restricted to
 * the highest consumer priority among them (basic.consume x-priority, as
 * RabbitMQ: lower priorities get messages only while the higher ones are
 * blocked). With x-single-active-consumer only the earliest registered
 * consumer still present gets messages; the next one takes over when it goes.
 */
import { EntryFlag, type EntryView } from '../projections/entry-queue.js';
import type { QueueArguments } from '../projections/records.js';
import type { QueueState, StoredMessage } from '../projections/state.js';
import { limitsOf, wouldOverflow, type QueueLimits } from './queue-arguments.js';
import type { AmqpConsumer, AmqpMessage, QueueDelivery } from './api.js';
import { amqpPropertiesOfMqtt } from './bridge-properties.js';
import { swapSeparators } from './mqtt-sessions.js';
import { ReadyEntries } from './ready-entries.js';

/** A message taken off the ready list: delivered, maybe unacknowledged. */
export interface QueueEntry {
  readonly seq: number;
  /** Its msg record (0: transient, never logged). */
  readonly lsn: number;
  readonly size: number;
  /** Written to the log (persistent message in a durable queue). */
  readonly durable: boolean;
  redelivered: boolean;
  /** Deliveries before this one (the projection's count for a durable entry). */
  readonly deliveries: number;
  readonly message: AmqpMessage;
  /** The message is not read from the log (transient, or from a format-1 snapshot): a requeue keeps it. */
  readonly held: boolean;
}

export class QueueRuntime {
  /** Ready entries in ascending seq order: a view over the durable queue's projection plus transient and requeued entries. */
  readonly ready: ReadyEntries;
  readonly unacked = new Map<number, QueueEntry>();
  readonly consumers: AmqpConsumer[] = [];
  private nextConsumer = 0;
  /** Consumers with a priority other than 0: when none, round robin needs no priority comparison. */
  private prioritizedConsumers = 0;
  nextSeq: number;
  dropped = 0;
  /** Set once a consumer has subscribed: auto-delete applies only after that [AMQP 0-9-1 queue.declare auto-delete]. */
  hadConsumer = false;
  exclusiveConsumer: AmqpConsumer | undefined = undefined;
  /** From x-max-length, x-max-length-bytes and x-overflow; the broker-wide bounds apply as well (publish.ts). */
  readonly limits: QueueLimits;
  /** x-delivery-limit: a message with more deliveries than this dies instead of being delivered again. */
  readonly deliveryLimit: number | undefined;
  /**
   * Deliveries are counted exactly (quorum queues, and any queue with a delivery limit): a durable
   * message's deliver record is durable before its basic.deliver leaves, and redeliveries carry
   * x-delivery-count.
   */
  readonly countsDeliveries: boolean;
  readonly singleActiveConsumer: boolean;
  /** A quorum queue: every message it takes is written to the log, delivery_mode 1 or 2. */
  readonly keepsEveryMessage: boolean;

  constructor(
    readonly name: string,
    readonly durable: boolean,
    readonly autoDelete: boolean,
    readonly exclusiveOwner: string | undefined,
    /** The projection's state of a durable queue. */
    readonly state: QueueState | undefined,
    /** As declared, validated (queue-arguments.ts). */
    readonly queueArguments: QueueArguments | undefined,
  ) {
    this.nextSeq = state?.nextSeq ?? 1;
    this.limits = limitsOf(this.queueArguments);
    this.deliveryLimit = queueArguments?.['x-delivery-limit'];
    this.countsDeliveries = this.deliveryLimit !== undefined || queueArguments?.['x-queue-type'] === 'quorum';
    this.singleActiveConsumer = queueArguments?.['x-single-active-consumer'] === true;
    this.keepsEveryMessage = queueArguments?.['x-queue-type'] === 'quorum';
    this.ready = new ReadyEntries(state, amqpMessageOf);
  }

  get readyCount(): number {
    return this.ready.size;
  }

  get readyBytes(): number {
    return this.ready.bytes;
  }

  get messageCount(): number {
    return this.readyCount;
  }

  /** x-overflow = reject-publish and a message of `size` body bytes does not fit: the publish is refused here. */
  refuses(size: number): boolean {
    return this.limits.rejectPublish && wouldOverflow(this.limits, this.readyCount, this.readyBytes, size);
  }

  takeSeq(): number {
    return this.nextSeq++;
  }

  /** A durable entry is its LSN; a transient one holds its message. */
  push(seq: number, lsn: number, size: number, durable: boolean, redelivered: boolean, held?: AmqpMessage, deliveries = 0): void {
    this.ready.insert(seq, lsn, size, (durable ? EntryFlag.durable : 0) | (redelivered ? EntryFlag.redelivered : 0), held, deliveries);
  }

  /**
   * Back to its place by seq, flagged redelivered, with the delivery that just ended counted (the
   * projection counts a durable one's by its deliver record); a durable one is read from the log
   * again when it is next delivered.
   */
  requeue(entry: QueueEntry): void {
    this.push(entry.seq, entry.lsn, entry.size, entry.durable, true, entry.held ? entry.message : undefined, entry.deliveries + 1);
  }

  /** Whether a message with this many deliveries so far has reached the x-delivery-limit [RabbitMQ quorum queues]. */
  overDeliveryLimit(deliveries: number): boolean {
    return this.deliveryLimit !== undefined && deliveries > this.deliveryLimit;
  }

  /** All ready entries, taken off the ready list (purge). */
  takeAllReady(): EntryView<AmqpMessage>[] {
    return this.ready.clear();
  }

  addConsumer(consumer: AmqpConsumer): void {
    this.consumers.push(consumer);
    if ((consumer.priority ?? 0) !== 0) this.prioritizedConsumers++;
  }

  /**
   * The next consumer in round robin that can take a message, among those of the highest priority
   * that can, or undefined. A single-active-consumer queue has one candidate: its earliest consumer.
   */
  nextAcceptingConsumer(): AmqpConsumer | undefined {
    if (this.singleActiveConsumer) {
      const active = this.consumers[0];
      return active?.canAccept() ? active : undefined;
    }
    const count = this.consumers.length;
    let chosen = -1;
    for (let i = 0; i < count; i++) {
      const index = (this.nextConsumer + i) % count;
      const consumer = this.consumers[index]!;
      if (chosen >= 0 && (consumer.priority ?? 0) <= (this.consumers[chosen]!.priority ?? 0)) continue;
      if (!consumer.canAccept()) continue;
      chosen = index;
      if (this.prioritizedConsumers === 0) break;
    }
    if (chosen < 0) return undefined;
    this.nextConsumer = (chosen + 1) % count;
    return this.consumers[chosen];
  }

  removeConsumer(consumer: AmqpConsumer): boolean {
    const index = this.consumers.indexOf(consumer);
    if (index < 0) return false;
    this.consumers.splice(index, 1);
    if ((consumer.priority ?? 0) !== 0) this.prioritizedConsumers--;
    if (this.nextConsumer > index) this.nextConsumer--;
    if (this.nextConsumer >= this.consumers.length) this.nextConsumer = 0;
    if (this.exclusiveConsumer === consumer) this.exclusiveConsumer = undefined;
    return true;
  }

  deliveryOf(entry: QueueEntry, durable?: Promise<void>): QueueDelivery {
    const delivery = { queue: this.name, seq: entry.seq, message: entry.message, redelivered: entry.redelivered };
    return durable === undefined ? delivery : { ...delivery, durable };
  }
}

/** The queues that take a message of `size` body bytes: a full one with x-overflow = reject-publish refuses it. */
export function queuesAccepting(queues: readonly QueueRuntime[], size: number): readonly QueueRuntime[] {
  return queues.some((queue) => queue.refuses(size)) ? queues.filter((queue) => !queue.refuses(size)) : queues;
}

/** Whether a ready-list entry is durable / redelivered. */
export function isDurableEntry(entry: EntryView<unknown>): boolean {
  return (entry.flags & EntryFlag.durable) !== 0;
}

export function isRedeliveredEntry(entry: EntryView<unknown>): boolean {
  return (entry.flags & EntryFlag.redelivered) !== 0;
}

/** Raw content-header properties holding only delivery-mode (flag bit 12): for MQTT messages crossing into AMQP. */
const persistentProperties = new Uint8Array([0x10, 0x00, 2]);
const transientProperties = new Uint8Array([0x10, 0x00, 1]);

/**
 * How a stored message looks to an AMQP consumer: MQTT-origin messages arrive via amq.topic with '/' ⇄ '.' swapped,
 * their MQTT 5 properties as AMQP ones (bridge-properties.ts; an `expiration` then expires them as any AMQP message).
 */
export function amqpMessageOf(message: StoredMessage): AmqpMessage {
  const exchange = message.exchange ?? 'amq.topic';
  const routingKey = message.exchange === undefined ? swapSeparators(message.topic) : message.topic;
  const qos = message.qos ?? 0;
  const properties = message.properties
    ?? (message.mqttProperties !== undefined ? amqpPropertiesOfMqtt(message.mqttProperties, qos, message.timestamp) : qos >= 1 ? persistentProperties : transientProperties);
  return { exchange, routingKey, body: message.payload, properties, publishedAt: message.timestamp };
}
