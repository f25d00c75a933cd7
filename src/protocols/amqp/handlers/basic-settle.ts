/**
 * How a client finishes a delivery: basic.ack (done), basic.reject and
 * basic.nack (requeue, or drop), basic.recover (everything unacked back to
 * the queue). The bookkeeping is the channel's (channel.settle).
 */
import type { AmqpChannel } from '../channel.js';
import { REPLY_CODE, type AmqpMethodNamed } from '../codec/index.js';
import { AmqpChannelError } from '../errors.js';

export function handleBasicAck(channel: AmqpChannel, method: AmqpMethodNamed<'basic.ack'>): void {
  channel.settle(method.deliveryTag, method.multiple, 'ack');
}

export function handleBasicNack(channel: AmqpChannel, method: AmqpMethodNamed<'basic.nack'>): void {
  channel.settle(method.deliveryTag, method.multiple, method.requeue ? 'requeue' : 'reject');
}

export function handleBasicReject(channel: AmqpChannel, method: AmqpMethodNamed<'basic.reject'>): void {
  channel.settle(method.deliveryTag, false, method.requeue ? 'requeue' : 'reject');
}

export function handleBasicRecover(channel: AmqpChannel, method: AmqpMethodNamed<'basic.recover'>): void {
  recover(method.requeue, channel);
  channel.reply(undefined, false, { name: 'basic.recover-ok' });
}

/** The deprecated asynchronous form: the same, without recover-ok. */
export function handleBasicRecoverAsync(channel: AmqpChannel, method: AmqpMethodNamed<'basic.recover-async'>): void {
  recover(method.requeue, channel);
}

function recover(requeue: boolean, channel: AmqpChannel): void {
  // Redelivering to the same consumer without requeueing is what RabbitMQ refuses too.
  if (!requeue) throw new AmqpChannelError(REPLY_CODE.NOT_IMPLEMENTED, 'basic.recover requeue=false is not supported by Cairn; use requeue=true');
  channel.recover();
}
