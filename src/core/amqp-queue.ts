/**
 * An AMQP queue at run time: its ready messages in seq order, what its
 * consumers hold unacknowledged, and round-robin dispatch that skips consumers
 * at their prefetch limit.
 *
 * A durable queue's durable entries mirror the projection's QueueState
 * (persistent messages): they enter through msg records and leave through ack
 * or drop records. Transient entries (non-persistent messages, or any message
 * in a transient queue) live only here. Requeued messages go back to their seq
 * position, so the queue keeps publish order as RabbitMQ does.
 */
import type { QueueState, StoredMessage } from '../projections/state.js';
import type { AmqpConsumer, AmqpMessage, QueueDelivery } from './api.js';

export interface QueueEntry {
  readonly seq: number;
  readonly message: AmqpMessage;
  /** Written to the log (persistent message in a durable queue). */
  readonly durable: boolean;
  redelivered: boolean;
}

export class QueueRuntime {
  /** Ready entries in ascending seq order; `head` skips the consumed prefix without shifting. */
  private ready: QueueEntry[] = [];
  private head = 0;
  readonly unacked = new Map<number, QueueEntry>();
  readonly consumers: AmqpConsumer[] = [];
  private nextConsumer = 0;
  nextSeq: number;
  dropped = 0;
  /** Set once a consumer has subscribed: auto-delete applies only after that [AMQP 0-9-1 queue.declare auto-delete]. */
  hadConsumer = false;
  exclusiveConsumer: AmqpConsumer | undefined = undefined;

  constructor(
    readonly name: string,
    readonly durable: boolean,
    readonly autoDelete: boolean,
    readonly exclusiveOwner: string | undefined,
    /** The projection's state of a durable queue. */
    readonly state: QueueState | undefined,
  ) {
    this.nextSeq = state?.nextSeq ?? 1;
  }

  get readyCount(): number {
    return this.ready.length - this.head;
  }

  get messageCount(): number {
    return this.readyCount;
  }

  takeSeq(): number {
    return this.nextSeq++;
  }

  push(entry: QueueEntry): void {
    this.ready.push(entry);
  }

  /** The oldest ready entry, removed. */
  shift(): QueueEntry | undefined {
    if (this.head >= this.ready.length) return undefined;
    const entry = this.ready[this.head]!;
    this.head++;
    if (this.head > 1024 && this.head * 2 > this.ready.length) {
      this.ready = this.ready.slice(this.head);
      this.head = 0;
    }
    return entry;
  }

  /** Back to its place by seq, flagged redelivered. */
  requeue(entry: QueueEntry): void {
    entry.redelivered = true;
    let low = this.head;
    let high = this.ready.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.ready[mid]!.seq < entry.seq) low = mid + 1;
      else high = mid;
    }
    if (low === this.head && this.head > 0) {
      this.head--;
      this.ready[this.head] = entry;
    } else {
      this.ready.splice(low, 0, entry);
    }
  }

  /** All ready entries, removed (purge). */
  takeAllReady(): QueueEntry[] {
    const taken = this.ready.slice(this.head);
    this.ready = [];
    this.head = 0;
    return taken;
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

/** Raw content-header properties holding only delivery-mode (flag bit 12): for MQTT messages crossing into AMQP. */
const persistentProperties = new Uint8Array([0x10, 0x00, 2]);
const transientProperties = new Uint8Array([0x10, 0x00, 1]);

/** How a stored message looks to an AMQP consumer: MQTT-origin messages arrive via amq.topic with '/' ⇄ '.' swapped. */
export function amqpMessageOf(message: StoredMessage, routingKey: string, exchange: string): AmqpMessage {
  const properties = message.properties ?? ((message.qos ?? 0) >= 1 ? persistentProperties : transientProperties);
  return { exchange, routingKey, body: message.payload, properties };
}
