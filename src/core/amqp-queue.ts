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
 */
import { EntryFlag, type EntryView } from '../projections/entry-queue.js';
import type { QueueArguments } from '../projections/records.js';
import type { QueueState, StoredMessage } from '../projections/state.js';
import { limitsOf, wouldOverflow, type QueueLimits } from './queue-arguments.js';
import type { AmqpConsumer, AmqpMessage, QueueDelivery } from './api.js';
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
  nextSeq: number;
  dropped = 0;
  /** Set once a consumer has subscribed: auto-delete applies only after that [AMQP 0-9-1 queue.declare auto-delete]. */
  hadConsumer = false;
  exclusiveConsumer: AmqpConsumer | undefined = undefined;
  /** From x-max-length, x-max-length-bytes and x-overflow; the broker-wide bounds apply as well (publish.ts). */
  readonly limits: QueueLimits;

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
  push(seq: number, lsn: number, size: number, durable: boolean, redelivered: boolean, held?: AmqpMessage): void {
    this.ready.insert(seq, lsn, size, (durable ? EntryFlag.durable : 0) | (redelivered ? EntryFlag.redelivered : 0), held);
  }

  /** Back to its place by seq, flagged redelivered; a durable one is read from the log again when it is next delivered. */
  requeue(entry: QueueEntry): void {
    this.push(entry.seq, entry.lsn, entry.size, entry.durable, true, entry.held ? entry.message : undefined);
  }

  /** All ready entries, taken off the ready list (purge). */
  takeAllReady(): EntryView<AmqpMessage>[] {
    return this.ready.clear();
  }

  /** The next consumer in round robin that can take a message, or undefined. */
  nextAcceptingConsumer(): AmqpConsumer | undefined {
    const count = this.consumers.length;
    for (let i = 0; i < count; i++) {
      const index = (this.nextConsumer + i) % count;
      const consumer = this.consumers[index]!;
      if (consumer.canAccept()) {
        this.nextConsumer = (index + 1) % count;
        return consumer;
      }
    }
    return undefined;
  }

  removeConsumer(consumer: AmqpConsumer): boolean {
    const index = this.consumers.indexOf(consumer);
    if (index < 0) return false;
    this.consumers.splice(index, 1);
    if (this.nextConsumer > index) this.nextConsumer--;
    if (this.nextConsumer >= this.consumers.length) this.nextConsumer = 0;
    if (this.exclusiveConsumer === consumer) this.exclusiveConsumer = undefined;
    return true;
  }

  deliveryOf(entry: QueueEntry): QueueDelivery {
    return { queue: this.name, seq: entry.seq, message: entry.message, redelivered: entry.redelivered };
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

/** How a stored message looks to an AMQP consumer: MQTT-origin messages arrive via amq.topic with '/' ⇄ '.' swapped. */
export function amqpMessageOf(message: StoredMessage): AmqpMessage {
  const exchange = message.exchange ?? 'amq.topic';
  const routingKey = message.exchange === undefined ? swapSeparators(message.topic) : message.topic;
  const properties = message.properties ?? ((message.qos ?? 0) >= 1 ? persistentProperties : transientProperties);
  return { exchange, routingKey, body: message.payload, properties, publishedAt: message.timestamp };
}
