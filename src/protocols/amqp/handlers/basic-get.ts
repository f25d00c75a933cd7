/** basic.get: the head of a queue, or get-empty. */
import type { AmqpChannel } from '../channel.js';
import type { AmqpMethodNamed } from '../codec/index.js';

export function handleBasicGet(channel: AmqpChannel, method: AmqpMethodNamed<'basic.get'>): void {
  const { delivery, messageCount } = channel.core.get(channel.queueNameOf(method.queue), { noAck: method.noAck, owner: channel.host.owner });
  if (delivery === undefined) channel.reply(undefined, false, { name: 'basic.get-empty' });
  else channel.deliverGot(delivery, method.noAck, messageCount);
}
