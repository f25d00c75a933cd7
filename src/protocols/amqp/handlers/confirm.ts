/** confirm.select: publisher confirms for the rest of the channel's life (RabbitMQ extension). */
import type { AmqpChannel } from '../channel.js';
import type { AmqpMethodNamed } from '../codec/index.js';

export function handleConfirmSelect(channel: AmqpChannel, method: AmqpMethodNamed<'confirm.select'>): void {
  channel.enableConfirms();
  channel.reply(undefined, method.noWait, { name: 'confirm.select-ok' });
}
