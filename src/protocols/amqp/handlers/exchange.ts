/**
 * exchange.* methods. Declarations and deletions go to the core, which
 * decides what is durable; the *-ok follows the Durable, in request order.
 * Exchange-to-exchange bindings are not implemented and say so (540).
 */
import type { AmqpChannel } from '../channel.js';
import { REPLY_CODE, type AmqpMethodNamed } from '../codec/index.js';
import { AmqpChannelError } from '../errors.js';

export function handleExchangeDeclare(channel: AmqpChannel, method: AmqpMethodNamed<'exchange.declare'>): void {
  const durable = channel.core.declareExchange(method.exchange, method.type, {
    passive: method.passive, durable: method.durable, autoDelete: method.autoDelete, internal: method.internal,
    arguments: method.arguments,
  });
  channel.reply(durable, method.noWait, { name: 'exchange.declare-ok' });
}

export function handleExchangeDelete(channel: AmqpChannel, method: AmqpMethodNamed<'exchange.delete'>): void {
  const durable = channel.core.deleteExchange(method.exchange, { ifUnused: method.ifUnused });
  channel.reply(durable, method.noWait, { name: 'exchange.delete-ok' });
}

export function handleExchangeBind(_channel: AmqpChannel, _method: AmqpMethodNamed<'exchange.bind' | 'exchange.unbind'>): void {
  throw new AmqpChannelError(REPLY_CODE.NOT_IMPLEMENTED, 'exchange-to-exchange bindings are not supported by Cairn (capability exchange_exchange_bindings=false); bind queues to exchanges with queue.bind');
}
