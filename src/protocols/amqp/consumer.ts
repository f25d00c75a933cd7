/**
 * One basic.consume on a channel, as the core sees it (AmqpConsumer).
 *
 * The consumer is inactive until its consume-ok is written, so no
 * basic.deliver can reach a client before it knows the consumer tag
 * (amqplib, for one, fails the channel on a delivery for an unknown tag).
 * The prefetch limit is fixed when the consumer is created, as basic.qos
 * with global=false means in RabbitMQ: "applies to consumers started after".
 */
import type { AmqpConsumer, QueueDelivery } from '../../core/api.js';

/** What a consumer asks of its channel. */
export interface ConsumerChannel {
  canDeliverTo(consumer: ChannelConsumer): boolean;
  deliver(consumer: ChannelConsumer, delivery: QueueDelivery): void;
  consumerCancelledByBroker(consumer: ChannelConsumer): void;
  consumerReadFailed(consumer: ChannelConsumer, error: Error): void;
}

export class ChannelConsumer implements AmqpConsumer {
  /** Deliveries to this consumer not yet acked, rejected or requeued. */
  unacked = 0;
  /** Set once consume-ok is on the wire. */
  active = false;

  constructor(
    readonly tag: string,
    readonly queue: string,
    readonly noAck: boolean,
    /** Per-consumer prefetch (basic.qos global=false at consume time); 0 is unlimited. */
    readonly prefetch: number,
    private readonly channel: ConsumerChannel,
    /** basic.consume x-priority. */
    readonly priority = 0,
  ) {}

  canAccept(): boolean {
    return this.channel.canDeliverTo(this);
  }

  deliver(delivery: QueueDelivery): void {
    this.channel.deliver(this, delivery);
  }

  cancelledByBroker(): void {
    this.channel.consumerCancelledByBroker(this);
  }

  readFailed(error: Error): void {
    this.channel.consumerReadFailed(this, error);
  }
}
