/**
 * Messages through the management API, as RabbitMQ's does it:
 *
 * - POST /api/exchanges/{vhost}/{name}/publish: {routing_key, payload,
 *   payload_encoding: "string" | "base64", properties} → {"routed": bool}.
 *   delivery_mode 2 makes it persistent, exactly as a client's basic.publish.
 * - POST /api/queues/{vhost}/{name}/get: {count, ackmode, encoding: "auto" |
 *   "base64", truncate} → an array of messages. Like RabbitMQ, it takes
 *   `count` distinct messages with manual ack and then settles them all:
 *   ack_requeue_true / reject_requeue_true put them back (redelivered, at
 *   their place: browsing), ack_requeue_false / reject_requeue_false remove
 *   them (the ack is a record, as a consumer's would be).
 *
 * AMQP properties travel as RabbitMQ writes them in JSON: snake_case names,
 * headers as a plain object.
 */
import type { AmqpCore, QueueDelivery } from '../../core/api.js';
import { decodeProperties, encodeProperties, toFieldTable, type BasicProperties, type PlainFieldValue } from '../../protocols/amqp/codec/index.js';
import { plainTableOf } from '../../protocols/amqp/field-table-json.js';
import { badRequest } from '../http-error.js';
import { integerField, objectField, refuseUnknownFields, stringField, type JsonObject } from './request-body.js';

/** The core's owner name for what the API does: never the owner of a client's exclusive queue. */
export const managementOwner = 'management-api';
/** RabbitMQ's bound is the queue; a browser asking for a million messages must not build one answer. */
export const getCountMax = 10_000;

const ackModes = {
  ack_requeue_true: 'requeue',
  reject_requeue_true: 'requeue',
  ack_requeue_false: 'ack',
  reject_requeue_false: 'reject',
} as const;
type AckMode = keyof typeof ackModes;

/** RabbitMQ's JSON property names ↔ Cairn's codec names, in wire order. */
const propertyNames = [
  ['content_type', 'contentType', 'string'],
  ['content_encoding', 'contentEncoding', 'string'],
  ['headers', 'headers', 'table'],
  ['delivery_mode', 'deliveryMode', 'octet'],
  ['priority', 'priority', 'octet'],
  ['correlation_id', 'correlationId', 'string'],
  ['reply_to', 'replyTo', 'string'],
  ['expiration', 'expiration', 'string'],
  ['message_id', 'messageId', 'string'],
  ['timestamp', 'timestamp', 'timestamp'],
  ['type', 'type', 'string'],
  ['user_id', 'userId', 'string'],
  ['app_id', 'appId', 'string'],
  ['cluster_id', 'clusterId', 'string'],
] as const;

export function propertiesFromJson(json: JsonObject): { raw: Buffer; persistent: boolean } {
  refuseUnknownFields(json, propertyNames.map(([name]) => name), 'properties');
  const properties: Record<string, unknown> = {};
  for (const [jsonName, codecName, kind] of propertyNames) {
    const value = json[jsonName];
    if (value === undefined || value === null) continue;
    if (kind === 'string') properties[codecName] = stringField(json, jsonName);
    else if (kind === 'octet') properties[codecName] = integerField(json, jsonName, undefined, { min: 0, max: 255 });
    else if (kind === 'timestamp') properties[codecName] = integerField(json, jsonName, undefined, { min: 0, max: Number.MAX_SAFE_INTEGER });
    else properties[codecName] = toFieldTable(objectField(json, jsonName) as Record<string, PlainFieldValue>);
  }
  try {
    return { raw: encodeProperties(properties as BasicProperties), persistent: properties['deliveryMode'] === 2 };
  } catch (error: unknown) {
    throw badRequest(`properties cannot be encoded: ${error instanceof Error ? error.message : String(error)}`);
  }
}

export function propertiesJson(raw: Uint8Array): Record<string, unknown> {
  const decoded = decodeProperties(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)) as Record<string, unknown>;
  const json: Record<string, unknown> = {};
  for (const [jsonName, codecName, kind] of propertyNames) {
    const value = decoded[codecName];
    if (value === undefined) continue;
    json[jsonName] = kind === 'table' ? plainTableOf(value as Parameters<typeof plainTableOf>[0]) : value;
  }
  return json;
}

