/**
 * MQTT 5 PUBLISH properties ⇄ AMQP 0-9-1 basic properties, for messages that
 * cross the bridge (amq.topic) either way. Nothing new is stored: an MQTT
 * publish keeps its properties in its msg record (`m`), an AMQP publish its
 * raw properties (`h`); each side's view of the other is made when the
 * message is handed over.
 *
 *   MQTT 5                        AMQP 0-9-1
 *   user properties               headers: one longstr per name, a field array of longstrs for a repeated name
 *   content type                  content_type
 *   correlation data              correlation_id when it is UTF-8 of at most 255 bytes;
 *                                 else header x-correlation-data (byte array)
 *   response topic                reply_to, '/' ⇄ '.' swapped as topics and routing keys are
 *   message expiry interval       expiration: the milliseconds from the publication to the expiry
 *   payload format indicator 1    header x-mqtt-payload-format-indicator = 1 (AMQP has no such property)
 *   QoS ≥ 1 / 0                   delivery_mode 2 / 1 (what AMQP → MQTT never sets: QoS is the subscription's)
 *
 * A content type or response topic longer than AMQP's 255-byte short string is
 * not carried. From AMQP, header values that are strings, numbers or booleans
 * become user properties (text), arrays of them repeated ones; tables and
 * byte arrays (x-death, say) are not carried. A 3.1.1 subscriber gets none of
 * this (its PUBLISH has no properties), but an `expiration` still expires the
 * message for it, as a Message Expiry Interval does.
 */
import { isUtf8 } from 'node:buffer';
import {
  decodeProperties, encodeProperties, type BasicProperties, type FieldTable, type FieldValue,
} from '../protocols/amqp/codec/index.js';
import type { MessageProperties, StoredMessage } from '../projections/state.js';
import { swapSeparators } from './mqtt-sessions.js';

const shortStringBytesMax = 255;
export const correlationDataHeader = 'x-correlation-data';
export const payloadFormatHeader = 'x-mqtt-payload-format-indicator';

/** delivery-mode only (flag bit 12): the properties of an MQTT message that has no MQTT 5 properties. */
const deliveryModeFlagOnly = 0x1000;

/** The AMQP properties an MQTT publish with MQTT 5 properties has for an AMQP consumer. */
export function amqpPropertiesOfMqtt(properties: MessageProperties, qos: number, publishedAt: number): Uint8Array {
  const amqp: { -readonly [K in keyof BasicProperties]: BasicProperties[K] } = { deliveryMode: qos >= 1 ? 2 : 1 };
  // No prototype: a user property may be called __proto__.
  const headers: Record<string, FieldValue> = Object.create(null) as Record<string, FieldValue>;
  for (const [name, value] of properties.userProperties ?? []) {
    const existing = headers[name];
    const text: FieldValue = { type: 'S', value };
    headers[name] = existing === undefined ? text : { type: 'A', value: existing.type === 'A' ? [...existing.value, text] : [existing, text] };
  }
  if (properties.payloadUtf8) headers[payloadFormatHeader] = { type: 'b', value: 1 };
  if (fitsShortString(properties.contentType)) amqp.contentType = properties.contentType;
  const correlation = properties.correlationData;
  if (correlation !== undefined) {
    if (correlation.byteLength <= shortStringBytesMax && isUtf8(correlation)) amqp.correlationId = Buffer.from(correlation).toString('utf8');
    else headers[correlationDataHeader] = { type: 'x', value: Buffer.from(correlation) };
  }
  if (fitsShortString(properties.responseTopic)) amqp.replyTo = swapSeparators(properties.responseTopic);
  if (properties.expiresAt !== undefined) amqp.expiration = String(Math.max(0, properties.expiresAt - publishedAt));
  if (Object.keys(headers).length > 0) amqp.headers = headers;
  return encodeProperties(amqp);
}

const derived = new WeakMap<StoredMessage, MessageProperties | null>();

/**
 * The MQTT 5 properties a message has for an MQTT subscriber: its own (an MQTT
 * publish), or those its AMQP properties map to (kept per message object, so
 * N subscribers decode once).
 */
export function mqttPropertiesOf(message: StoredMessage): MessageProperties | undefined {
  if (message.mqttProperties !== undefined || message.properties === undefined) return message.mqttProperties;
  const raw = message.properties;
  if (raw.length >= 2 && ((raw[0]! << 8) | raw[1]!) === deliveryModeFlagOnly) return undefined;
  let properties = derived.get(message);
  if (properties === undefined) {
    properties = mqttPropertiesOfAmqp(raw, message.timestamp) ?? null;
    derived.set(message, properties);
  }
  return properties ?? undefined;
}

function mqttPropertiesOfAmqp(raw: Uint8Array, publishedAt: number): MessageProperties | undefined {
  const amqp = decodeProperties(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength));
  const properties: { -readonly [K in keyof MessageProperties]: MessageProperties[K] } = {};
  const headers = amqp.headers ?? {};
  if (isOne(headers[payloadFormatHeader])) properties.payloadUtf8 = true;
  const expirationMs = amqp.expiration !== undefined && /^[0-9]{1,15}$/.test(amqp.expiration) ? Number(amqp.expiration) : undefined;
  if (expirationMs !== undefined) properties.expiresAt = publishedAt + expirationMs;
  if (amqp.contentType !== undefined) properties.contentType = amqp.contentType;
  if (amqp.replyTo !== undefined) properties.responseTopic = swapSeparators(amqp.replyTo);
  const correlationBytes = bytesOf(headers[correlationDataHeader]);
  if (correlationBytes !== undefined) properties.correlationData = correlationBytes;
  else if (amqp.correlationId !== undefined) properties.correlationData = Buffer.from(amqp.correlationId, 'utf8');
  const userProperties = userPropertiesOf(headers);
  if (userProperties.length > 0) properties.userProperties = userProperties;
  return Object.keys(properties).length > 0 ? properties : undefined;
}

function userPropertiesOf(headers: FieldTable): Array<readonly [string, string]> {
  const pairs: Array<readonly [string, string]> = [];
  for (const [name, value] of Object.entries(headers)) {
    if (name === payloadFormatHeader || name === correlationDataHeader) continue;
    for (const one of value.type === 'A' ? value.value : [value]) {
      const text = scalarText(one);
      if (text !== undefined) pairs.push([name, text]);
    }
  }
  return pairs;
}

/** A header value as user-property text; undefined for tables, byte arrays, arrays and void. */
function scalarText(value: FieldValue): string | undefined {
  switch (value.type) {
    case 'S': return typeof value.value === 'string' ? value.value : value.value.toString('utf8');
    case 't': case 'b': case 'B': case 's': case 'u': case 'I': case 'i': case 'f': case 'd': return String(value.value);
    case 'l': case 'T': return value.value.toString();
    case 'D': return String(value.value.digits / 10 ** value.value.scale);
    default: return undefined;
  }
}

function bytesOf(value: FieldValue | undefined): Uint8Array | undefined {
  if (value?.type === 'x') return Buffer.from(value.value);
  if (value?.type === 'S') return Buffer.from(value.value);
  return undefined;
}

function isOne(value: FieldValue | undefined): boolean {
  return value !== undefined && scalarText(value) === '1';
}

function fitsShortString(text: string | undefined): text is string {
  return text !== undefined && Buffer.byteLength(text, 'utf8') <= shortStringBytesMax;
}
