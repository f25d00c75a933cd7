/**
 * exchange.* methods. Declarations, deletions and exchange-to-exchange
 * bindings (exchange.bind / unbind, RabbitMQ's extension) go to the core,
 * which decides what is durable; the *-ok follows the Durable, in request order.
 */
import type { AmqpChannel } from '../channel.js';
import { stringOf, type AmqpMethodNamed, type FieldTable } from '../codec/index.js';

export function handleExchangeDeclare(channel: AmqpChannel, method: AmqpMethodNamed<'exchange.declare'>): void {
  const durable = channel.core.declareExchange(method.exchange, method.type, {
    passive: method.passive, durable: method.durable, autoDelete: method.autoDelete, internal: method.internal,
    arguments: exchangeArgumentsOf(method.arguments),
  });
  channel.reply(durable, method.noWait, { name: 'exchange.declare-ok' });
}

/** Exchange arguments as the core reads them: a string as text, anything else still tagged (so a refusal can say it is not a string). */
function exchangeArgumentsOf(table: FieldTable): Record<string, unknown> {
  const plain: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(table)) {
    Object.defineProperty(plain, name, { value: stringOf(field) ?? field, enumerable: true, writable: true, configurable: true });
  }
  return plain;
}

export function handleExchangeDelete(channel: AmqpChannel, method: AmqpMethodNamed<'exchange.delete'>): void {
  const durable = channel.core.deleteExchange(method.exchange, { ifUnused: method.ifUnused });
  channel.reply(durable, method.noWait, { name: 'exchange.delete-ok' });
}

export function handleExchangeBind(channel: AmqpChannel, method: AmqpMethodNamed<'exchange.bind'>): void {
  const durable = channel.core.bindExchange(method.destination, method.source, method.routingKey, method.arguments);
  channel.reply(durable, method.noWait, { name: 'exchange.bind-ok' });
}

export function handleExchangeUnbind(channel: AmqpChannel, method: AmqpMethodNamed<'exchange.unbind'>): void {
  const durable = channel.core.unbindExchange(method.destination, method.source, method.routingKey, method.arguments);
  channel.reply(durable, method.noWait, { name: 'exchange.unbind-ok' });
}
