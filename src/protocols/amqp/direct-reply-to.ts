/**
 * The publishing side of direct reply-to (core/direct-reply-to.ts): a
 * request published with reply_to = `amq.rabbitmq.reply-to` leaves with
 * reply_to = the name of this channel's reply consumer, as RabbitMQ rewrites
 * it; without such a consumer on the channel the publish is 406
 * PRECONDITION_FAILED, as in RabbitMQ. Only the reply-to flag bit is looked
 * at for every other publish: the properties are decoded when it is set.
 */
import { replyToQueue } from '../../core/direct-reply-to.js';
import { decodeProperties, encodeProperties, REPLY_CODE } from './codec/index.js';
import { AmqpChannelError } from './errors.js';

/** reply-to is property 6 of basic (bit 9 of the flags word, counting from 15 down). */
const replyToFlagMask = 0x0200;

/** The properties to publish: `properties` itself unless reply_to names the direct reply-to pseudo-queue. */
export function withDirectReplyTo(properties: Buffer, replyQueueName: string | undefined): Buffer {
  if (properties.length < 2 || (properties.readUInt16BE(0) & replyToFlagMask) === 0) return properties;
  const decoded = decodeProperties(properties);
  if (decoded.replyTo !== replyToQueue) return properties;
  if (replyQueueName === undefined) throw new AmqpChannelError(REPLY_CODE.PRECONDITION_FAILED, 'fast reply consumer does not exist');
  return encodeProperties({ ...decoded, replyTo: replyQueueName });
}
