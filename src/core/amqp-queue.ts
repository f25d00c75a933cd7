/**
 * An AMQP queue at run time: a destination (destination-runtime.ts: ready
 * messages in seq order, what its consumers hold unacknowledged, the bound)
 * with AMQP consumers plugged in, taking messages by round robin within their
 * prefetch.
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
 * Consumer priorities are basic.consume x-priority (ConsumerRing). With
 * x-single-active-consumer only the earliest registered consumer still
 * present gets messages; the next one takes over when it goes.
 */
import type { EntryView } from '../projections/entry-queue.js';
import type { QueueArguments } from '../projections/records.js';
import type { QueueState, StoredMessage } from '../projections/state.js';
import { limitsOf, wouldOverflow, type QueueLimits } from './queue-arguments.js';
import type { AmqpConsumer, AmqpMessage, QueueDelivery } from './api.js';
import { amqpPropertiesOfMqtt } from './bridge-properties.js';
import { ConsumerRing, DestinationRuntime } from './destination-runtime.js';
import { swapSeparators } from './mqtt-sessions.js';

/** A message taken off the ready list: delivered, maybe unacknowledged. `held`: the message is not read from the log (transient, or from a format-1 snapshot), so a requeue keeps it. */
export interface QueueEntry extends EntryView<AmqpMessage> {
  /** Written to the log (persistent message in a durable queue); its lsn is 0 when not. */
  readonly durable: boolean;
  readonly redelivered: boolean;
  readonly message: AmqpMessage;
}

export class QueueRuntime extends DestinationRuntime<AmqpMessage, QueueEntry> {
  private readonly ring = new ConsumerRing<AmqpConsumer>((consumer) => consumer.priority ?? 0);
  /** Messages the bound dropped. */
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
    /** The projection's state of a durable queue: the ready list is a view over it. */
    state: QueueState | undefined,
    /** As declared, validated (queue-arguments.ts). */
    readonly queueArguments: QueueArguments | undefined,
  ) {
    super(state, amqpMessageOf);
    this.limits = limitsOf(this.queueArguments);
    this.deliveryLimit = queueArguments?.['x-delivery-limit'];
    this.countsDeliveries = this.deliveryLimit !== undefined || queueArguments?.['x-queue-type'] === 'quorum';
    this.singleActiveConsumer = queueArguments?.['x-single-active-consumer'] === true;
    this.keepsEveryMessage = queueArguments?.['x-queue-type'] === 'quorum';
  }

  get consumers(): readonly AmqpConsumer[] {
    return this.ring.list;
  }

  /** x-overflow = reject-publish and a message of `size` body bytes does not fit: the publish is refused here. */
  refuses(size: number): boolean {
    return this.limits.rejectPublish && wouldOverflow(this.limits, this.readyCount, this.readyBytes, size);
  }

  /** Whether a message with this many deliveries so far has reached the x-delivery-limit [RabbitMQ quorum queues]. */
  overDeliveryLimit(deliveries: number): boolean {
    return this.deliveryLimit !== undefined && deliveries > this.deliveryLimit;
  }

  addConsumer(consumer: AmqpConsumer): void {
    this.ring.add(consumer);
  }

  /**
   * The next consumer in round robin that can take a message, among those of the highest priority
   * that can, or undefined. A single-active-consumer queue has one candidate: its earliest consumer.
   */
  nextAcceptingConsumer(): AmqpConsumer | undefined {
    if (!this.singleActiveConsumer) return this.ring.next((consumer) => consumer.canAccept());
    const active = this.ring.list[0];
    return active?.canAccept() ? active : undefined;
  }

  removeConsumer(consumer: AmqpConsumer): boolean {
    if (!this.ring.remove(consumer)) return false;
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