export function payloadFromJson(body: JsonObject): Buffer {
  const payload = stringField(body, 'payload');
  const encoding = stringField(body, 'payload_encoding', 'string');
  if (encoding === 'string') return Buffer.from(payload, 'utf8');
  if (encoding === 'base64') {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(payload) || payload.length % 4 === 1) throw badRequest('payload is not valid base64');
    return Buffer.from(payload, 'base64');
  }
  throw badRequest(`payload_encoding must be 'string' or 'base64', got '${encoding}'`);
}

export function publishFromJson(core: AmqpCore, exchange: string, body: JsonObject): ReturnType<AmqpCore['publish']> {
  refuseUnknownFields(body, ['routing_key', 'payload', 'payload_encoding', 'properties', 'vhost', 'name', 'exchange'], 'a publish');
  const routingKey = stringField(body, 'routing_key');
  if (Buffer.byteLength(routingKey) > 255) throw badRequest('routing_key is longer than 255 bytes (an AMQP short string)');
  const payload = payloadFromJson(body);
  const { raw, persistent } = propertiesFromJson(objectField(body, 'properties'));
  return core.publish({ exchange, routingKey, body: payload, properties: raw }, { persistent, from: managementOwner });
}

export interface GetRequest {
  readonly count: number;
  readonly ackMode: AckMode;
  readonly encoding: 'auto' | 'base64';
  readonly truncate: number | undefined;
}

export function getRequestFromJson(body: JsonObject): GetRequest {
  refuseUnknownFields(body, ['count', 'ackmode', 'encoding', 'truncate', 'requeue', 'vhost', 'name', 'queue', 'payload_file'], 'a get');
  const ackMode = stringField(body, 'ackmode');
  if (!(ackMode in ackModes)) throw badRequest(`ackmode must be one of ${Object.keys(ackModes).join(', ')}, got '${ackMode}'`);
  const encoding = stringField(body, 'encoding', 'auto');
  if (encoding !== 'auto' && encoding !== 'base64') throw badRequest(`encoding must be 'auto' or 'base64', got '${encoding}'`);
  const truncate = body['truncate'] === undefined || body['truncate'] === null ? undefined : integerField(body, 'truncate', undefined, { min: 0, max: Number.MAX_SAFE_INTEGER });
  return { count: integerField(body, 'count', 1, { min: 1, max: getCountMax }), ackMode: ackMode as AckMode, encoding, truncate };
}

/** Take up to `count` messages with manual ack, describe them, then settle them all as the ackmode says. */
export function getMessages(core: AmqpCore, queue: string, request: GetRequest): Array<Record<string, unknown>> {
  const taken: Array<{ delivery: QueueDelivery; remaining: number }> = [];
  try {
    while (taken.length < request.count) {
      const { delivery, messageCount } = core.get(queue, { noAck: false, owner: managementOwner });
      if (delivery === undefined) break;
      taken.push({ delivery, remaining: messageCount });
    }
  } finally {
    // Even if describing failed half way, nothing stays unacknowledged by nobody.
    const outcome = ackModes[request.ackMode];
    for (const { delivery } of taken) core.settle(delivery, outcome);
  }
  return taken.map(({ delivery, remaining }) => messageJson(delivery, remaining, request));
}

function messageJson(delivery: QueueDelivery, remaining: number, request: GetRequest): Record<string, unknown> {
  const { message } = delivery;
  const body = Buffer.from(message.body.buffer, message.body.byteOffset, message.body.byteLength);
  const shown = request.truncate !== undefined && body.length > request.truncate ? body.subarray(0, request.truncate) : body;
  const text = request.encoding === 'auto' ? utf8OrUndefined(shown) : undefined;
  return {
    payload_bytes: body.length, redelivered: delivery.redelivered, exchange: message.exchange, routing_key: message.routingKey,
    message_count: remaining, properties: propertiesJson(message.properties),
    payload: text ?? shown.toString('base64'), payload_encoding: text === undefined ? 'base64' : 'string',
  };
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function utf8OrUndefined(bytes: Buffer): string | undefined {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return undefined;
  }
}
