/**
 * Projection of durable AMQP topology: exchanges, queues and the bindings
 * between them. Deleting a queue or an exchange removes its bindings, as in
 * AMQP; deleting a queue also discards the messages it held. Pure.
 */
import type { BindBody, ExchangeBody, QueueBody } from './records.js';
import { bindingKey, newQueue, type BrokerState } from './state.js';

export function applyExchange(state: BrokerState, body: ExchangeBody): void {
  if (body.op === 'declare') {
    if (!state.exchanges.has(body.n)) {
      state.exchanges.set(body.n, { name: body.n, type: body.type ?? 'direct', autoDelete: body.autoDelete ?? false });
    }
    return;
  }
  state.exchanges.delete(body.n);
  for (const [key, binding] of state.bindings) if (binding.exchange === body.n) state.bindings.delete(key);
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
  const key = bindingKey(body.x, body.q, body.k);
  if (body.op === 'bind') state.bindings.set(key, { exchange: body.x, queue: body.q, routingKey: body.k });
  else state.bindings.delete(key);
}
