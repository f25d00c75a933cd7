/**
 * queue.* methods. An empty queue name means the channel's last declared
 * queue (spec, "queue-name" domain), as RabbitMQ implements it.
 */
import type { AmqpChannel } from '../channel.js';
import { booleanOf, integerOf, stringOf, type AmqpMethodNamed, type FieldTable } from '../codec/index.js';

export function handleQueueDeclare(channel: AmqpChannel, method: AmqpMethodNamed<'queue.declare'>): void {
  const passiveName = method.passive ? channel.queueNameOf(method.queue) : method.queue;
  const result = channel.core.declareQueue(passiveName, {
    passive: method.passive, durable: method.durable, exclusive: method.exclusive, autoDelete: method.autoDelete,
    arguments: queueArgumentsOf(method.arguments), owner: channel.host.owner,
  });
  channel.lastQueueName = result.queue;
  channel.reply(result.durable, method.noWait, {
    name: 'queue.declare-ok', queue: result.queue, messageCount: result.messageCount, consumerCount: result.consumerCount,
  });
}

/**
 * x-arguments as the core reads them: a value of any integer field type as a number (RabbitMQ
 * accepts x-max-length as a byte, a long…), a string as text, a boolean as a boolean; any other
 * field stays tagged, so the core's refusal can name its type.
 */
function queueArgumentsOf(table: FieldTable): Record<string, unknown> {
  const plain: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(table)) {
    Object.defineProperty(plain, name, { value: integerOf(field) ?? stringOf(field) ?? booleanOf(field) ?? field, enumerable: true, writable: true, configurable: true });
  }
  return plain;
}

export function handleQueueBind(channel: AmqpChannel, method: AmqpMethodNamed<'queue.bind'>): void {
  const queue = channel.queueNameOf(method.queue);
  // Spec: an empty routing key with an empty queue name binds with the queue's name.
  const routingKey = method.queue === '' && method.routingKey === '' ? queue : method.routingKey;
  const durable = channel.core.bindQueue(queue, method.exchange, routingKey, channel.host.owner, method.arguments);
  channel.reply(durable, method.noWait, { name: 'queue.bind-ok' });
}

export function handleQueueUnbind(channel: AmqpChannel, method: AmqpMethodNamed<'queue.unbind'>): void {
  const queue = channel.queueNameOf(method.queue);
  const durable = channel.core.unbindQueue(queue, method.exchange, method.routingKey, channel.host.owner, method.arguments);
  channel.reply(durable, false, { name: 'queue.unbind-ok' });
}

export function handleQueuePurge(channel: AmqpChannel, method: AmqpMethodNamed<'queue.purge'>): void {
  const result = channel.core.purgeQueue(channel.queueNameOf(method.queue), channel.host.owner);
  channel.reply(result.durable, method.noWait, { name: 'queue.purge-ok', messageCount: result.messageCount });
}

export function handleQueueDelete(channel: AmqpChannel, method: AmqpMethodNamed<'queue.delete'>): void {
  const result = channel.core.deleteQueue(channel.queueNameOf(method.queue), {
    ifUnused: method.ifUnused, ifEmpty: method.ifEmpty, owner: channel.host.owner,
  });
  channel.reply(result.durable, method.noWait, { name: 'queue.delete-ok', messageCount: result.messageCount });
}
