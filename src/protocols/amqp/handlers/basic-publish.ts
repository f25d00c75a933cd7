/**
 * basic.publish: the method starts content assembly (channel.ts); once the
 * body is complete the message goes to the core here.
 *
 * Order on the wire for one publish, as RabbitMQ and pika expect:
 * basic.return (mandatory and unroutable) first, then the confirm, and the
 * confirm only after the message is durable (publisher-confirms.ts). A full
 * queue with x-overflow = reject-publish makes the confirm a nack; the
 * message is not returned, even when mandatory (it was routed), as RabbitMQ.
 */
import type { AmqpChannel } from '../channel.js';
import { DELIVERY_MODE, deliveryModeOf, REPLY_CODE, type AmqpMethodNamed } from '../codec/index.js';
import type { AssembledMessage } from '../content-assembler.js';
import { AmqpChannelError } from '../errors.js';
import { withDirectReplyTo } from '../direct-reply-to.js';

export function handleBasicPublish(channel: AmqpChannel, method: AmqpMethodNamed<'basic.publish'>): void {
  if (method.immediate) {
    // RabbitMQ dropped immediate in 3.0 with the same answer.
    throw new AmqpChannelError(REPLY_CODE.NOT_IMPLEMENTED, 'immediate=true is not supported by Cairn; use mandatory, consumer acks or TTL-free queues');
  }
  channel.host.publishing?.();
  channel.assembler.start(method);
}

export function publishAssembled(channel: AmqpChannel, message: AssembledMessage): void {
  const { method, body } = message;
  const properties = withDirectReplyTo(message.properties, channel.replyQueueName);
  const transaction = channel.transaction;
  if (transaction !== undefined) {
    // Checked now (404, 403 internal, 406 expiration), routed at tx.commit (transaction.ts).
    const buffered = { exchange: method.exchange, routingKey: method.routingKey, body, properties };
    channel.core.checkPublish(buffered);
    transaction.publish(buffered, deliveryModeOf(properties) === DELIVERY_MODE.PERSISTENT, method.mandatory);
    return;
  }
  const result = channel.core.publish(
    { exchange: method.exchange, routingKey: method.routingKey, body, properties },
    { persistent: deliveryModeOf(properties) === DELIVERY_MODE.PERSISTENT, from: channel.host.owner },
  );
  if (!result.routed && method.mandatory) {
    channel.returnMessage(REPLY_CODE.NO_ROUTE, 'NO_ROUTE', method.exchange, method.routingKey, properties, body);
  }
  const confirms = channel.confirms;
  if (confirms !== undefined) {
    // A queue that refused it (reject-publish) makes it a nack; the other queues still have it, durable or not.
    confirms.track(result.durable, result.rejected);
    if (result.rejected) result.durable?.catch(() => undefined);
  } else {
    // Nobody waits for this Durable; a failed log shows up on the next command that does.
    result.durable?.catch((error: unknown) => channel.host.logger.debug({ err: error }, 'AMQP unconfirmed publish not made durable'));
  }
}
