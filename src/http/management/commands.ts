/**
 * The management API's changes: declare and delete exchanges and queues, bind
 * and unbind, purge, publish, get. Each is an ordinary command of the broker
 * core (AmqpCore), exactly as a client's channel would send it, so what must
 * survive a restart is a record in the log like any other; the answer waits
 * until those records are durable.
 *
 * One place (`brokerCall`) turns the core's BrokerErrors into HTTP answers:
 * 404 stays 404, 403 stays 403, and a refused precondition, a locked queue or
 * an unsupported feature is a 400 whose reason is the core's own sentence
 * (without the AMQP constant in front, as RabbitMQ's API words it).
 */
import { BrokerError, type Durable } from '../../core/api.js';
import { queueDestination } from '../../core/amqp-exchange.js';
import type { Broker } from '../../core/broker.js';
import { badRequest, HttpError, notFound } from '../http-error.js';
import { checkParameters } from './listing.js';
import { getMessages, getRequestFromJson, managementOwner, publishFromJson } from './messages.js';
import { booleanField, objectField, refuseUnknownFields, stringField, type JsonObject } from './request-body.js';
import { bindingJson, propertiesKeyOf, requireExchange, requireQueue, routingKeyOf } from './resources.js';

export type Outcome = 'created' | 'updated' | 'deleted';

/** Run a core command; map its BrokerError; wait for its records to be durable. */
async function brokerCall<T extends { durable: Durable } | Durable>(call: () => T): Promise<T> {
  let result: T;
  try {
    result = call();
  } catch (error: unknown) {
    if (!(error instanceof BrokerError)) throw error;
    const reason = error.message.replace(/^[A-Z_]+ - /, '');
    if (error.code === 404) throw notFound(reason);
    if (error.code === 403) throw new HttpError(403, 'access_refused', reason);
    throw badRequest(reason);
  }
  const durable = result instanceof Promise ? result : (result as { durable: Durable } | undefined)?.durable;
  try {
    await durable;
  } catch {
    throw new HttpError(503, 'log_failed', 'the change could not be made durable: the log failed; the broker must be restarted into recovery');
  }
  return result;
}

/** The core refuses every argument it does not implement (540), which answers 400 with its reason. */
function argumentsOf(body: JsonObject): Record<string, unknown> {
  return { ...objectField(body, 'arguments') };
}

export async function declareExchange(broker: Broker, name: string, body: JsonObject): Promise<Outcome> {
  refuseUnknownFields(body, ['type', 'durable', 'auto_delete', 'internal', 'arguments', 'name', 'vhost', 'user_who_performed_action'], 'an exchange declaration');
  if (name === '') throw new HttpError(403, 'access_refused', 'the default exchange cannot be declared');
  const existed = broker.exchanges.has(name);
  await brokerCall(() => broker.amqp.declareExchange(name, stringField(body, 'type', 'direct'), {
    passive: false, durable: booleanField(body, 'durable', false), autoDelete: booleanField(body, 'auto_delete', false),
    internal: booleanField(body, 'internal', false), arguments: argumentsOf(body),
  }));
  return existed ? 'updated' : 'created';
}

export async function deleteExchange(broker: Broker, name: string, url: URL): Promise<void> {
  checkParameters(url, ['if-unused']);
  await brokerCall(() => broker.amqp.deleteExchange(name, { ifUnused: url.searchParams.get('if-unused') === 'true' }));
}

export async function declareQueue(broker: Broker, name: string, body: JsonObject): Promise<Outcome> {
  refuseUnknownFields(body, ['durable', 'auto_delete', 'arguments', 'node', 'name', 'vhost', 'user_who_performed_action'], 'a queue declaration');
  if (name === '') throw badRequest('a queue declared through the API needs a name');
  const existed = broker.queues.has(name);
  await brokerCall(() => broker.amqp.declareQueue(name, {
    passive: false, durable: booleanField(body, 'durable', false), exclusive: false, autoDelete: booleanField(body, 'auto_delete', false),
    arguments: argumentsOf(body), owner: managementOwner,
  }));
  return existed ? 'updated' : 'created';
}

export async function deleteQueue(broker: Broker, name: string, url: URL): Promise<void> {
  checkParameters(url, ['if-unused', 'if-empty']);
  requireQueue(broker, name);
  const { searchParams } = url;
  await brokerCall(() => broker.amqp.deleteQueue(name, { ifUnused: searchParams.get('if-unused') === 'true', ifEmpty: searchParams.get('if-empty') === 'true', owner: managementOwner }));
}

export async function purgeQueue(broker: Broker, name: string, url: URL): Promise<void> {
  checkParameters(url, []);
  await brokerCall(() => broker.amqp.purgeQueue(name, managementOwner));
}

/** POST /api/bindings/{vhost}/e/{exchange}/q/{queue}: answers the new binding's path (Location). */
export async function bind(broker: Broker, exchange: string, queue: string, body: JsonObject): Promise<string> {
  refuseUnknownFields(body, ['routing_key', 'arguments', 'source', 'destination', 'destination_type', 'vhost', 'properties_key'], 'a binding');
  const routingKey = stringField(body, 'routing_key', '');
  const args = objectField(body, 'arguments');
  if (Object.keys(args).length > 0) throw badRequest(`binding arguments (${Object.keys(args).join(', ')}) are not supported by Cairn: no headers exchange`);
  await brokerCall(() => broker.amqp.bindQueue(queue, exchange, routingKey, managementOwner));
  return `/api/bindings/%2F/e/${encodeURIComponent(exchange)}/q/${encodeURIComponent(queue)}/${encodeURIComponent(propertiesKeyOf(routingKey))}`;
}

export function findBinding(broker: Broker, exchange: string, queue: string, propertiesKey: string): Record<string, unknown> {
  const routingKey = routingKeyOf(propertiesKey);
  const found = requireExchange(broker, exchange).bindings().some((binding) => binding.destination === queueDestination(queue) && binding.routingKey === routingKey);
  if (!found) throw notFound(`no binding from exchange '${exchange}' to queue '${queue}' with properties key '${propertiesKey}'`);
  return bindingJson(exchange, queue, routingKey);
}

export async function unbind(broker: Broker, exchange: string, queue: string, propertiesKey: string): Promise<void> {
  findBinding(broker, exchange, queue, propertiesKey);
  await brokerCall(() => broker.amqp.unbindQueue(queue, exchange, routingKeyOf(propertiesKey), managementOwner));
}

export async function publish(broker: Broker, exchange: string, body: JsonObject): Promise<{ routed: boolean }> {
  const { routed } = await brokerCall(() => publishFromJson(broker.amqp, exchange, body));
  return { routed };
}

export async function get(broker: Broker, queue: string, body: JsonObject): Promise<unknown[]> {
  const request = getRequestFromJson(body);
  let messages: unknown[] = [];
  await brokerCall(() => {
    messages = getMessages(broker.amqp, queue, request);
    return undefined;
  });
  // Removing ackmodes write ack records lazily; the answer waits until they are durable.
  if (request.ackMode.endsWith('_false')) await broker.flush();
  return messages;
}
