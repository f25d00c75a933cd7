/**
 * Direct reply-to, as RabbitMQ has it (amq.rabbitmq.reply-to): an RPC client
 * consumes in no-ack mode from the pseudo-queue `amq.rabbitmq.reply-to` and
 * publishes its requests with reply_to set to that name, which the server
 * rewrites to `amq.rabbitmq.reply-to.<token>`, a name for that one consumer
 * (protocols/amqp/direct-reply-to.ts). A reply published to the default
 * exchange with that routing key goes straight to the consumer: no queue, no
 * record, nothing kept. A reply for a consumer that is gone, or that cannot
 * take a delivery now (its channel closing, flow stopped, its socket
 * congested), is dropped — returned to a mandatory publisher.
 *
 * Tokens are random, so a name cannot be guessed or outlive its consumer.
 */
import { randomBytes } from 'node:crypto';
import type { AmqpConsumer, AmqpMessage } from './api.js';

export const replyToQueue = 'amq.rabbitmq.reply-to';
const replyNamePrefix = `${replyToQueue}.`;
const tokenBytes = 18;

export class DirectReplies {
  private readonly consumers = new Map<string, AmqpConsumer>();
  private readonly names = new Map<AmqpConsumer, string>();

  /** A name for the consumer's replies. */
  register(consumer: AmqpConsumer): string {
    const name = `${replyNamePrefix}${randomBytes(tokenBytes).toString('base64url')}`;
    this.consumers.set(name, consumer);
    this.names.set(consumer, name);
    return name;
  }

  unregister(consumer: AmqpConsumer): void {
    const name = this.names.get(consumer);
    if (name === undefined) return;
    this.names.delete(consumer);
    this.consumers.delete(name);
  }

  /** Whether `name` is the pseudo-queue or one of its consumers' names (a passive declare answers for them). */
  exists(name: string): boolean {
    return name === replyToQueue || this.consumers.has(name);
  }

  /** A publish to the default exchange whose routing key is a reply name: never routed to a queue. */
  static isReply(exchange: string, routingKey: string): boolean {
    return exchange === '' && routingKey.startsWith(replyNamePrefix);
  }

  /** Hands the reply to its consumer; false when there is none able to take it. */
  deliver(message: AmqpMessage): boolean {
    const consumer = this.consumers.get(message.routingKey);
    if (consumer === undefined || !consumer.canAccept()) return false;
    consumer.deliver({ queue: replyToQueue, seq: 0, message, redelivered: false });
    return true;
  }
}
