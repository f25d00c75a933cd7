/**
 * Projection of durable AMQP topology: exchanges, queues and the bindings
 * between them (exchange to queue, and exchange to exchange). Deleting a
 * queue or an exchange removes its bindings, as source and as destination,
 * as in AMQP; deleting a queue also discards the messages it held. Pure.
 */
import type { BindBody, ExchangeBody, QueueBody } from './records.js';
import { bindingKey, newQueue, type BindingState, type BrokerState } from './state.js';

export function applyExchange(state: BrokerState, body: ExchangeBody): void {
  if (body.op === 'declare') {
    if (!state.exchanges.has(body.n)) {
      state.exchanges.set(body.n, {
        name: body.n, type: body.type ?? 'direct', autoDelete: body.autoDelete ?? false,
        ...(body.internal === true ? { internal: true } : {}), ...(body.ae === undefined ? {} : { alternateExchange: body.ae }),
      });
    }
    return;
  }
  state.exchanges.delete(body.n);
  for (const [key, binding] of state.bindings) if (binding.exchange === body.n || binding.toExchange === body.n) state.bindings.delete(key);
}

export function applyQueue(state: BrokerState, body: QueueBody): void {
  if (body.op === 'declare') {
    if (!state.queues.has(body.n)) state.queues.set(body.n, newQueue(body.n, body.autoDelete ?? false, body.a));
    return;
  }
  state.queues.delete(body.n);
  for (const [key, binding] of state.bindings) if (binding.queue === body.n) state.bindings.delete(key);
}

export function applyBind(state: BrokerState, body: BindBody): void {
  const binding: BindingState = {
    exchange: body.x, routingKey: body.k,
    ...(body.e === undefined ? { queue: body.q ?? '' } : { toExchange: body.e }),
    ...(body.a === undefined ? {} : { arguments: body.a }),
  };
  const key = bindingKey(binding);
  if (body.op === 'bind') state.bindings.set(key, binding);
  else state.bindings.delete(key);
}
