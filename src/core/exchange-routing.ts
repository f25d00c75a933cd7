/**
 * Where a message published to an exchange ends up: the queues reached by
 * following bindings from exchange to exchange, as RabbitMQ's
 * rabbit_exchange:route does.
 *
 * - Breadth first from the exchange published to; each exchange routes the
 *   message once (a loop of bindings is followed until it comes back to an
 *   exchange already seen), each queue gets it once however many paths reach it.
 * - An exchange that routes the message to no destination at all sends it to
 *   its alternate exchange, if that exists (and has not been seen).
 * - An exchange routes with the message's own routing key at every hop; the
 *   message's headers are decoded only if a headers exchange asks for them.
 *
 * `visited` lists the exchanges that routed it: the bridge to MQTT watches for
 * amq.topic among them.
 */
import { decodeProperties, type FieldTable } from '../protocols/amqp/codec/index.js';
import type { ExchangeRuntime } from './amqp-exchange.js';

export interface Routed {
  readonly queues: ReadonlySet<string>;
  readonly visited: ReadonlySet<string>;
}

export function routeThroughExchanges(
  exchanges: ReadonlyMap<string, ExchangeRuntime>, start: ExchangeRuntime, routingKey: string, properties: Uint8Array | undefined,
): Routed {
  const queues = new Set<string>();
  const visited = new Set<string>([start.name]);
  let headers: FieldTable | undefined | null = null;
  const headersOf = (): FieldTable | undefined => {
    if (headers === null) headers = properties === undefined ? undefined : decodeProperties(Buffer.from(properties.buffer, properties.byteOffset, properties.byteLength)).headers;
    return headers;
  };
  const work: ExchangeRuntime[] = [start];
  for (let index = 0; index < work.length; index++) {
    const exchange = work[index]!;
    let destinations = 0;
    for (const destination of exchange.route(routingKey, headersOf)) {
      destinations++;
      const name = destination.slice(2);
      if (destination.charCodeAt(0) === 0x71 /* q */) queues.add(name);
      else follow(exchanges, name, visited, work);
    }
    if (destinations === 0 && exchange.alternateExchange !== undefined) follow(exchanges, exchange.alternateExchange, visited, work);
  }
  return { queues, visited };
}

function follow(exchanges: ReadonlyMap<string, ExchangeRuntime>, name: string, visited: Set<string>, work: ExchangeRuntime[]): void {
  if (visited.has(name)) return;
  const next = exchanges.get(name);
  if (next === undefined) return;
  visited.add(name);
  work.push(next);
}
