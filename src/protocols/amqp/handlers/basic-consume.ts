/**
 * basic.qos, basic.consume and basic.cancel: who gets deliveries from a
 * queue, and how many each may hold unacknowledged.
 *
 * basic.qos follows RabbitMQ: global=false sets the prefetch of consumers
 * created afterwards on this channel; global=true limits all of the
 * channel's consumers together. prefetch-size is not implemented (540), as
 * in RabbitMQ.
 *
 * basic.consume takes one argument, x-priority (an integer of any integer
 * type, RabbitMQ's consumer priority: higher first, 0 by default); any other
 * is refused with 540 naming it.
 */
import { randomBytes } from 'node:crypto';
import type { AmqpChannel } from '../channel.js';
import { integerOf, REPLY_CODE, type AmqpMethodNamed, type FieldTable } from '../codec/index.js';
import { ChannelConsumer } from '../consumer.js';
import { replyToQueue } from '../../../core/direct-reply-to.js';
import { AmqpChannelError, AmqpConnectionError } from '../errors.js';

export function handleBasicQos(channel: AmqpChannel, method: AmqpMethodNamed<'basic.qos'>): void {
  if (method.prefetchSize !== 0) {
    throw new AmqpChannelError(REPLY_CODE.NOT_IMPLEMENTED, `prefetch_size=${method.prefetchSize}: only prefetch_count is supported by Cairn`);
  }
  if (method.global) channel.channelPrefetch = method.prefetchCount;
  else channel.consumerPrefetch = method.prefetchCount;
  channel.reply(undefined, false, { name: 'basic.qos-ok' });
  // A raised limit may let waiting messages through.
  channel.dispatchConsumers();
}

export function handleBasicConsume(channel: AmqpChannel, method: AmqpMethodNamed<'basic.consume'>): void {
  const queue = channel.queueNameOf(method.queue);
  const priority = consumerPriorityOf(method.arguments);
  const tag = method.consumerTag === '' ? `amq.ctag-${randomBytes(16).toString('base64url')}` : method.consumerTag;
  // RabbitMQ: reusing a tag on the channel is a connection error (530).
  if (channel.consumers.has(tag)) throw new AmqpConnectionError(REPLY_CODE.NOT_ALLOWED, `attempt to reuse consumer tag '${tag}'`);
  if (channel.consumers.size >= channel.host.limits.consumersPerChannelMax) {
    throw new AmqpChannelError(REPLY_CODE.PRECONDITION_FAILED, `channel ${channel.number} already has ${channel.consumers.size} consumers (consumersPerChannelMax)`);
  }
  const consumer = new ChannelConsumer(tag, queue, method.noAck, channel.consumerPrefetch, channel, priority);
  // Inactive until consume-ok is written: core.consume's own dispatch skips it.
  if (queue === replyToQueue) consumeReplies(channel, consumer);
  else channel.core.consume(queue, consumer, { exclusive: method.exclusive, owner: channel.host.owner });
  channel.consumers.set(tag, consumer);
  channel.reply(undefined, method.noWait, { name: 'basic.consume-ok', consumerTag: tag }, () => {
    if (channel.consumers.get(tag) !== consumer) return;
    consumer.active = true;
    channel.core.dispatch(queue);
  });
}

/** Direct reply-to (core/direct-reply-to.ts): one no-ack reply consumer per channel, as RabbitMQ allows. */
function consumeReplies(channel: AmqpChannel, consumer: ChannelConsumer): void {
  if (channel.replyQueueName !== undefined) throw new AmqpChannelError(REPLY_CODE.PRECONDITION_FAILED, 'reply consumer already set');
  channel.replyQueueName = channel.core.consumeReplies(consumer);
}

/** x-priority, checked as RabbitMQ checks it (406 for a value that is not an integer); other arguments are 540. */
function consumerPriorityOf(args: FieldTable): number {
  const unsupported = Object.keys(args).filter((name) => name !== 'x-priority');
  if (unsupported.length > 0) {
    throw new AmqpChannelError(REPLY_CODE.NOT_IMPLEMENTED, `basic.consume argument(s) ${unsupported.map((name) => `'${name}'`).join(', ')} not supported by Cairn (supported: x-priority)`);
  }
  const field = args['x-priority'];
  if (field === undefined) return 0;
  const priority = integerOf(field);
  if (priority === undefined) throw new AmqpChannelError(REPLY_CODE.PRECONDITION_FAILED, `invalid arg 'x-priority' for basic.consume: a field of type '${field.type}', an integer is required`);
  return priority;
}

/** Unknown tags get cancel-ok too (RabbitMQ): the consumer may have been cancelled by the broker meanwhile. */
export function handleBasicCancel(channel: AmqpChannel, method: AmqpMethodNamed<'basic.cancel'>): void {
  const consumer = channel.consumers.get(method.consumerTag);
  if (consumer !== undefined) {
    channel.consumers.delete(method.consumerTag);
    consumer.active = false;
    channel.core.cancel(consumer.queue, consumer);
    if (consumer.queue === replyToQueue) channel.replyQueueName = undefined;
  }
  channel.reply(undefined, method.noWait, { name: 'basic.cancel-ok', consumerTag: method.consumerTag });
}
