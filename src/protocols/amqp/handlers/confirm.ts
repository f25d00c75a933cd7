/** confirm.select: publisher confirms for the rest of the channel's life (RabbitMQ extension). */
import type { AmqpChannel } from '../channel.js';
import { REPLY_CODE, type AmqpMethodNamed } from '../codec/index.js';
import { AmqpChannelError } from '../errors.js';

export function handleConfirmSelect(channel: AmqpChannel, method: AmqpMethodNamed<'confirm.select'>): void {
  // RabbitMQ: confirms and transactions exclude each other on a channel.
  if (channel.transaction !== undefined) throw new AmqpChannelError(REPLY_CODE.PRECONDITION_FAILED, 'cannot switch from tx to confirm mode');
  channel.enableConfirms();
  channel.reply(undefined, method.noWait, { name: 'confirm.select-ok' });
}
